import type { Outcome, Parent, RunStatus } from '../api/types'
import { plural, shortId } from './format'

/** A mark of how a run came out, beside its status. */
export interface Mark {
  /** A few words for a list's row. */
  label: string
  /** ok, warn or plain. */
  tone: 'ok' | 'warn' | 'plain'
  /** What it means, in a sentence (a tooltip, the run's header). */
  title: string
}

type Outcomed = { status: RunStatus | string; outcome?: Outcome }

/**
 * outcomeMarks are the marks of how a run came out beyond its status, in
 * the order a reader needs them: the pipeline's verdict (a proposal that
 * did not pass quality control), a partial result, the replies repaired.
 */
export function outcomeMarks(r: Outcomed): Mark[] {
  const o = r.outcome ?? {}
  const out: Mark[] = []
  const v = o.verdict
  if (v) {
    out.push(
      v.passed
        ? { label: `passed ${v.check}`, tone: 'ok', title: `Passed ${v.check}${v.note ? `: ${v.note}` : ''}.` }
        : { label: `not passed ${v.check}`, tone: 'warn', title: `Did not pass ${v.check}${v.note ? ` (${v.note.replace(/^not passed /, '')})` : ''}.` },
    )
  }
  if (o.partial) out.push({ label: 'partial', tone: 'warn', title: 'It stopped before it finished; what it had finished is kept.' })
  if (o.repairs) {
    out.push({ label: `${plural(o.repairs, 'repair')}`, tone: 'plain', title: `${plural(o.repairs, 'reply', 'replies')} of the model needed a repair to be used (listed with the results).` })
  }
  return out
}

/**
 * statusTone is the colour a run's status is shown in: a run that
 * succeeded but did not pass its pipeline's check, or kept only part of
 * its result, is not shown as a plain success.
 */
export function statusTone(r: Outcomed): string {
  const o = r.outcome
  if (r.status === 'succeeded' && o?.verdict && !o.verdict.passed) return 'status-warn'
  if (r.status === 'cancelled' && o?.partial) return 'status-cancelled'
  return `status-${r.status}`
}

/** StatusWithOutcome shows a run's status and the marks of how it came out, for a list's row. */
export function StatusWithOutcome({ run, testId }: { run: Outcomed; testId?: string }) {
  const marks = outcomeMarks(run)
  return (
    <>
      <span className={`status ${statusTone(run)}`} data-testid={testId}>
        {run.status}
      </span>
      {marks.map((m) => (
        <span key={m.label} className={`badge outcome-${m.tone}`} title={m.title} data-testid="outcome-mark">
          {m.label}
        </span>
      ))}
    </>
  )
}

/** parentWords says what a run was made for, with where to see it. */
export function parentWords(p: Parent): { text: string; to: string } {
  switch (p.kind) {
    case 'eval':
      return { text: `A topic run of the eval ${p.title ? `“${p.title}”` : shortId(p.id)}`, to: `/runs/${encodeURIComponent(p.id)}` }
    case 'batch':
      return { text: `A row of the batch ${p.title ? `“${p.title}”` : shortId(p.id)}`, to: `/batches/${encodeURIComponent(p.id)}` }
    case 'chat':
      return { text: `An answer in the chat ${p.title ? `“${p.title}”` : shortId(p.id)}`, to: `/chat/${encodeURIComponent(p.id)}` }
  }
}

