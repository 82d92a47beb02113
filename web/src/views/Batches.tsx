import { createParser } from 'eventsource-parser'
import { useEffect, useRef, useState, type FormEvent } from 'react'
import { Link, useNavigate, useParams } from 'react-router'
import { ApiError, errorMessage, type Client } from '../api/client'
import { fieldMessage, fieldWords, problemOfError, type Problem } from '../api/problems'
import { useApi } from '../api/context'
import type { Batch, BatchSummary, CreateBatchResponse, PipelineInfo } from '../api/types'
import { FieldError } from '../components/FieldError'
import { ProblemView } from '../components/ProblemView'
import { StartWarning } from '../api/status'
import { StatusWithOutcome } from '../components/Outcome'
import { stageLabel } from '../progress/words'
import { score, shortId, when } from '../components/format'

/** sampleCSV is the seed's batch format: a header row, then one topic per row. */
export const sampleCSV = `topic,context,temperature_preset,num_candidates,tags
sustainable urban farming,low-cost and community-run,creative,3,"food, cities"
AI tutors in rural schools,accessible without internet at home,balanced,3,education
ocean plastic cleanup,fundable by a small town,conservative,2,environment
`

/** sampleJSON is a JSON batch: an array of the pipeline's parameters (spark's here). */
export const sampleJSON = `[
  {"topic": "sustainable urban farming", "context": "low-cost", "num_candidates": 3, "tags": ["food"]},
  {"topic": "AI tutors in rural schools", "num_candidates": 2}
]
`

/** save hands a blob to the browser as a download. */
function save(link: HTMLAnchorElement | null, blob: Blob, filename: string) {
  const url = URL.createObjectURL(blob)
  if (link) {
    link.href = url
    link.download = filename
    link.click()
  }
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
}

