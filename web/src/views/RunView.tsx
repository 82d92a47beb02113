import { useCallback, useEffect, useReducer, useRef, useState, type ReactNode } from 'react'
import { Link, useParams } from 'react-router'
import { ApiError } from '../api/client'
import { useApi } from '../api/context'
import { localTime, problemOf, problemOfError, retryWords, type Problem, type Where } from '../api/problems'
import { pausedUntil, useNow, useStatus, whereOf } from '../api/status'
import { ProblemView } from '../components/ProblemView'
import { useServerMode } from '../api/mode'
import { exportFormats, type ExportFormat, type Parent, type ProviderStatus, type Run } from '../api/types'
import { errorId } from '../components/FieldError'
import { cost, duration, liveStatus, plural, shortId, tokens, when } from '../components/format'
import { outcomeMarks, parentWords, statusTone } from '../components/Outcome'
import { initialProgress, isFinal, progressReducer, stageLabel, type ProgressState } from '../progress/reducer'
import { followRun } from '../progress/stream'
import { messageWords } from '../progress/words'
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
  const status = useStatus()
  const refreshStatus = status.refresh
  const where = whereOf(status.provider)

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
        let lost = false
        stop = followRun(api, id, {
          onConnected: (transport) => {
            dispatch({ type: 'connected', transport })
            // Back after a loss: the record says where the run stands now.
            if (lost) void reload(false, ac.signal).catch(() => {})
            lost = false
          },
          onDisconnected: () => {
            lost = true
            dispatch({ type: 'disconnected' })
          },
          onMessage: (message) => {
            dispatch({ type: 'message', message })
            if (message.type === 'result' || message.type === 'error') {
              void reload(true, ac.signal).catch(() => {})
              if (message.type === 'error') refreshStatus()
            } else if (message.stage === 'queued') {
              void reload(false, ac.signal).catch(() => {})
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
  }, [api, id, reload, attempt, refreshStatus])

  // When the stream was lost before its final message, the record says how the run ended.
  const ended = run && finalStatuses.has(run.status) ? run.status : undefined
  const endError = run?.error ?? undefined
  useEffect(() => {
    if (ended) dispatch({ type: 'ended', status: ended as 'succeeded' | 'failed' | 'cancelled' | 'interrupted', error: endError })
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
  const shown = liveStatus(run.status, progress.phase, progress.stage)
  // A succeeded run's result, or what a cancelled one had finished.
  const kept = (run.status === 'succeeded' || run.status === 'cancelled') && run.result !== undefined && run.result !== null
  const marks = outcomeMarks(run)
  return (
    <section aria-labelledby="run-heading">
      <h1 id="run-heading">{run.title || `${run.pipeline} run`}</h1>
      <div className="run-head">
        <span className={`status ${statusTone({ status: shown, outcome: run.outcome })}`} data-testid="run-status">
          {shown}
        </span>
        {marks.map((m) => (
          <span key={m.label} className={`badge outcome-${m.tone}`} title={m.title} data-testid="outcome-mark">
            {m.label}
          </span>
        ))}
        {run.parent && <ParentLink parent={run.parent} />}
      </div>
      <OutcomeNote run={run} />
      {run.mode === 'mock' && serverMode !== 'mock' && (
        <div className="banner mock" role="note" data-testid="mock-banner">
          <strong>Mock mode.</strong> This run used mock data, not a model: no provider credentials are configured, or
          MADSPARK_MODE=mock is set.
        </div>
      )}
      <dl className="facts run-facts">
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
        {typeof run.duration_ms === 'number' && (
          <>
            <dt>Took</dt>
            <dd data-testid="run-duration">{duration(run.duration_ms)}</dd>
          </>
        )}
        {run.usage?.llm_calls !== undefined && (over || run.usage.llm_calls > 0) && (
          <>
            <dt>Usage</dt>
            <dd data-testid="run-usage">
              {plural(run.usage.llm_calls, 'LLM call')}
              {run.usage.cached_calls ? `, ${run.usage.cached_calls} cached` : ''}, {tokens(run.usage)}, {cost(run.usage.cost_usd, run.usage.priced)}
            </dd>
          </>
        )}
      </dl>
      {(!over || followed) && <ProgressPanel state={progress} over={over ? run.status : undefined} serverDown={status.server === 'down'} where={where} />}
      {!over && <CancelControl runId={run.run_id} serverDown={status.server === 'down'} onCancelled={() => void reload(true).catch(() => {})} />}
      {(run.status === 'failed' || run.status === 'interrupted') && (
        <ProblemView problem={problemOf(run.failure, run.error || progress.error || 'the run failed, giving no reason', where)} testId="run-problem">
          {run.resumable && run.failure?.kind !== 'params' && (
            <ResumeControl runId={run.run_id} until={resumeFrom(run, status.provider)} serverDown={status.server === 'down'} onResumed={() => setAttempt((a) => a + 1)} />
          )}
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
      <Timeline runId={run.run_id} live={!over} version={progress.lastSeq} />
    </section>
  )
}

/**
 * resumeFrom is when a failed run can be resumed: not before its paused
 * provider is tried again, as its failure or the provider's current status
 * says; undefined when it can be now.
 */
export function resumeFrom(run: Run, provider: ProviderStatus | undefined, now: number = Date.now()): Date | undefined {
  const times = [pausedUntil(provider, now)?.getTime() ?? 0]
  if (run.failure?.kind === 'provider_paused' && run.failure.retry_at) times.push(Date.parse(run.failure.retry_at))
  const t = Math.max(...times.filter((x) => !Number.isNaN(x)))
  return t > now ? new Date(t) : undefined
}

function ParentLink({ parent }: { parent: Parent }) {
  const w = parentWords(parent)
  return (
    <Link className="run-parent" to={w.to} data-testid="run-parent">
      {w.text}
    </Link>
  )
}

/**
 * OutcomeNote says, at the top of a run's page, how the run came out
 * beyond its status: the pipeline's verdict, a partial result, replies
 * repaired. Nothing for a run that simply succeeded.
 */
export function OutcomeNote({ run }: { run: Run }) {
  const o = run.outcome
  const lines: { text: string; tone: string }[] = []
  if (o?.verdict) {
    const v = o.verdict
    lines.push(
      v.passed
        ? { text: `It passed ${v.check}${v.note ? ` (${v.note})` : ''}.`, tone: 'ok' }
        : { text: `It did not pass ${v.check}${v.note ? ` (${v.note.replace(/^not passed /, '')})` : ''}. The result is kept, marked as not passed.`, tone: 'warn' },
    )
  }
  if (o?.partial) lines.push({ text: 'It stopped before it finished; what it had finished is kept below.', tone: 'warn' })
  if (o?.repairs) lines.push({ text: `${plural(o.repairs, 'reply', 'replies')} of the model needed a repair to be used; they are listed under “Replies repaired”.`, tone: 'plain' })
  if (lines.length === 0) return null
  return (
    <div className={`outcome-note outcome-${lines[0].tone}`} data-testid="run-outcome">
      {lines.map((l) => (
        <p key={l.text}>{l.text}</p>
      ))}
    </div>
  )
}

/** editLink is where a run's parameters are edited and run again: its pipeline's form, filled with them. */
export function editLink(run: Run): string {
  if (run.pipeline === 'eval') return `/evals?from=${encodeURIComponent(run.run_id)}`
  return `/?pipeline=${encodeURIComponent(run.pipeline)}&from=${encodeURIComponent(run.run_id)}`
}

/** ProgressPanel shows a run's overall progress and its stages, how it is followed, and what happened to it on the way. */
export function ProgressPanel({ state, over, serverDown, where }: { state: ProgressState; over?: string; serverDown?: boolean; where?: Where }) {
  const label =
    over === 'cancelled' || state.phase === 'cancelled'
      ? 'Cancelled'
      : over === 'interrupted' || state.phase === 'interrupted'
        ? 'Interrupted'
        : over === 'failed' || state.phase === 'failed'
          ? 'Failed'
          : over || state.phase === 'succeeded'
            ? 'Finished'
            : state.connection === 'reconnecting' || serverDown
              ? 'Reconnecting…'
              : state.phase === 'connecting'
                ? 'Connecting…'
                : 'Running'
  const message = state.message ? messageWords(state.message) : ''
  const live = !over && !isFinal(state)
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
      <p className="muted" aria-live="polite" data-testid="progress-line">
        {label} · {state.progress}%{message && message !== 'done' ? ` · ${message}` : ''}
        {state.transport && state.connection === 'live' && live && !serverDown ? ` · live over ${state.transport === 'websocket' ? 'WebSocket' : 'SSE'}` : ''}
      </p>
      {live && (serverDown || state.connection === 'reconnecting') && (
        <p className="warning" role="status" data-testid="progress-reconnecting">
          {serverDown
            ? 'The madspark server is not answering. The run’s progress shows again as soon as it is back: this page reconnects by itself.'
            : 'The progress stream was lost; reconnecting by itself.'}
        </p>
      )}
      {live && state.retrying.length > 0 && <RetryLine retrying={state.retrying} where={where} />}
      {state.requeued && (
        <p className="notice" role="status" data-testid="run-requeued">
          {state.requeued.resumed
            ? `The run was interrupted (${state.requeued.why}) and resumed where it stopped; the steps it had finished were not paid for again.`
            : `The run was interrupted (${state.requeued.why}). It is back in the queue and resumes where it stopped as soon as a worker takes it.`}
        </p>
      )}
      {state.streamError && (
        <p className="warning" role="status">
          The progress cannot be followed live ({state.streamError}); the page checks the run every few seconds instead.
        </p>
      )}
      <ol className="stages" aria-label="Stages">
        {state.stages.map((s) => {
          const m = s.message ? messageWords(s.message) : ''
          return (
            <li key={s.name} className={`stage stage-${s.status}`} data-stage={s.name} data-status={s.status}>
              <span className="stage-icon" aria-hidden="true">
                {s.status === 'done' ? '✓' : s.status === 'failed' ? '✕' : s.status === 'cancelled' ? '■' : s.status === 'interrupted' ? '↻' : '…'}
              </span>
              <span className="stage-name">{stageLabel(s.name)}</span>
              <span className="sr-only"> ({s.status})</span>
              {m && m.toLowerCase() !== stageLabel(s.name).toLowerCase() && <span className="stage-message"> — {m}</span>}
            </li>
          )
        })}
      </ol>
      {state.notes.length > 0 && (
        <ul className="notes">
          {state.notes.map((n, i) => (
            <li key={i}>
              {stageLabel(n.stage)}: {messageWords(n.message)}
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}

/**
 * RetryLine says, as it happens, that a call of the run is being tried
 * again: why it failed, when it is tried again and which attempt of how
 * many (the latest retry, and how many other calls are retried too).
 */
function RetryLine({ retrying, where }: { retrying: ProgressState['retrying']; where?: Where }) {
  const r = retrying[retrying.length - 1]
  const others = retrying.length - 1
  return (
    <p className="warning" role="status" data-testid="progress-retrying">
      {retryWords(r.failure, r.delay_ms, r.attempt, where, r.max_attempts)}
      {others > 0 ? ` ${others === 1 ? 'Another call is' : `${others} other calls are`} being tried again too.` : ''}
    </p>
  )
}

/** CancelControl cancels a run once the person confirms: what it finished is kept. It waits while the server is down. */
function CancelControl({ runId, serverDown, onCancelled }: { runId: string; serverDown?: boolean; onCancelled(): void }) {
  const api = useApi()
  const [asking, setAsking] = useState(false)
  if (!asking || serverDown) {
    return (
      <div className="field actions">
        <button id="cancel-run" type="button" className="danger" onClick={() => setAsking(true)} disabled={serverDown} aria-describedby={serverDown ? 'cancel-hint' : undefined}>
          Cancel run
        </button>
        {serverDown && (
          <span className="hint" id="cancel-hint">
            The server is not answering: the run can be cancelled once it is back.
          </span>
        )}
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

/**
 * ResumeControl queues a failed or interrupted run to finish, from the
 * steps it had finished. It waits until the time until, when the
 * provider's calls are paused until then, and while the server is down.
 */
export function ResumeControl({ runId, until, serverDown, onResumed }: { runId: string; until?: Date; serverDown?: boolean; onResumed(): void }) {
  const api = useApi()
  const now = useNow(until)
  const waiting = until && until.getTime() > now ? until : undefined
  const hint = serverDown
    ? 'The server is not answering: the run can be resumed once it is back.'
    : waiting
      ? `Calls to the model are paused until ${localTime(waiting.toISOString())}: the run can be resumed from then.`
      : undefined
  return (
    <RunAction
      id="resume-run"
      label={waiting ? `Resume from ${localTime(waiting.toISOString())}` : 'Resume run'}
      busyLabel="Resuming…"
      act={() => api.resumeRun(runId)}
      onDone={onResumed}
      disabled={!!hint}
      hint={hint}
    />
  )
}

/** RunAction is a button that acts on the run, with what went wrong beside it, or why it cannot be used yet. */
function RunAction(props: {
  id: string
  className?: string
  label: string
  busyLabel: string
  act(): Promise<unknown>
  onDone(): void
  children?: ReactNode
  disabled?: boolean
  hint?: string
}) {
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
      <button
        id={id}
        type="button"
        className={className}
        onClick={() => void run()}
        disabled={busy || props.disabled}
        aria-describedby={[problem ? errorId(id) : '', props.hint ? `${id}-hint` : ''].filter(Boolean).join(' ') || undefined}
      >
        {busy ? busyLabel : label}
      </button>
      {props.children}
      {props.hint && (
        <span className="hint" id={`${id}-hint`}>
          {props.hint}
        </span>
      )}
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
