/**
 * The progress of a run in the user's terms: stage names and messages as
 * pipelines and the queue write them carry identifiers (problem_formulation,
 * a worker's ID, a command-line flag); these functions put them in words.
 */

/** identifier matches a snake_case identifier: two words or more joined by "_". */
const identifier = /\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/g

/** words turns identifiers into words: "problem_formulation" is "problem formulation". */
export function words(s: string): string {
  return s.replace(identifier, (w) => w.replace(/_/g, ' '))
}

/** Stages that read better in other words. */
const stageNames: Record<string, string> = {
  queued: 'Waiting in the queue',
  re_evaluate: 'Re-evaluate',
  re_multidim: 'Re-evaluate on every dimension',
  multidim: 'Evaluate on every dimension',
  data_collection: 'Data collection',
  quality_control: 'Quality control',
  problem_formulation: 'Problem formulation',
}

/** stageLabel names a stage for people: "re_evaluate" is "Re-evaluate", "iteration 2" "Iteration 2". */
export function stageLabel(name: string): string {
  const known = stageNames[name]
  if (known) return known
  const s = words(name).replace(/^re /, 're-')
  return s.charAt(0).toUpperCase() + s.slice(1)
}

/** Why a run went back to the queue, as the queue says it ("requeued: …"). */
const requeues: [RegExp, string][] = [
  [/^requeued: its worker stopped$/, 'the server stopped while it worked on the run'],
  [/^requeued: worker .+ lost$/, 'the process working on the run stopped'],
  [/^requeued: the lease of worker .+ lapsed$/, 'the process working on the run lost touch with the database'],
]

/**
 * requeueReason says in words why a run went back to the queue, for a
 * message that says so ("requeued: worker vm-7 lost"); undefined for any
 * other message.
 */
export function requeueReason(message: string): string | undefined {
  if (!message.startsWith('requeued:')) return undefined
  for (const [re, why] of requeues) if (re.test(message)) return why
  return 'it was interrupted'
}

/**
 * messageWords puts a progress message in words: no identifiers, worker
 * IDs or flags. "problem_formulation (round 3)" is "problem formulation,
 * round 3"; "requeued: worker vm-7 lost" says the run was queued again to
 * resume where it stopped.
 */
export function messageWords(message: string): string {
  const why = requeueReason(message)
  if (why) return `${why}; queued again to resume where it stopped`
  if (message === 'resuming: waiting for a worker') return 'resuming where it stopped: waiting for a worker'
  return words(message)
    .replace(/^(.+?) \(round (\d+)\)$/, '$1, round $2')
    .replace(/\s*\(--[a-z][a-z-]*\)/g, '')
    .replace(/(^|\s)--no-([a-z][a-z-]*)/g, (_, sp, flag: string) => `${sp}no ${flag.replace(/-/g, ' ')}`)
    .replace(/(^|\s)--([a-z][a-z-]*)/g, (_, sp, flag: string) => `${sp}${flag.replace(/-/g, ' ')}`)
    .replace(/\(confidence (0(?:\.\d+)?|1(?:\.0+)?)\)/, (_, c: string) => `(${Math.round(Number(c) * 100)}% sure)`)
}