/** Batches uploads a batch file and lists the batches, newest first. */
export function Batches() {
  const api = useApi()
  const navigate = useNavigate()
  const [pipelines, setPipelines] = useState<PipelineInfo[]>([])
  const [pipeline, setPipeline] = useState('spark')
  const [file, setFile] = useState<File>()
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string>()
  const [problem, setProblem] = useState<Problem>()
  const [list, setList] = useState<BatchSummary[]>()
  const link = useRef<HTMLAnchorElement>(null)

  useEffect(() => {
    const ac = new AbortController()
    api.pipelines(ac.signal).then(setPipelines, () => {})
    api.batches({ limit: 50 }, ac.signal).then(setList, (err) => {
      if (!ac.signal.aborted) setProblem(problemOfError(err))
    })
    return () => ac.abort()
  }, [api])

  const submit = async (e: FormEvent) => {
    e.preventDefault()
    if (!file) {
      setError('Choose a CSV or JSON file.')
      return
    }
    setBusy(true)
    setError(undefined)
    setProblem(undefined)
    try {
      const r: CreateBatchResponse = await api.createBatch(pipeline, file, file.name)
      navigate(`/batches/${encodeURIComponent(r.batch_id)}`, { state: { created: r } })
    } catch (err) {
      setProblem(problemOfError(err))
    } finally {
      setBusy(false)
    }
  }

  return (
    <section aria-labelledby="batches-heading">
      <h1 id="batches-heading">Batches</h1>
      <p>
        Run every row of a spreadsheet: a CSV file with a header row (topic, context, temperature_preset, num_candidates, tags) for spark,
        or a JSON array of any pipeline&apos;s parameters. A bad row is reported with its line; the others run.
      </p>
      <p>
        Samples:{' '}
        <button type="button" className="link" onClick={() => save(link.current, new Blob([sampleCSV], { type: 'text/csv' }), 'sample_batch.csv')}>
          sample_batch.csv
        </button>{' '}
        ·{' '}
        <button type="button" className="link" onClick={() => save(link.current, new Blob([sampleJSON], { type: 'application/json' }), 'sample_batch.json')}>
          sample_batch.json
        </button>
      </p>
      <form className="batch-upload" onSubmit={submit} aria-label="Upload a batch">
        <div className="field">
          <label htmlFor="batch-pipeline">Pipeline</label>
          <select id="batch-pipeline" value={pipeline} onChange={(e) => setPipeline(e.target.value)}>
            {pipelines.length === 0 && <option value="spark">spark</option>}
            {pipelines.map((p) => (
              <option key={p.name} value={p.name}>
                {p.title || p.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field grow">
          <label htmlFor="batch-file">File (CSV or JSON)</label>
          <input
            id="batch-file"
            type="file"
            accept=".csv,.json,text/csv,application/json"
            aria-describedby="batch-error"
            onChange={(e) => setFile(e.target.files?.[0])}
          />
        </div>
        <div className="field actions">
          <button type="submit" disabled={busy}>
            {busy ? 'Uploading…' : 'Start batch'}
          </button>
        </div>
      </form>
      <StartWarning what="A batch started now" />
      <FieldError id="batch" message={error} />
      {problem && <ProblemView problem={problem} />}
      {/* eslint-disable-next-line jsx-a11y/anchor-has-content */}
      <a ref={link} hidden aria-hidden="true" />
      <h2>Recent batches</h2>
      {!list && !problem && <p aria-busy="true">Loading…</p>}
      {list && list.length === 0 && <p>No batches yet.</p>}
      {list && list.length > 0 && (
        <ul className="run-list" aria-label="Batches">
          {list.map((b) => (
            <li key={b.batch_id}>
              <Link to={`/batches/${encodeURIComponent(b.batch_id)}`}>{b.source || `batch ${shortId(b.batch_id)}`}</Link>
              <span className="meta">
                <span className="badge">{b.pipeline}</span> {countsText(b)} <time dateTime={b.created_at}>{when(b.created_at)}</time>
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}

/** rowProblem says in words why a row was refused: "num_candidates: want an integer, got "many"" is "num candidates must be a whole number, not "many"". */
export function rowProblem(error: string): string {
  const m = /^(?:[a-z][a-z0-9_-]* parameters: )?([a-z][a-z0-9_.]*): (.*)$/.exec(error)
  if (!m) return fieldMessage(error)
  const msg = fieldMessage(m[2])
  return `${fieldWords(m[1])} ${msg.charAt(0).toLowerCase()}${msg.slice(1)}`
}

function countsText(b: BatchSummary): string {
  const c = b.counts
  const parts = [`${c.succeeded}/${c.total} succeeded`]
  if (c.failed) parts.push(`${c.failed} failed`)
  if (c.cancelled) parts.push(`${c.cancelled} cancelled`)
  if (c.rejected) parts.push(`${c.rejected} rejected`)
  if (c.running) parts.push(`${c.running} running`)
  if (c.pending) parts.push(`${c.pending} queued`)
  return parts.join(' · ')
}

/**
 * followBatch streams a batch's progress over SSE until its done event or
 * until the returned function is called. A lost stream is opened again by
 * itself, for as long as it takes (a server restarting comes back),
 * pausing longer each time up to 3 s; onError hears of a refusal that
 * retrying cannot help (an unknown batch).
 */
export function followBatch(client: Client, id: string, onBatch: (b: Batch) => void, onError: (msg: string) => void): () => void {
  const abort = new AbortController()
  let done = false
  const loop = async () => {
    let attempt = 0
    while (!done && !abort.signal.aborted) {
      try {
        const res = await client.batchEvents(id, abort.signal)
        if (!res.body) throw new Error('the event stream has no body')
        const parser = createParser({
          onEvent(ev) {
            try {
              const b = JSON.parse(ev.data) as Batch
              attempt = 0
              if (ev.event === 'done') done = true
              onBatch(b)
            } catch {
              // not a batch: ignore
            }
          },
        })
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
        for (;;) {
          const { value, done: end } = await reader.read()
          if (end) break
          parser.feed(value)
        }
      } catch (err) {
        if (abort.signal.aborted) return
        if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
          onError(errorMessage(err))
          return
        }
        attempt++
      }
      if (!done) await new Promise((r) => setTimeout(r, Math.min(500 * attempt + 250, 3000)))
    }
  }
  void loop()
  return () => abort.abort()
}

/** BatchView shows a batch's rows live: status, progress, errors with lines, and each row's run. */
export function BatchView() {
  const api = useApi()
  const { id = '' } = useParams()
  const [b, setB] = useState<Batch>()
  const [problem, setProblem] = useState<Problem>()
  const [busy, setBusy] = useState(false)
  const link = useRef<HTMLAnchorElement>(null)

  useEffect(() => {
    setB(undefined)
    setProblem(undefined)
    return followBatch(api, id, setB, (msg) => setProblem(problemOfError(new ApiError(404, msg, 'not_found'))))
  }, [api, id])

  const download = async (which: 'results' | 'results-csv' | 'export') => {
    setBusy(true)
    setProblem(undefined)
    try {
      const f = await api.batchFile(id, which)
      save(link.current, f.blob, f.filename)
    } catch (err) {
      setProblem(problemOfError(err))
    } finally {
      setBusy(false)
    }
  }
  const cancel = async () => {
    setProblem(undefined)
    try {
      await api.cancelBatch(id)
    } catch (err) {
      setProblem(problemOfError(err))
    }
  }

  return (
    <section aria-labelledby="batch-heading">
      <h1 id="batch-heading">Batch {b?.source || shortId(id)}</h1>
      {problem && <ProblemView problem={problem} />}
      {!b && !problem && <p aria-busy="true">Loading…</p>}
      {b && (
        <>
          <p className="meta">
            <span className="badge">{b.pipeline}</span>{' '}
            <span data-testid="batch-counts" aria-live="polite">
              {countsText(b)}
            </span>{' '}
            {b.done ? <span className="status status-succeeded">finished</span> : <span className="status status-running">running</span>}
          </p>
          <progress
            max={Math.max(1, b.counts.total)}
            value={b.counts.succeeded + b.counts.failed + (b.counts.cancelled ?? 0) + b.counts.rejected}
            aria-label="Rows finished"
            className="batch-progress"
          />
          <div className="actions">
            <button type="button" onClick={() => download('results-csv')} disabled={busy} className={/\.json$/i.test(b.source) ? undefined : 'primary'}>
              Download results (CSV)
            </button>{' '}
            <button type="button" onClick={() => download('results')} disabled={busy}>
              Download results (JSON)
            </button>{' '}
            <button type="button" onClick={() => download('export')} disabled={busy}>
              Download every row&apos;s exports (zip)
            </button>{' '}
            {!b.done && (
              <button type="button" onClick={cancel}>
                Cancel the rest
              </button>
            )}
          </div>
          {/* eslint-disable-next-line jsx-a11y/anchor-has-content */}
          <a ref={link} hidden aria-hidden="true" />
          <table className="data-table cards batch-rows" aria-label="Rows">
            <thead>
              <tr>
                <th scope="col" className="num">
                  Line
                </th>
                <th scope="col">Topic</th>
                <th scope="col">Status</th>
                <th scope="col">Best idea</th>
                <th scope="col" className="num">
                  Score
                </th>
                <th scope="col">Progress</th>
                <th scope="col">Run</th>
              </tr>
            </thead>
            <tbody>
              {b.items.map((it) => (
                <tr key={it.line + ':' + (it.run_id ?? '')} data-status={it.status}>
                  <td className="num" data-label="Line">
                    {it.line}
                  </td>
                  <td data-label="Topic">
                    {it.topic || <em>(none)</em>}
                    {it.error && (
                      <div className="row-error" role="note">
                        Line {it.line} was not run: {rowProblem(it.error)}
                      </div>
                    )}
                  </td>
                  <td data-label="Status">
                    <StatusWithOutcome run={it} />
                  </td>
                  <td data-label="Best idea" data-testid="row-best">
                    {it.best ? it.best.text : '—'}
                  </td>
                  <td className="num" data-label="Score" data-testid="row-score">
                    {it.best ? score(it.best.score) : '—'}
                  </td>
                  <td data-label="Progress">
                    {it.run_id ? (
                      <progress max={100} value={it.progress ?? 0} aria-label={`Line ${it.line} progress`} title={it.stage && stageLabel(it.stage)}>
                        {it.progress ?? 0}%
                      </progress>
                    ) : (
                      '—'
                    )}
                  </td>
                  <td data-label="Run">{it.run_id ? <Link to={`/runs/${encodeURIComponent(it.run_id)}`}>{it.run_id.slice(-8)}</Link> : '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  )
}
