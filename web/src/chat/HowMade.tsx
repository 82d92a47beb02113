import { useState } from 'react'
import { Link } from 'react-router'
import { useApi } from '../api/context'
import { problemOfError, type Problem } from '../api/problems'
import { ProblemView } from '../components/ProblemView'
import type { Run } from '../api/types'
import { percent, plural, usd } from '../components/format'

/** The parts of a debate's result that say how its answer was made. */
interface DebateResult {
  path?: string
  rounds?: number
  route?: { level?: string; confidence?: number }
  handoffs?: { from_role: string; round: number; context_summary: string; key_points?: string[]; confidence_score?: number }[]
  ranking?: { role: string; points: number }[]
  sources?: { title?: string; url: string; snippet?: string }[]
  search_note?: string
}

/** webLink keeps only http and https links. */
function webLink(url: string): string | undefined {
  try {
    const u = new URL(url)
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.toString() : undefined
  } catch {
    return undefined
  }
}

/**
 * HowMade is the folded "How this answer was made" of an answer: read from
 * the record of the run that made it when first opened, so that it works
 * for the answers of past conversations too.
 */
export function HowMade({ runId }: { runId: string }) {
  const api = useApi()
  const [run, setRun] = useState<Run>()
  const [error, setError] = useState<Problem>()
  const load = () => {
    if (run || error) return
    api.run(runId).then(setRun, (err) => setError(problemOfError(err)))
  }
  const res = (run?.result ?? {}) as DebateResult
  const u = run?.usage ?? {}
  const tokens = (u.input_tokens ?? 0) + (u.output_tokens ?? 0)
  return (
    <details className="how-made" onToggle={(e) => e.currentTarget.open && load()}>
      <summary>How this answer was made</summary>
      {!run && !error && <p aria-busy="true">Loading…</p>}
      {error && <ProblemView problem={error} />}
      {run && (
        <div className="how-made-body" data-testid="how-made">
          <dl className="facts">
            <dt>Route</dt>
            <dd>
              {res.path === 'complex' ? 'debate' : 'direct answer'}
              {res.route?.level && ` (judged ${res.route.level}, ${percent(res.route.confidence)} confident)`}
            </dd>
            {res.path === 'complex' && (
              <>
                <dt>Rounds</dt>
                <dd>{plural(res.rounds ?? 1, 'round')}</dd>
              </>
            )}
            <dt>Calls</dt>
            <dd>
              {plural(u.llm_calls ?? 0, 'LLM call')}
              {u.cached_calls ? `, ${u.cached_calls} cached` : ''}
            </dd>
            <dt>Tokens</dt>
            <dd>
              {plural(tokens, 'token')} ({(u.input_tokens ?? 0).toLocaleString('en')} in, {(u.output_tokens ?? 0).toLocaleString('en')} out)
            </dd>
            <dt>Cost</dt>
            <dd>{u.priced === false ? 'unpriced' : usd(u.cost_usd)}</dd>
          </dl>
          {res.handoffs && res.handoffs.length > 0 && (
            <>
              <h3>Proposers' handoffs</h3>
              <ul className="handoffs">
                {res.handoffs.map((h, i) => (
                  <li key={i}>
                    <strong>{h.from_role}</strong>, round {h.round} —{' '}
                    {h.confidence_score === undefined || h.confidence_score === null ? 'confidence not given' : `${percent(h.confidence_score)} confident`}
                    <p>{h.context_summary}</p>
                    {h.key_points && h.key_points.length > 0 && (
                      <ul>
                        {h.key_points.map((k, j) => (
                          <li key={j}>{k}</li>
                        ))}
                      </ul>
                    )}
                  </li>
                ))}
              </ul>
            </>
          )}
          {res.ranking && res.ranking.length > 0 && (
            <>
              <h3>Peer ranking</h3>
              <ol>
                {res.ranking.map((r) => (
                  <li key={r.role}>
                    {r.role} ({plural(r.points, 'point')})
                  </li>
                ))}
              </ol>
            </>
          )}
          <h3>Search sources</h3>
          {res.sources && res.sources.length > 0 ? (
            <ul>
              {res.sources.map((s, i) => {
                const href = webLink(s.url)
                return (
                  <li key={i}>
                    {href ? (
                      <a href={href} target="_blank" rel="noopener noreferrer">
                        {s.title || s.url}
                      </a>
                    ) : (
                      s.title || s.url
                    )}
                  </li>
                )
              })}
            </ul>
          ) : (
            <p>{res.search_note || 'No web search was made.'}</p>
          )}
          <p>
            <Link to={`/runs/${encodeURIComponent(runId)}`}>The run's full record</Link>
          </p>
        </div>
      )}
    </details>
  )
}
