import { Bar, BarChart, CartesianGrid, ErrorBar, LabelList, ReferenceLine, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts'
import { Link } from 'react-router'
import { problemOf } from '../api/problems'
import type { Failure } from '../api/types'
import { cost, plural } from '../components/format'
import { RawJSON } from './GenericResult'
import { useChartColors } from './chartColors'

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
  failure?: Failure
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

/**
 * undecided reports whether an eval cannot tell the pipeline from the
 * single call: its interval includes 50%, as it always does with a few
 * topics. Its win rate is then no headline.
 */
export function undecided(r: Pick<EvalReport, 'ci' | 'n'>): boolean {
  return r.n === 0 || (r.ci[0] <= 0.5 && r.ci[1] >= 0.5)
}

/** pct formats a 0-1 share as a percentage with one decimal. */
export const pct = (f: number) => `${(Math.round(f * 1000 + 1e-9) / 10).toFixed(1)}%`

/**
 * interval formats a 95% interval as percentages with one decimal, each
 * end rounded outwards (the lower down, the upper up), so that the
 * interval shown contains the one computed and rounds both ends alike: a
 * Wilson interval around 50% reads 9.4%–90.6%, not 9.4%–90.5%.
 */
export function interval(ci: [number, number]): [string, string] {
  // Tame binary noise first (0.0945 is 9.450000000000001 as a percentage).
  const lo = Number((ci[0] * 100).toPrecision(10))
  const hi = Number((ci[1] * 100).toPrecision(10))
  return [`${(Math.floor(lo * 10 + 1e-9) / 10).toFixed(1)}%`, `${(Math.ceil(hi * 10 - 1e-9) / 10).toFixed(1)}%`]
}

/** sideName says who a winner is, for people: the pipeline by its name, the baseline as the single call. */
export function sideName(winner: string, pipeline: string): string {
  if (winner === 'pipeline') return pipeline
  if (winner === 'baseline') return 'single call'
  if (winner === 'tie') return 'tie'
  return winner
}

/**
 * EvalResults shows an eval: the win rate with its 95% interval as a
 * chart, the counts, what each side cost, and a table of the topics with
 * the winner, the judge's reasons and a link to each pipeline run. The
 * tables read at any width: the topics become cards on a narrow screen,
 * the costs scroll sideways with a visible edge.
 */
export function EvalResults({ result }: { result: EvalReport }) {
  const r = result
  const colors = useChartColors()
  const [lo, hi] = interval(r.ci)
  const rate = r.win_rate * 100
  const data = [{ name: `${r.pipeline} against a single call`, rate, ci: [rate - r.ci[0] * 100, r.ci[1] * 100 - rate] }]
  const sides: [string, EvalSide][] = [
    [r.pipeline, r.usage.pipeline],
    ['single call', r.usage.baseline],
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
        {undecided(r) && (
          <strong className="undecided" data-testid="eval-undecided">
            {r.n < 10 ? `${plural(r.n, 'topic')} cannot tell which does better` : 'These topics cannot tell which does better'}: the 95% interval of the
            win rate ({lo}–{hi}) includes 50%, a draw; more topics narrow it.{' '}
          </strong>
        )}
        {r.pipeline} won {r.wins}, lost {r.losses}, tied {r.ties} of {r.n}: win rate {undecided(r) ? pct(r.win_rate) : <strong>{pct(r.win_rate)}</strong>} (95% CI {lo}–{hi}). The judge (
        {r.judge_provider}
        {r.judge_model ? `/${r.judge_model}` : ''}) gave the same verdict in both orders for {pct(r.position_consistency)} of the topics.
        {r.failures > 0 && ` ${r.failures} of ${plural(r.topics, 'topic')} failed.`}
      </p>
      <figure className="chart eval-chart" aria-label={`Win rate ${pct(r.win_rate)}, 95% interval ${lo} to ${hi}; 50% is a draw with the single call`}>
        <ResponsiveContainer width="100%" height={260} initialDimension={{ width: 320, height: 260 }}>
          <BarChart data={data} margin={{ top: 16, right: 16, bottom: 4, left: 0 }}>
            <CartesianGrid strokeDasharray="3 3" vertical={false} />
            <XAxis dataKey="name" />
            <YAxis domain={[0, 100]} ticks={[0, 25, 50, 75, 100]} unit="%" />
            <Tooltip formatter={(v) => `${Number(v).toFixed(1)}%`} />
            <ReferenceLine y={50} strokeDasharray="4 4" stroke={colors.initial} />
            <Bar dataKey="rate" name="win rate" fill={colors.improved} isAnimationActive={false} maxBarSize={120}>
              {/* The value sits beside the bar, clear of the interval drawn through its middle. */}
              <LabelList dataKey="rate" position="right" offset={10} formatter={(v: unknown) => `${Number(v).toFixed(1)}%`} className="bar-value" />
              <ErrorBar dataKey="ci" width={16} strokeWidth={2} stroke={colors.text} direction="y" />
            </Bar>
          </BarChart>
        </ResponsiveContainer>
        <figcaption>
          Win rate (ties count half) with its 95% Wilson interval ({lo} to {hi}); the dashed line at 50% is a draw.
        </figcaption>
      </figure>
      <div className="table-scroll" tabIndex={0} role="region" aria-label="What each side cost (scrolls sideways)">
        <table className="data-table">
          <caption>What each side cost</caption>
          <thead>
            <tr>
              <th scope="col">Side</th>
              <th scope="col" className="num">
                LLM calls
              </th>
              <th scope="col" className="num">
                Cached
              </th>
              <th scope="col" className="num">
                Tokens in
              </th>
              <th scope="col" className="num">
                Tokens out
              </th>
              <th scope="col" className="num">
                Cost
              </th>
              <th scope="col" className="num">
                Wall time
              </th>
            </tr>
          </thead>
          <tbody>
            {sides.map(([name, s]) => (
              <tr key={name}>
                <th scope="row">{name}</th>
                <td className="num">{s.llm_calls.toLocaleString('en')}</td>
                <td className="num">{s.cached_calls.toLocaleString('en')}</td>
                <td className="num">{s.input_tokens.toLocaleString('en')}</td>
                <td className="num">{s.output_tokens.toLocaleString('en')}</td>
                <td className="num">{cost(s.cost_usd, s.priced)}</td>
                <td className="num">{(s.wall_ms / 1000).toFixed(1)} s</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <table className="data-table cards" data-testid="eval-topics">
        <caption>Topics</caption>
        <thead>
          <tr>
            <th scope="col" className="num">
              #
            </th>
            <th scope="col">Topic</th>
            <th scope="col">Winner</th>
            <th scope="col">Judge’s reasons</th>
            <th scope="col">Pipeline run</th>
          </tr>
        </thead>
        <tbody>
          {r.items.map((it) => (
            <tr key={it.index}>
              <td className="num" data-label="#">
                {it.index}
              </td>
              <td data-label="Topic">{it.topic}</td>
              <td data-label="Winner">{it.error ? 'failed' : it.consistent ? sideName(it.winner, r.pipeline) : `${sideName(it.winner, r.pipeline)} (orders disagree)`}</td>
              <td data-label="Judge’s reasons">
                {it.error ? <TopicProblem item={it} /> : (it.verdicts ?? []).map((v) => v.reasons).filter((s, i, all) => s && all.indexOf(s) === i).join(' / ')}
              </td>
              <td data-label="Pipeline run">{it.run_id ? <Link to={`/runs/${encodeURIComponent(it.run_id)}`}>{it.reused ? 'earlier run' : 'run'}</Link> : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <RawJSON value={result} />
    </section>
  )
}

/** TopicProblem says in words why a topic failed, the error folded beneath. */
function TopicProblem({ item }: { item: EvalItem }) {
  const p = problemOf(item.failure, item.error)
  return (
    <>
      {p.title}
      <details className="problem-detail">
        <summary>Technical detail</summary>
        <span className="mono">{item.error}</span>
      </details>
    </>
  )
}
