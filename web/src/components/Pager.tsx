/** Pager moves between pages of a list by offset. */
export function Pager(props: {
  label: string
  offset: number
  limit: number
  count: number
  total?: number
  nextOffset: number | null
  onChange(offset: number): void
}) {
  const { offset, limit, count, total, nextOffset, onChange } = props
  // An empty list has no pages; past its end, Previous leads back.
  if (count === 0 && offset === 0) return null
  const first = count === 0 ? 0 : offset + 1
  const last = offset + count
  return (
    <nav className="pager" aria-label={props.label}>
      <button type="button" onClick={() => onChange(Math.max(0, offset - limit))} disabled={offset === 0}>
        Previous
      </button>
      <span aria-live="polite">
        {count === 0 ? 'none' : `${first}–${last}`}
        {total !== undefined ? ` of ${total}` : ''}
      </span>
      <button type="button" onClick={() => nextOffset !== null && onChange(nextOffset)} disabled={nextOffset === null}>
        Next
      </button>
    </nav>
  )
}
