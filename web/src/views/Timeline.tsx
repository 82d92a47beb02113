import { useEffect, useRef, useState } from 'react'
import { useApi } from '../api/context'
import { problemOfError, type Problem } from '../api/problems'
import { ProblemView } from '../components/ProblemView'
import type { CallView, RepairView, RunSteps } from '../api/types'
import { cost, plural, tokens } from '../components/format'

/** A call placed on the waterfall: its step, and its bar as percentages of the run's span. */
export interface Row {
  id: string
  step: string
  index: number
  call: CallView
  /** The call's step was stopped by a cancel: its error is no failure. */
  cancelled: boolean
  /** The repairs made to this call's reply so that it could be used. */
  repairs: RepairView[]
  left: number
  width: number
}

/**
 * repairedCalls says which call of a step each of its repairs was made
 * to: the reply that was used, the last call of the repair's agent that
 * did not fail (the last such call of the step when no call names the
 * agent). It returns the repairs by the call's index in the step.
 */
export function repairedCalls(calls: CallView[], repairs: RepairView[]): Map<number, RepairView[]> {
  const out = new Map<number, RepairView[]>()
  const used = (agent?: string) => {
    for (let i = calls.length - 1; i >= 0; i--) if (!calls[i].error && (agent === undefined || calls[i].agent === agent)) return i
    return -1
  }
  for (const r of repairs) {
    let i = used(r.agent)
    if (i < 0) i = used()
    if (i < 0) continue
    out.set(i, [...(out.get(i) ?? []), r])
  }
  return out
}

/**
 * layout places every call of a run on one time axis, in the order the
 * calls started: a bar starts where its call started and is as long as its
 * latency, so calls made in parallel overlap on consecutive rows.
 */
export function layout(view: RunSteps): { rows: Row[]; totalMs: number } {
  const calls: Omit<Row, 'left' | 'width'>[] = []
  for (const s of view.steps) {
    const repaired = repairedCalls(s.calls, s.repairs ?? [])
    s.calls.forEach((call, index) => calls.push({ id: `${s.key}#${index}`, step: s.key, index, call, cancelled: s.status === 'cancelled', repairs: repaired.get(index) ?? [] }))
  }
  if (calls.length === 0) return { rows: [], totalMs: 0 }
  const start = (c: CallView) => Date.parse(c.started_at)
  calls.sort((a, b) => start(a.call) - start(b.call))
  const t0 = start(calls[0].call)
  const end = Math.max(...calls.map((c) => start(c.call) + c.call.latency_ms))
  const total = Math.max(end - t0, 1)
  const rows = calls.map((c) => ({
    ...c,
    left: ((start(c.call) - t0) / total) * 100,
    width: Math.max((c.call.latency_ms / total) * 100, 0.5),
  }))
  return { rows, totalMs: end - t0 }
}

