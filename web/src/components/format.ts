/** score formats a 0-10 score with one decimal. */
export function score(n: number | undefined | null): string {
  return typeof n === 'number' && Number.isFinite(n) ? n.toFixed(1) : '–'
}

/** signed formats a difference with its sign. */
export function signed(n: number | undefined | null): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '–'
  return (n > 0 ? '+' : n < 0 ? '−' : '±') + Math.abs(n).toFixed(1)
}

/** when formats an RFC 3339 time in the reader's locale. */
export function when(t: string | null | undefined): string {
  if (!t) return ''
  const d = new Date(t)
  return Number.isNaN(d.getTime()) ? t : d.toLocaleString()
}

/** shortId is the first 8 characters of an id. */
export function shortId(id: string): string {
  return id.slice(0, 8)
}
