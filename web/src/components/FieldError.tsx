/** errorId is the id of the one-line error shown under the control with id. */
export function errorId(id: string): string {
  return `${id}-error`
}

/**
 * FieldError shows one line of error under the control it belongs to; the
 * control points at it with aria-describedby.
 */
export function FieldError({ id, message }: { id: string; message?: string }) {
  if (!message) return null
  return (
    <p className="field-error" id={errorId(id)} role="alert">
      {message}
    </p>
  )
}
