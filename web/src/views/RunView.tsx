import { useCallback, useEffect, useReducer, useRef, useState, type ReactNode } from 'react'
import { Link, useParams } from 'react-router'
import { ApiError } from '../api/client'
import { useApi } from '../api/context'
import { problemOf, problemOfError, type Problem } from '../api/problems'
import { ProblemView } from '../components/ProblemView'
import { useServerMode } from '../api/mode'
import { exportFormats, type ExportFormat, type Run } from '../api/types'
import { errorId } from '../components/FieldError'
import { liveStatus, plural, shortId, usd, when } from '../components/format'
import { initialProgress, isFinal, progressReducer, stageLabel, type ProgressState } from '../progress/reducer'
import { followRun } from '../progress/stream'
import { GenericResult, RawJSON } from '../results/GenericResult'
import { Repairs } from '../results/Repairs'
import { SparkResults, isSparkResult } from '../results/SparkResults'
import { Timeline } from './Timeline'
import { EvalResults, isEvalResult } from '../results/EvalResults'

// A run shown as over: an interrupted one waits for a resume, which follows it again.
const finalStatuses = new Set(['succeeded', 'failed', 'cancelled', 'interrupted'])

/** RunView shows one run: its live progress while it runs, then its results, with cancel and export. */
export function RunView() {
  const { id = '' } = useParams()
  const api = useApi()
  // On a server in mock mode, the page's banner already says every run is mock.
  const serverMode = useServerMode()
  const [run, setRun] = useState<Run>()
  const [loadError, setLoadError] = useState<Problem>()
  const [notFound, setNotFound] = useState(false)
  const [progress, dispatch] = useReducer(progressReducer, initialProgress)
  const [followed, setFollowed] = useState(false)
  // attempt counts resumes: each follows the run again.
  const [attempt, setAttempt] = useState(0)

  // reload fetches the run record until it says the run is over (the final
  // progress message may overtake the record by a moment).
  const reload = useCallback(
    async (untilFinal: boolean, signal?: AbortSignal) => {
      for (let i = 0; ; i++) {
        const r = await api.run(id, signal)
        setRun(r)
        if (!untilFinal || finalStatuses.has(r.status) || i >= 20 || signal?.aborted) return r
        await new Promise((res) => setTimeout(res, Math.min(250 * (i + 1), 1000)))
      }
    },
    [api, id],
  )

  useEffect(() => {
    const ac = new AbortController()
    let stop: (() => void) | undefined
    let poll: ReturnType<typeof setInterval> | undefined
    setRun(undefined)
    setLoadError(undefined)
    setNotFound(false)
    setFollowed(false)
    if (attempt > 0) dispatch({ type: 'reset' })
    reload(false, ac.signal).then(
      (r) => {
        if (ac.signal.aborted || finalStatuses.has(r.status)) return
        setFollowed(true)
        if (r.progress) dispatch({ type: 'snapshot', progress: r.progress })
        dispatch({ type: 'connecting' })
        stop = followRun(api, id, {
          onConnected: (transport) => dispatch({ type: 'connected', transport }),
          onMessage: (message) => {
            dispatch({ type: 'message', message })
            if (message.type === 'result' || message.type === 'error') {
              void reload(true, ac.signal).catch(() => {})
            }
          },
          onError: (error) => {
            dispatch({ type: 'stream_error', error })
            // Without a stream, watch the record instead.
            poll = setInterval(() => {
              api.run(id, ac.signal).then(
                (r) => {
                  setRun(r)
                  if (finalStatuses.has(r.status)) clearInterval(poll)
                },
                () => {},
              )
            }, 2000)
          },
        })
      },
      (err) => {
        if (ac.signal.aborted) return
        setNotFound(err instanceof ApiError && err.status === 404)
        setLoadError(problemOfError(err))
      },
    )
    return () => {
      ac.abort()
      stop?.()
      if (poll) clearInterval(poll)
    }
  }, [api, id, reload, attempt])

  // When the stream was lost before its final message, the record says how the run ended.
  const ended = run && finalStatuses.has(run.status) ? run.status : undefined
  const endError = run?.error ?? undefined
  useEffect(() => {
    if (ended) dispatch({ type: 'ended', status: ended === 'interrupted' ? 'failed' : (ended as 'succeeded' | 'failed' | 'cancelled'), error: endError })
  }, [ended, endError])

  if (loadError) {
    return (
      <section aria-labelledby="run-heading">
        <h1 id="run-heading">{notFound ? 'Run not found' : `Run ${shortId(id)}`}</h1>
        {notFound ? (
          <p className="field-error" role="alert">
            There is no run with the ID {id}: the link may be wrong, or the run deleted.
          </p>
        ) : (
          <ProblemView problem={loadError} />
        )}
        <p>
          <Link to="/runs">All runs</Link> · <Link to="/">Start a run</Link>
        </p>
      </section>
    )
  }
  if (!run) {
    return (
      <section aria-labelledby="run-heading" aria-busy="true">
        <h1 id="run-heading">Run {shortId(id)}</h1>
        <p>Loading…</p>
      </section>
    )
  }

  const over = finalStatuses.has(run.status)
  const status = liveStatus(run.status, progress.phase, progress.stage)
  // A succeeded run's result, or what a cancelled one had finished.
  const kept = (run.status === 'succeeded' || run.status === 'cancelled') && run.result !== undefined && run.result !== null
  return (
    <section aria-labelledby="run-heading">
      <h1 id="run-heading">{run.title || `${run.pipeline} run`}</h1>
      {run.mode === 'mock' && serverMode !== 'mock' && (
        <div className="banner mock" role="note" data-testid="mock-banner">
          <strong>Mock mode.</strong> This run used mock data, not a model: no provider credentials are configured, or
          MADSPARK_MODE=mock is set.
        </div>
      )}
      <dl className="facts run-facts">
        <dt>Status</dt>
        <dd>
          <span className={`status status-${status}`} data-testid="run-status">
            {status}
          </span>
        </dd>
        <dt>Pipeline</dt>
        <dd>{run.pipeline}</dd>
        <dt>Model</dt>
        <dd>
          {run.provider}/{run.model} ({run.mode})
        </dd>
        <dt>Started</dt>
        <dd>
          <time dateTime={run.created_at}>{when(run.created_at)}</time>
        </dd>
        <dt>Run ID</dt>
        <dd className="mono">{run.run_id}</dd>
        {run.usage?.llm_calls !== undefined && (over || run.usage.llm_calls > 0) && (
          <>
            <dt>Usage</dt>
            <dd>
              {plural(run.usage.llm_calls, 'LLM call')}
              {run.usage.cached_calls ? `, ${run.usage.cached_calls} cached` : ''}
              {run.usage.priced === false ? ', unpriced' : run.usage.cost_usd ? `, ${usd(run.usage.cost_usd)}` : ''}
            </dd>
          </>
        )}
      </dl>
      {(!over || followed) && <ProgressPanel state={progress} over={over ? run.status : undefined} />}
      {!over && <CancelControl runId={run.run_id} onCancelled={() => void reload(true).catch(() => {})} />}
      {(run.status === 'failed' || run.status === 'interrupted') && (
        <ProblemView problem={problemOf(run.failure, run.error || progress.error || 'the run failed, giving no reason')} testId="run-problem">
          {run.resumable && run.failure?.kind !== 'params' && <ResumeControl runId={run.run_id} onResumed={() => setAttempt((a) => a + 1)} />}
          <Link className="button secondary" to={editLink(run)}>
            Edit and run again
          </Link>
        </ProblemView>
      )}
      {run.status === 'cancelled' && (
        <div className="notice" role="status" data-testid="run-cancelled">
          <p>
            The run was cancelled.{' '}
            {kept ? 'What it had finished is kept below.' : 'It had finished nothing that is kept.'}
          </p>
          <Link className="button secondary" to={editLink(run)}>
            Edit and run again
          </Link>
        </div>
      )}
      {over && <ExportControl runId={run.run_id} hasResult={kept} />}
      {kept && <Repairs result={run.result} />}
      {kept && (
        run.pipeline === 'eval' && isEvalResult(run.result) ? (
          <EvalResults result={run.result} />
        ) : isSparkResult(run.result) ? (
          <>
            <SparkResults runId={run.run_id} result={run.result} bookmarkable={run.pipeline === 'spark'} />
            <RawJSON value={run.result} />
          </>
        ) : (
          <GenericResult runId={run.run_id} result={run.result} />
        )
      )}
      <Timeline runId={run.run_id} live={!over} />
    </section>
  )
}

