import { useEffect, useState } from 'react'
import { useApi } from '../api/context'
import { problemOfError, type Problem } from '../api/problems'
import { ProblemView } from '../components/ProblemView'
import type { CallView, RunSteps } from '../api/types'
import { cost } from '../components/format'

/** A call placed on the waterfall: its step, and its bar as percentages of the run's span. */
export interface Row {
  id: string
  step: string
  index: number
  call: CallView
  /** The call's step was stopped by a cancel: its error is no failure. */
  cancelled: boolean
  left: number
  width: number
}

/**
 * layout places every call of a run on one time axis, in the order the
 * calls started: a bar starts where its call started and is as long as its
 * latency, so calls made in parallel overlap on consecutive rows.
 */
export function layout(view: RunSteps): { rows: Row[]; totalMs: number } {
  const calls: Omit<Row, 'left' | 'width'>[] = []
  for (const s of view.steps) s.calls.forEach((call, index) => calls.push({ id: `${s.key}#${index}`, step: s.key, index, call, cancelled: s.status === 'cancelled' }))
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
 * Timeline shows a run's LLM calls as a waterfall, with retries, re-asks
 * and cache hits marked; choosing a call shows its prompt and response,
 * tokens and cost. While the run goes on it polls the steps endpoint.
 */
export function Timeline({ runId, live }: { runId: string; live: boolean }) {
  const api = useApi()
  const [view, setView] = useState<RunSteps>()
  const [error, setError] = useState<Problem>()
  const [open, setOpen] = useState<string>()

  useEffect(() => {
    const ac = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    const load = () => {
      api.runSteps(runId, ac.signal).then(
        (v) => {
          setView(v)
          setError(undefined)
          if (live) timer = setTimeout(load, 1500)
        },
        (err) => {
          if (ac.signal.aborted) return
          setError(problemOfError(err))
          if (live) timer = setTimeout(load, 3000)
        },
      )
    }
    load()
    return () => {
      ac.abort()
      if (timer) clearTimeout(timer)
    }
  }, [api, runId, live])

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
          : `${rows.length} call${rows.length === 1 ? '' : 's'} over ${ms(totalMs)}${live ? ', so far' : ''}. Choose a call to see its prompt and response.`}
      </p>
      {rows.length > 0 && (
        <ol className="waterfall" aria-label="Calls in the order they started">
          {rows.map((r) => {
            const c = r.call
            const marks = [
              c.cached ? 'cached' : '',
              c.attempt > 1 ? `re-ask ${c.attempt - 1}` : '',
              c.retries > 0 ? `${c.retries} ${c.retries === 1 ? 'retry' : 'retries'}` : '',
              c.error ? (r.cancelled ? 'cancelled' : 'failed') : '',
            ].filter(Boolean)
            const cls = ['call-bar', c.cached ? 'cached' : '', c.error && !r.cancelled ? 'failed' : '', c.attempt > 1 || c.retries > 0 ? 'retried' : '']
              .filter(Boolean)
              .join(' ')
            return (
              <li key={r.id} className={r.id === open ? 'call-row open' : 'call-row'} data-testid="timeline-call">
                <button
                  type="button"
                  aria-expanded={r.id === open}
                  aria-controls="call-detail"
                  onClick={() => setOpen(r.id === open ? undefined : r.id)}
                >
                  <span className="call-label">
                    <span className="call-step">{r.step}</span> <span className="muted">{c.agent}</span>
                    {marks.map((m) => (
                      <span key={m} className="call-mark">
                        {m}
                      </span>
                    ))}
                  </span>
                  <span className="call-track" aria-hidden="true">
                    <span className={cls} style={{ left: `${r.left}%`, width: `${Math.min(r.width, 100 - r.left)}%` }} />
                  </span>
                  <span className="call-time">{ms(c.latency_ms)}</span>
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
          {c.input_tokens} in, {c.output_tokens} out
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