function ms(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(n >= 10000 ? 0 : 1)} s` : `${Math.round(n)} ms`
}

/**
 * Timeline shows a run's LLM calls as a waterfall, with retries, re-asks,
 * cache hits and repaired replies marked, and each call's tokens and cost;
 * choosing a call shows its prompt and response, and what was repaired.
 * While the run goes on it reads the steps again as progress comes
 * (version: the last progress message's number), and every few seconds.
 */
export function Timeline({ runId, live, version = 0 }: { runId: string; live: boolean; version?: number }) {
  const api = useApi()
  const [view, setView] = useState<RunSteps>()
  const [error, setError] = useState<Problem>()
  const [open, setOpen] = useState<string>()
  const load = useRef<() => void>(() => {})

  useEffect(() => {
    const ac = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    let inFlight = false
    let again = false
    const next = (ms: number) => {
      if (timer) clearTimeout(timer)
      timer = live ? setTimeout(read, ms) : undefined
    }
    const read = () => {
      // One read at a time; a request meanwhile reads once more after it.
      if (inFlight) {
        again = true
        return
      }
      inFlight = true
      api.runSteps(runId, ac.signal).then(
        (v) => {
          inFlight = false
          setView(v)
          setError(undefined)
          if (again) {
            again = false
            read()
          } else next(3000)
        },
        (err) => {
          inFlight = false
          if (ac.signal.aborted) return
          setError(problemOfError(err))
          next(3000)
        },
      )
    }
    load.current = read
    read()
    return () => {
      ac.abort()
      load.current = () => {}
      if (timer) clearTimeout(timer)
    }
  }, [api, runId, live])

  // Progress means a step has moved: its calls are read at once.
  useEffect(() => {
    if (version > 0) load.current()
  }, [version])

  if (!view) {
    return error ? (
      <section className="timeline" aria-labelledby="timeline-heading">
        <h2 id="timeline-heading">LLM calls</h2>
        <ProblemView problem={error} />
      </section>
    ) : null
  }
  const { rows, totalMs } = layout(view)
  const chosen = rows.find((r) => r.id === open)
  return (
    <section className="timeline" aria-labelledby="timeline-heading" data-testid="timeline">
      <h2 id="timeline-heading">LLM calls</h2>
      <p className="muted">
        {rows.length === 0
          ? live
            ? 'No call has finished yet.'
            : 'This run made no LLM call.'
          : `${plural(rows.length, 'call')} over ${ms(totalMs)}${live ? ', so far' : ''}${repairedCount(rows)}. Choose a call to see its prompt and response.`}
      </p>
      {rows.length > 0 && (
        <ol className="waterfall" aria-label="Calls in the order they started">
          {rows.map((r) => {
            const c = r.call
            const marks = [
              c.cached ? 'cached' : '',
              c.attempt > 1 ? `re-ask ${c.attempt - 1}` : '',
              c.retries > 0 ? `${c.retries} ${c.retries === 1 ? 'retry' : 'retries'}` : '',
              r.repairs.length > 0 ? `repaired (${r.repairs.length})` : '',
              c.error ? (r.cancelled ? 'cancelled' : 'failed') : '',
            ].filter(Boolean)
            const cls = ['call-bar', c.cached ? 'cached' : '', c.error && !r.cancelled ? 'failed' : '', c.attempt > 1 || c.retries > 0 ? 'retried' : '', r.repairs.length > 0 ? 'repaired' : '']
              .filter(Boolean)
              .join(' ')
            return (
              <li key={r.id} className={r.id === open ? 'call-row open' : 'call-row'} data-testid="timeline-call" data-repaired={r.repairs.length > 0 || undefined}>
                <button
                  type="button"
                  aria-expanded={r.id === open}
                  aria-controls="call-detail"
                  onClick={() => setOpen(r.id === open ? undefined : r.id)}
                >
                  <span className="call-label">
                    <span className="call-step">{r.step}</span> <span className="muted">{c.agent}</span>
                    {marks.map((m) => (
                      <span key={m} className={m.startsWith('repaired') ? 'call-mark repaired' : 'call-mark'}>
                        {m}
                      </span>
                    ))}
                  </span>
                  <span className="call-track" aria-hidden="true">
                    <span className={cls} style={{ left: `${r.left}%`, width: `${Math.min(r.width, 100 - r.left)}%` }} />
                  </span>
                  <span className="call-time">{ms(c.latency_ms)}</span>
                  <span className="call-usage" data-testid="call-usage">
                    {c.cached ? 'from the cache' : `${tokens(c)} · ${cost(c.cost_usd, c.priced)}`}
                  </span>
                </button>
              </li>
            )
          })}
        </ol>
      )}
      {chosen && <CallDetail row={chosen} />}
    </section>
  )
}

function CallDetail({ row }: { row: Row }) {
  const c = row.call
  // What the provider was sent, byte for byte; the agent's prompt for a
  // call that was not sent (a cache hit) or recorded before it was kept.
  const sent = c.messages ?? []
  return (
    <section id="call-detail" className="call-detail" aria-labelledby="call-detail-heading" data-testid="call-detail">
      <h3 id="call-detail-heading">
        {row.step} · {c.agent}
      </h3>
      <dl className="facts">
        <dt>Model</dt>
        <dd>
          {c.provider}/{c.model}
        </dd>
        <dt>Tokens</dt>
        <dd>
          {c.input_tokens.toLocaleString('en')} in, {c.output_tokens.toLocaleString('en')} out
        </dd>
        <dt>Cost</dt>
        <dd>{cost(c.cost_usd, c.priced)}</dd>
        <dt>Latency</dt>
        <dd>{ms(c.latency_ms)}</dd>
        <dt>Attempt</dt>
        <dd>
          {c.attempt}
          {c.retries > 0 ? ` (after ${c.retries} ${c.retries === 1 ? 'retry' : 'retries'})` : ''}
          {c.cached ? ', answered by the cache' : c.sent === false ? ', not sent' : ''}
        </dd>
        {c.finish_reason && (
          <>
            <dt>Finish</dt>
            <dd>{c.finish_reason}</dd>
          </>
        )}
      </dl>
      {sent.length > 0 ? <h4>Messages sent</h4> : <h4>Prompt</h4>}
      <div data-testid="call-prompt">
        {(sent.length > 0 ? sent : c.prompt).map((m, i) => (
          <div key={i} className="message">
            <div className="message-role">{m.role}</div>
            <pre>{m.content}</pre>
          </div>
        ))}
      </div>
      {row.repairs.length > 0 && (
        <>
          <h4>Repaired</h4>
          <p className="hint">The reply broke {row.repairs.length === 1 ? 'a rule' : 'rules'} its agent sets, in a way madspark could fix; the fixed reply was used.</p>
          <ul className="repair-list" data-testid="call-repairs">
            {row.repairs.map((rp, i) => (
              <li key={i}>
                <strong>{repairRule(rp.rule)}</strong>
                {rp.path ? <span className="mono"> at {rp.path}</span> : null}: {rp.action}
              </li>
            ))}
          </ul>
        </>
      )}
      {c.response_format !== undefined && c.response_format !== null && (
        <>
          <h4>Response format sent</h4>
          <pre data-testid="call-response-format">{JSON.stringify(c.response_format, null, 2)}</pre>
        </>
      )}
      <h4>{c.error ? 'Error' : 'Response'}</h4>
      <pre data-testid="call-response">{c.error || c.response}</pre>
    </section>
  )
}

/** What each rule of the reply reader checks, in words. */
const ruleWords: Record<string, string> = {
  syntax: 'JSON syntax',
  shape: 'shape',
  key: 'field name',
  type: 'type of a value',
  enum: 'allowed value',
  split: 'list written as text',
  extra: 'field not asked for',
  missing: 'missing value',
  count: 'number of items',
  range: 'value out of range',
  length: 'length',
  prose: 'prose instead of JSON',
  index: 'numbering of items',
  consistency: 'consistency',
  reference: 'reference',
  budget: 'length target',
  id: 'repeated item',
}

/** repairRule names a repair's rule for people: "prose" is "Prose instead of JSON". */
export function repairRule(rule: string): string {
  const w = ruleWords[rule] ?? rule.replace(/_/g, ' ')
  return w.charAt(0).toUpperCase() + w.slice(1)
}

/** repairedCount says how many calls had their reply repaired, for the summary line: ", 2 repaired". */
function repairedCount(rows: Row[]): string {
  const n = rows.filter((r) => r.repairs.length > 0).length
  return n > 0 ? `, ${n} repaired` : ''
}