/** editLink is where a run's parameters are edited and run again: its pipeline's form, filled with them. */
export function editLink(run: Run): string {
  if (run.pipeline === 'eval') return `/evals?from=${encodeURIComponent(run.run_id)}`
  return `/?pipeline=${encodeURIComponent(run.pipeline)}&from=${encodeURIComponent(run.run_id)}`
}

/** ProgressPanel shows a run's overall progress and its stages. */
export function ProgressPanel({ state, over }: { state: ProgressState; over?: string }) {
  const label =
    over === 'cancelled' || state.phase === 'cancelled'
      ? 'Cancelled'
      : over === 'failed' || state.phase === 'failed'
        ? 'Failed'
        : over || state.phase === 'succeeded'
          ? 'Finished'
          : state.phase === 'connecting'
            ? 'Connecting…'
            : 'Running'
  return (
    <section className="progress" aria-labelledby="progress-heading" data-testid="progress">
      <h2 id="progress-heading">Progress</h2>
      <div
        className="bar"
        role="progressbar"
        aria-label="Run progress"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={state.progress}
        aria-valuetext={`${state.progress}%${state.stage ? `, ${stageLabel(state.stage)}` : ''}`}
      >
        <div className="fill" style={{ width: `${state.progress}%` }} />
      </div>
      <p className="muted" aria-live="polite">
        {label} · {state.progress}%{state.message ? ` · ${state.message}` : ''}
        {state.transport && !over && !isFinal(state) ? ` · live over ${state.transport === 'websocket' ? 'WebSocket' : 'SSE'}` : ''}
      </p>
      {state.streamError && (
        <p className="warning" role="status">
          {state.streamError}; checking the run every few seconds instead.
        </p>
      )}
      <ol className="stages" aria-label="Stages">
        {state.stages.map((s) => (
          <li key={s.name} className={`stage stage-${s.status}`} data-stage={s.name} data-status={s.status}>
            <span className="stage-icon" aria-hidden="true">
              {s.status === 'done' ? '✓' : s.status === 'failed' ? '✕' : s.status === 'cancelled' ? '■' : '…'}
            </span>
            <span className="stage-name">{stageLabel(s.name)}</span>
            <span className="sr-only"> ({s.status})</span>
            {s.message && <span className="stage-message"> — {s.message}</span>}
          </li>
        ))}
      </ol>
      {state.notes.length > 0 && (
        <ul className="notes">
          {state.notes.map((n, i) => (
            <li key={i}>
              {stageLabel(n.stage)}: {n.message}
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}

/** CancelControl cancels a run once the person confirms: what it finished is kept. */
function CancelControl({ runId, onCancelled }: { runId: string; onCancelled(): void }) {
  const api = useApi()
  const [asking, setAsking] = useState(false)
  if (!asking) {
    return (
      <div className="field actions">
        <button id="cancel-run" type="button" className="danger" onClick={() => setAsking(true)}>
          Cancel run
        </button>
      </div>
    )
  }
  return (
    <div className="confirm" role="group" aria-labelledby="cancel-question">
      <p id="cancel-question">Cancel this run? The steps it has finished are kept; the one under way stops.</p>
      <RunAction id="cancel-confirm" className="danger" label="Yes, cancel the run" busyLabel="Cancelling…" act={() => api.cancelRun(runId)} onDone={onCancelled}>
        <button type="button" onClick={() => setAsking(false)} autoFocus>
          Keep it running
        </button>
      </RunAction>
    </div>
  )
}

/** ResumeControl queues a failed or interrupted run to finish, from the steps it had finished. */
export function ResumeControl({ runId, onResumed }: { runId: string; onResumed(): void }) {
  const api = useApi()
  return <RunAction id="resume-run" label="Resume run" busyLabel="Resuming…" act={() => api.resumeRun(runId)} onDone={onResumed} />
}

/** RunAction is a button that acts on the run, with what went wrong beside it. */
function RunAction(props: { id: string; className?: string; label: string; busyLabel: string; act(): Promise<unknown>; onDone(): void; children?: ReactNode }) {
  const { id, className, label, busyLabel, act, onDone } = props
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState<Problem>()
  const run = async () => {
    setBusy(true)
    setProblem(undefined)
    try {
      await act()
      onDone()
    } catch (err) {
      setProblem(problemOfError(err))
    } finally {
      setBusy(false)
    }
  }
  return (
    <div className="field actions">
      <button id={id} type="button" className={className} onClick={() => void run()} disabled={busy} aria-describedby={problem ? errorId(id) : undefined}>
        {busy ? busyLabel : label}
      </button>
      {props.children}
      {problem && <ProblemView problem={problem} id={errorId(id)} />}
    </div>
  )
}

/** exportFormatsOf are the formats a run exports to: a run without a result has only its JSON record. */
export function exportFormatsOf(hasResult: boolean): ExportFormat[] {
  return hasResult ? exportFormats : ['json']
}

function ExportControl({ runId, hasResult }: { runId: string; hasResult: boolean }) {
  const api = useApi()
  const formats = exportFormatsOf(hasResult)
  const [chosen, setFormat] = useState<ExportFormat>('markdown')
  const format = formats.includes(chosen) ? chosen : formats[0]
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<Problem>()
  const link = useRef<HTMLAnchorElement>(null)
  const id = 'export-format'
  const download = async () => {
    setBusy(true)
    setError(undefined)
    try {
      const f = await api.exportRun(runId, format)
      const url = URL.createObjectURL(f.blob)
      const a = link.current
      if (a) {
        a.href = url
        a.download = f.filename
        a.click()
      }
      setTimeout(() => URL.revokeObjectURL(url), 10_000)
    } catch (err) {
      setError(problemOfError(err))
    } finally {
      setBusy(false)
    }
  }
  return (
    <div className="export field" role="group" aria-labelledby="export-label">
      <span id="export-label" className="label">
        Export
      </span>
      <div className="inline">
        <label htmlFor={id} className="sr-only">
          Export format
        </label>
        <select id={id} value={format} onChange={(e) => setFormat(e.target.value as ExportFormat)} aria-describedby={[hasResult ? '' : 'export-hint', error ? errorId(id) : ''].filter(Boolean).join(' ') || undefined} aria-invalid={error ? true : undefined}>
          {formats.map((f) => (
            <option key={f} value={f}>
              {f === 'markdown' ? 'Markdown' : f.toUpperCase()}
            </option>
          ))}
        </select>
        <button type="button" onClick={() => void download()} disabled={busy}>
          {busy ? 'Preparing…' : 'Download'}
        </button>
      </div>
      {!hasResult && (
        <p className="hint" id="export-hint">
          The run has no result: its JSON record says how it ended.
        </p>
      )}
      {error && <ProblemView problem={error} id={errorId(id)} />}
      {/* The download link the button clicks; hidden from everyone. */}
      <a ref={link} hidden aria-hidden="true" tabIndex={-1} />
    </div>
  )
}
