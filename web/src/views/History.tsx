import { useEffect, useState, type FormEvent } from 'react'
import { Link, useSearchParams } from 'react-router'
import { useApi } from '../api/context'
import { problemOfError, type Problem } from '../api/problems'
import { ProblemView } from '../components/ProblemView'
import type { PipelineInfo, RunPage } from '../api/types'
import { Pager } from '../components/Pager'
import { shortId, when } from '../components/format'

const pageSize = 20
const statuses = ['queued', 'running', 'succeeded', 'failed', 'cancelled', 'interrupted']

/** History lists past runs, newest first, filtered by pipeline, status and text, a page at a time. */
export function History() {
  const api = useApi()
  const [params, setParams] = useSearchParams()
  const pipeline = params.get('pipeline') ?? ''
  const status = params.get('status') ?? ''
  const q = params.get('q') ?? ''
  const offset = Math.max(0, Number(params.get('offset')) || 0)
  const [qInput, setQInput] = useState(q)
  const [page, setPage] = useState<RunPage>()
  const [error, setError] = useState<Problem>()
  const [pipelines, setPipelines] = useState<PipelineInfo[]>([])

  useEffect(() => setQInput(q), [q])

  useEffect(() => {
    const ac = new AbortController()
    api.pipelines(ac.signal).then(setPipelines, () => {})
    return () => ac.abort()
  }, [api])

  useEffect(() => {
    const ac = new AbortController()
    setError(undefined)
    api.runs({ pipeline, status, q, limit: pageSize, offset }, ac.signal).then(setPage, (err) => {
      if (!ac.signal.aborted) setError(problemOfError(err))
    })
    return () => ac.abort()
  }, [api, pipeline, status, q, offset])

  const set = (changes: Record<string, string>) => {
    const next = new URLSearchParams(params)
    for (const [k, v] of Object.entries(changes)) {
      if (v) next.set(k, v)
      else next.delete(k)
    }
    if (!('offset' in changes)) next.delete('offset')
    setParams(next)
  }

  const onSearch = (e: FormEvent) => {
    e.preventDefault()
    set({ q: qInput.trim() })
  }

  return (
    <section aria-labelledby="history-heading">
      <h1 id="history-heading">Runs</h1>
      <form className="filters" onSubmit={onSearch} role="search" aria-label="Filter runs">
        <div className="field">
          <label htmlFor="runs-pipeline">Pipeline</label>
          <select id="runs-pipeline" value={pipeline} onChange={(e) => set({ pipeline: e.target.value })}>
            <option value="">All</option>
            {pipelines.map((p) => (
              <option key={p.name} value={p.name}>
                {p.title || p.name}
              </option>
            ))}
            {pipeline && !pipelines.some((p) => p.name === pipeline) && <option value={pipeline}>{pipeline}</option>}
          </select>
        </div>
        <div className="field">
          <label htmlFor="runs-status">Status</label>
          <select id="runs-status" value={status} onChange={(e) => set({ status: e.target.value })}>
            <option value="">All</option>
            {statuses.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div className="field grow">
          <label htmlFor="runs-q">Search</label>
          <input id="runs-q" type="search" value={qInput} onChange={(e) => setQInput(e.target.value)} placeholder="topic, prompt, query…" />
        </div>
        <div className="field actions">
          <button type="submit">Filter</button>
        </div>
      </form>
      {error && <ProblemView problem={error} />}
      {!page && !error && <p aria-busy="true">Loading…</p>}
      {page && page.runs.length === 0 && <p>No runs{pipeline || status || q ? ' match these filters' : ' yet'}.</p>}
      {page && page.runs.length > 0 && (
        <ul className="run-list" aria-label="Runs">
          {page.runs.map((r) => (
            <li key={r.run_id}>
              <Link to={`/runs/${encodeURIComponent(r.run_id)}`}>{r.title || `${r.pipeline} ${shortId(r.run_id)}`}</Link>
              <span className="meta">
                <span className="badge">{r.pipeline}</span> <span className={`status status-${r.status}`}>{r.status}</span>
                {r.mode === 'mock' && <span className="badge mock">mock</span>} <time dateTime={r.created_at}>{when(r.created_at)}</time>
              </span>
            </li>
          ))}
        </ul>
      )}
      {page && (
        <Pager
          label="Pages of runs"
          offset={offset}
          limit={pageSize}
          count={page.runs.length}
          nextOffset={page.next_offset}
          onChange={(o) => set({ offset: o > 0 ? String(o) : '' })}
        />
      )}
    </section>
  )
}
