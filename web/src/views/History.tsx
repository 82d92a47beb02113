import { useEffect, useState, type FormEvent } from 'react'
import { Link, useSearchParams } from 'react-router'
import { useApi } from '../api/context'
import { problemOfError, type Problem } from '../api/problems'
import { ProblemView } from '../components/ProblemView'
import type { Parent, PipelineInfo, RunPage, RunSummary } from '../api/types'
import { Pager } from '../components/Pager'
import { StatusWithOutcome, parentWords } from '../components/Outcome'
import { cost, duration, plural, shortId, tokens, when } from '../components/format'

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
          {groupRuns(page.runs).map((g) =>
            g.run ? (
              <li key={g.run.run_id} className="run-item">
                <RunRow run={g.run} />
                {g.children.length > 0 && <SubRuns parent={g.parent} runs={g.children} />}
              </li>
            ) : (
              <li key={`${g.parent!.kind}:${g.parent!.id}`} className="run-item run-group" data-testid="run-group">
                <ParentHeading parent={g.parent!} />
                <SubRuns parent={g.parent} runs={g.children} />
              </li>
            ),
          )}
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

/** A row of the runs list: a run on its own, or a parent's heading, with the runs made for it. */
export interface RunGroup {
  /** The run of the row; absent for a parent that is not on the page as a run (a batch, a conversation, an eval on another page). */
  run?: RunSummary
  parent?: Parent
  /** The runs made for it, in the page's order. */
  children: RunSummary[]
}

/**
 * groupRuns groups a page of runs for the list: a run made for an eval, a
 * batch or a conversation goes under its parent, the eval's own row when
 * the eval is on the page, else a heading of its parent where its first
 * run is; every other run is a row of its own, in the page's order.
 */
export function groupRuns(runs: RunSummary[]): RunGroup[] {
  const out: RunGroup[] = []
  const byRun = new Map<string, RunGroup>()
  const byParent = new Map<string, RunGroup>()
  for (const r of runs) {
    if (r.parent) continue
    const g: RunGroup = { run: r, children: [] }
    byRun.set(r.run_id, g)
  }
  for (const r of runs) {
    if (!r.parent) {
      out.push(byRun.get(r.run_id)!)
      continue
    }
    const own = r.parent.kind === 'eval' ? byRun.get(r.parent.id) : undefined
    if (own) {
      own.parent ??= r.parent
      own.children.push(r)
      continue
    }
    const key = `${r.parent.kind}:${r.parent.id}`
    let g = byParent.get(key)
    if (!g) {
      g = { parent: r.parent, children: [] }
      byParent.set(key, g)
      out.push(g)
    }
    g.children.push(r)
  }
  return out
}

/** runFacts is what a row says of a run beyond its status: how long it took, its tokens, its cost. */
export function runFacts(r: RunSummary): string {
  const parts: string[] = []
  if (typeof r.duration_ms === 'number') parts.push(duration(r.duration_ms))
  if (r.usage && (r.usage.llm_calls || r.usage.cached_calls)) {
    parts.push(plural(r.usage.llm_calls ?? 0, 'call'), tokens(r.usage), cost(r.usage.cost_usd, r.usage.priced))
  }
  return parts.join(' · ')
}

function RunRow({ run: r }: { run: RunSummary }) {
  const facts = runFacts(r)
  return (
    <div className="run-row" data-testid="run-row" data-run-id={r.run_id}>
      <Link to={`/runs/${encodeURIComponent(r.run_id)}`}>{r.title || `${r.pipeline} ${shortId(r.run_id)}`}</Link>
      <span className="meta">
        <span className="badge">{r.pipeline}</span> <StatusWithOutcome run={r} />
        {r.mode === 'mock' && <span className="badge mock">mock</span>} <time dateTime={r.created_at}>{when(r.created_at)}</time>
      </span>
      {facts && (
        <span className="facts-line" data-testid="run-facts">
          {facts}
        </span>
      )}
    </div>
  )
}

/** ParentHeading names the batch, conversation or eval some runs were made for, with a link to it. */
function ParentHeading({ parent }: { parent: Parent }) {
  const w = parentWords(parent)
  const text = { eval: 'Eval', batch: 'Batch', chat: 'Chat' }[parent.kind]
  return (
    <div className="run-row group-heading">
      <Link to={w.to}>
        {text}: {parent.title || shortId(parent.id)}
      </Link>
    </div>
  )
}

function SubRuns({ parent, runs }: { parent?: Parent; runs: RunSummary[] }) {
  const what = parent?.kind === 'eval' ? 'Topic runs of this eval' : parent?.kind === 'batch' ? 'Rows of this batch' : 'Answers of this chat'
  return (
    <ul className="sub-runs" aria-label={what} data-testid="sub-runs">
      {runs.map((c) => (
        <li key={c.run_id}>
          <RunRow run={c} />
        </li>
      ))}
    </ul>
  )
}
