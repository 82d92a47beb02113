import { Bar, BarChart, CartesianGrid, ErrorBar, ReferenceLine, Tooltip, XAxis, YAxis } from 'recharts'
import { Link } from 'react-router'
import { RawJSON } from './GenericResult'
import { cost } from '../components/format'

/** EvalSide is what one side of an eval cost. */
export interface EvalSide {
  llm_calls: number
  cached_calls: number
  input_tokens: number
  output_tokens: number
  /** Null when a model has no known price (priced false). */
  cost_usd: number | null
  priced?: boolean
  wall_ms: number
}

/** EvalItem is one topic of an eval. */
export interface EvalItem {
  index: number
  topic: string
  winner: 'pipeline' | 'baseline' | 'tie' | ''
  consistent: boolean
  verdicts: { order: string; winner: string; reasons: string }[] | null
  run_id?: string
  reused?: boolean
  error?: string
}

/** EvalReport is the result of an eval run (the eval package's Report). */
export interface EvalReport {
  run_id: string
  pipeline: string
  provider: string
  model: string
  judge_provider: string
  judge_model: string
  topics: number
  n: number
  wins: number
  losses: number
  ties: number
  failures: number
  win_rate: number
  ci: [number, number]
  position_consistency: number
  pipeline_repairs: number
  repairs: unknown[]
  usage: { pipeline: EvalSide; baseline: EvalSide; judge: EvalSide }
  items: EvalItem[]
  notice?: string
}

/** isEvalResult tells an eval's report from other results. */
export function isEvalResult(v: unknown): v is EvalReport {
  const r = v as EvalReport
  return typeof r === 'object' && r !== null && typeof r.win_rate === 'number' && Array.isArray(r.ci) && Array.isArray(r.items)
}

const pct = (f: number) => `${(f * 100).toFixed(1)}%`

/**
 * EvalResults shows an eval: the win rate with its 95% interval as a
 * chart, the counts, what each side cost, and a table of the topics with
 * the winner, the judge's reasons and a link to each pipeline run.
 */
export function EvalResults({ result }: { result: EvalReport }) {
  const r = result
  const rate = r.win_rate * 100
  const data = [{ name: `${r.pipeline} vs single call`, rate, ci: [rate - r.ci[0] * 100, r.ci[1] * 100 - rate] }]
  const sides: [string, EvalSide][] = [
    ['pipeline', r.usage.pipeline],
    ['baseline', r.usage.baseline],
    ['judge', r.usage.judge],
  ]
  return (
    <section className="results" aria-labelledby="results-heading">
      <h2 id="results-heading">Eval: {r.pipeline} against a single call</h2>
      {r.notice && (
        <p className="banner" role="note">
          {r.notice}
        </p>
      )}
      <p data-testid="eval-headline">
        {r.pipeline} won {r.wins}, lost {r.losses}, tied {r.ties} of {r.n}: win rate <strong>{pct(r.win_rate)}</strong> (95% CI {pct(r.ci[0])}–
        {pct(r.ci[1])}). The judge ({r.judge_provider}
        {r.judge_model ? `/${r.judge_model}` : ''}) gave the same verdict in both orders for {pct(r.position_consistency)} of the topics.
        {r.failures > 0 && ` ${r.failures} of ${r.topics} topics failed.`}
      </p>
      <figure className="chart" aria-label={`Win rate ${pct(r.win_rate)}, 95% interval ${pct(r.ci[0])} to ${pct(r.ci[1])}; 50% is a draw with the single call`}>
        <BarChart width={320} height={240} data={data} margin={{ top: 10, right: 10, bottom: 10, left: 0 }}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey="name" />
          <YAxis domain={[0, 100]} unit="%" />
          <Tooltip formatter={(v) => `${Number(v).toFixed(1)}%`} />
          <ReferenceLine y={50} strokeDasharray="4 4" label="50%" />
          <Bar dataKey="rate" name="win rate" fill="#4f46e5" isAnimationActive={false}>
            <ErrorBar dataKey="ci" width={12} strokeWidth={2} stroke="#111827" direction="y" />
          </Bar>
        </BarChart>
        <figcaption>Win rate (ties count half) with its 95% Wilson interval; 50% is a draw.</figcaption>
      </figure>
      <table>
        <caption>What each side cost</caption>
        <thead>
          <tr>
            <th scope="col">Side</th>
            <th scope="col">LLM calls</th>
            <th scope="col">Cached</th>
            <th scope="col">Tokens in / out</th>
            <th scope="col">Cost</th>
            <th scope="col">Wall time</th>
          </tr>
        </thead>
        <tbody>
          {sides.map(([name, s]) => (
            <tr key={name}>
              <th scope="row">{name}</th>
              <td>{s.llm_calls}</td>
              <td>{s.cached_calls}</td>
              <td>
                {s.input_tokens} / {s.output_tokens}
              </td>
              <td>{cost(s.cost_usd, s.priced)}</td>
              <td>{(s.wall_ms / 1000).toFixed(1)} s</td>
            </tr>
          ))}
        </tbody>
      </table>
      <table data-testid="eval-topics">
        <caption>Topics</caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Topic</th>
            <th scope="col">Winner</th>
            <th scope="col">Judge's reasons</th>
            <th scope="col">Pipeline run</th>
          </tr>
        </thead>
        <tbody>
          {r.items.map((it) => (
            <tr key={it.index}>
              <td>{it.index}</td>
              <td>{it.topic}</td>
              <td>{it.error ? 'failed' : it.consistent ? it.winner : `${it.winner} (orders disagree)`}</td>
              <td>{it.error || (it.verdicts ?? []).map((v) => v.reasons).filter((s, i, all) => s && all.indexOf(s) === i).join(' / ')}</td>
              <td>{it.run_id ? <Link to={`/runs/${encodeURIComponent(it.run_id)}`}>{it.reused ? 'earlier run' : 'run'}</Link> : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <RawJSON value={result} />
    </section>
  )
}
