import {
  Bar,
  BarChart,
  CartesianGrid,
  Legend,
  PolarAngleAxis,
  PolarGrid,
  PolarRadiusAxis,
  Radar,
  RadarChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
  type LegendPayload,
} from 'recharts'
import type { MultiDimensional, SparkCandidate } from '../api/types'
import { humanize } from '../form/schema'
import { score } from '../components/format'
import { chartColors, useChartColors } from './chartColors'

export { chartColors }

/** The series in the order they are drawn, and listed in a legend. */
const series = ['initial', 'improved']

/** legendOrder lists a chart's series as they are drawn: initial, then improved (not alphabetically). */
export function legendOrder(item: LegendPayload): number {
  const i = series.indexOf(String(item.dataKey))
  return i < 0 ? series.length : i
}

/** legendLabel writes a series' name in the text's colour, readable whatever the series' colour. */
function legendLabel(value: unknown) {
  return <span className="legend-label">{String(value)}</span>
}

/** The size charts start at before their container is measured (and in tests). */
const initialDimension = { width: 320, height: 260 }

/** ScoreComparison compares each candidate's initial and improved score in a bar chart. */
export function ScoreComparison({ candidates }: { candidates: SparkCandidate[] }) {
  const colors = useChartColors()
  const data = candidates.map((c, i) => ({
    name: `#${i + 1}`,
    initial: c.initial_score,
    improved: c.improved_score ?? null,
  }))
  return (
    <figure className="chart" aria-labelledby="score-comparison-caption" data-testid="score-comparison">
      <figcaption id="score-comparison-caption">Initial vs improved score (0–10)</figcaption>
      <ResponsiveContainer width="100%" height={260} initialDimension={initialDimension}>
        <BarChart data={data} margin={{ top: 8, right: 8, bottom: 0, left: -16 }}>
          <CartesianGrid strokeDasharray="3 3" vertical={false} />
          <XAxis dataKey="name" />
          <YAxis domain={[0, 10]} ticks={[0, 2, 4, 6, 8, 10]} />
          <Tooltip formatter={(v) => score(typeof v === 'number' ? v : undefined)} />
          <Legend itemSorter={legendOrder} formatter={legendLabel} />
          <Bar dataKey="initial" name="Initial" fill={colors.initial} isAnimationActive={false} />
          <Bar dataKey="improved" name="Improved" fill={colors.improved} isAnimationActive={false} />
        </BarChart>
      </ResponsiveContainer>
      <table className="sr-only">
        <caption>Scores by candidate</caption>
        <thead>
          <tr>
            <th scope="col">Candidate</th>
            <th scope="col">Initial</th>
            <th scope="col">Improved</th>
          </tr>
        </thead>
        <tbody>
          {data.map((d) => (
            <tr key={d.name}>
              <th scope="row">{d.name}</th>
              <td>{score(d.initial)}</td>
              <td>{score(d.improved)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  )
}

/** Short names of spark's dimensions, for the radar's axes on a narrow screen. */
const shortNames: Record<string, string> = {
  cost_effectiveness: 'Cost',
  risk_assessment: 'Low risk',
}

/** dimensionRows pairs the initial and improved score of each dimension. */
export function dimensionRows(initial?: MultiDimensional, improved?: MultiDimensional) {
  const names = Object.keys(initial?.dimensions ?? improved?.dimensions ?? {})
  return names.map((n) => ({
    dimension: humanize(n),
    axis: shortNames[n] ?? humanize(n),
    initial: initial?.dimensions?.[n] ?? null,
    improved: improved?.dimensions?.[n] ?? null,
  }))
}

/** DimensionRadar shows a candidate's multi-dimensional scores, initial and improved, as a radar chart. */
export function DimensionRadar({ id, candidate }: { id: string; candidate: SparkCandidate }) {
  const colors = useChartColors()
  const initial = candidate.multi_dimensional_evaluation
  const improved = candidate.improved_multi_dimensional_evaluation
  const rows = dimensionRows(initial, improved)
  if (rows.length === 0) return null
  const captionId = `${id}-radar-caption`
  return (
    <figure className="chart" aria-labelledby={captionId} data-testid="dimension-radar">
      <figcaption id={captionId}>
        Multi-dimensional scores
        {initial?.weighted_score !== undefined && ` · weighted ${score(initial.weighted_score)}`}
        {improved?.weighted_score !== undefined && ` → ${score(improved.weighted_score)}`}
      </figcaption>
      <ResponsiveContainer width="100%" height={300} initialDimension={{ width: 320, height: 300 }}>
        <RadarChart data={rows} outerRadius="70%" margin={{ top: 4, right: 28, bottom: 4, left: 28 }}>
          <PolarGrid />
          <PolarAngleAxis dataKey="axis" tick={{ fontSize: 11 }} />
          {/* The scale's ticks lie between the first two axes, clear of their names. */}
          <PolarRadiusAxis domain={[0, 10]} tickCount={6} angle={90 - 180 / rows.length} tick={{ fontSize: 10 }} />
          {initial && <Radar name="Initial" dataKey="initial" stroke={colors.initial} fill={colors.initial} fillOpacity={0.25} isAnimationActive={false} />}
          {improved && <Radar name="Improved" dataKey="improved" stroke={colors.improved} fill={colors.improved} fillOpacity={0.3} isAnimationActive={false} />}
          <Legend itemSorter={legendOrder} formatter={legendLabel} />
          <Tooltip formatter={(v) => score(typeof v === 'number' ? v : undefined)} />
        </RadarChart>
      </ResponsiveContainer>
      <table className="sr-only">
        <caption>Scores by dimension</caption>
        <thead>
          <tr>
            <th scope="col">Dimension</th>
            <th scope="col">Initial</th>
            <th scope="col">Improved</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={r.dimension}>
              <th scope="row">{r.dimension}</th>
              <td>{score(r.initial)}</td>
              <td>{score(r.improved)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  )
}
