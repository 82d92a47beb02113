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

/** percent formats a 0-1 fraction, such as a confidence, as a whole percentage. */
export function percent(n: number | undefined | null): string {
  return typeof n === 'number' && Number.isFinite(n) ? `${Math.round(n * 100)}%` : '–'
}

/**
 * plural says how many of a thing there are, in the singular for exactly
 * one: plural(1, 'LLM call') is "1 LLM call", plural(3, 'LLM call') "3 LLM
 * calls". Irregular plurals are given.
 */
export function plural(n: number, one: string, many: string = one + 's'): string {
  return `${n.toLocaleString('en')} ${n === 1 ? one : many}`
}

/** usd formats a cost in US dollars: cents for a cent or more, else four decimals. */
export function usd(n: number | undefined | null): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '–'
  if (n === 0) return '$0'
  return n >= 0.01 ? `$${n.toFixed(2)}` : `$${n.toFixed(4)}`
}

/**
 * cost is a cost for people, as usd writes it, or "unpriced" when it is not
 * known: a model without a price, on a server that is not local.
 */
export function cost(n: number | undefined | null, priced?: boolean): string {
  if (priced === false || n === null) return 'unpriced'
  return usd(n ?? 0)
}

/**
 * liveStatus is the status a run's header shows: the record's when it is
 * final, else what the live progress says (a queued run whose stages have
 * begun is running; a run whose stream ended is succeeded or failed).
 */
export function liveStatus(recorded: string, phase: string, stage?: string): string {
  if (recorded === 'succeeded' || recorded === 'failed' || recorded === 'cancelled' || recorded === 'interrupted') return recorded
  if (phase === 'failed' || phase === 'succeeded' || phase === 'cancelled' || phase === 'interrupted') return phase
  if (phase === 'running' && stage && stage !== 'queued') return 'running'
  return recorded
}

/** duration says how long something took: "850 ms", "42 s", "3 min 5 s", "1 h 2 min". */
export function duration(ms: number | undefined | null): string {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return '–'
  if (ms < 1000) return `${Math.round(ms)} ms`
  const s = Math.round(ms / 1000)
  if (s < 60) return `${s} s`
  const m = Math.floor(s / 60)
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`
  const h = Math.floor(m / 60)
  return m % 60 ? `${h} h ${m % 60} min` : `${h} h`
}

/** tokens counts the tokens of a usage, in and out together: "12,345 tokens". */
export function tokens(u: { input_tokens?: number; output_tokens?: number } | undefined): string {
  return plural((u?.input_tokens ?? 0) + (u?.output_tokens ?? 0), 'token')
}
