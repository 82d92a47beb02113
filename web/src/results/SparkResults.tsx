import { lazy, Suspense, useEffect, useState } from 'react'
import { useApi } from '../api/context'
import type { Bookmark, GeneratedIdea, SparkCandidate, SparkResult } from '../api/types'
import { score, signed } from '../components/format'
import { BookmarkControl } from './BookmarkControl'

// The charts' library is the largest part of the UI: it is loaded with the
// first results, not with the page.
const ScoreComparison = lazy(() => import('./ScoreCharts').then((m) => ({ default: m.ScoreComparison })))
const DimensionRadar = lazy(() => import('./ScoreCharts').then((m) => ({ default: m.DimensionRadar })))

function ChartLoading() {
  return <p className="muted chart-loading">Loading the chart…</p>
}

/** isSparkResult tells whether a run's result has spark's shape. */
export function isSparkResult(r: unknown): r is SparkResult {
  return !!r && typeof r === 'object' && Array.isArray((r as SparkResult).candidates)
}

/**
 * SparkResults shows a spark run's candidates: the idea, the critique, the
 * advocacy and skepticism, the improved idea and its critique, the initial
 * vs improved scores as a bar chart, and, with enhanced reasoning, each
 * candidate's dimensions as a radar chart.
 */
export function SparkResults({ runId, result, bookmarkable }: { runId: string; result: SparkResult; bookmarkable: boolean }) {
  const cs = result.candidates
  const saved = useRunBookmarks(runId, bookmarkable)
  return (
    <section className="results" aria-labelledby="results-heading">
      <h2 id="results-heading">Results</h2>
      {(result.topic || result.context) && (
        <dl className="facts">
          {result.topic && (
            <>
              <dt>Topic</dt>
              <dd>{result.topic}</dd>
            </>
          )}
          {result.context && (
            <>
              <dt>Context</dt>
              <dd>{result.context}</dd>
            </>
          )}
          {result.generated !== undefined && (
            <>
              <dt>Ideas</dt>
              <dd>
                {result.generated} generated
                {result.filtered ? `, ${result.filtered} near-duplicates dropped` : ''}, {cs.length} carried through
              </dd>
            </>
          )}
        </dl>
      )}
      {cs.length === 0 ? (
        <p>No candidates.</p>
      ) : (
        <Suspense fallback={<ChartLoading />}>
          <ScoreComparison candidates={cs} />
        </Suspense>
      )}
      <ol className="candidates">
        {cs.map((c, i) => (
          <li key={i}>
            <CandidateCard runId={runId} index={i} candidate={c} bookmarkable={bookmarkable && saved !== undefined} saved={saved?.get(i)} />
          </li>
        ))}
      </ol>
      <OtherIdeas ideas={(result.ideas ?? []).filter((idea) => !idea.candidate)} />
    </section>
  )
}

/**
 * OtherIdeas lists, folded, the generated ideas that were not carried
 * through: their critic's score, or the kept idea they duplicate.
 */
export function OtherIdeas({ ideas }: { ideas: GeneratedIdea[] }) {
  if (ideas.length === 0) return null
  return (
    <details className="other-ideas">
      <summary>
        {ideas.length === 1 ? '1 other idea' : `${ideas.length} other ideas`} generated
      </summary>
      <ul>
        {ideas.map((idea, i) => (
          <li key={i}>
            <strong>{idea.title}</strong>: {idea.description}{' '}
            {idea.duplicate_of ? (
              <em>(near-duplicate of “{idea.duplicate_of}”)</em>
            ) : idea.score !== undefined ? (
              <em>(score {idea.score.toFixed(1)})</em>
            ) : (
              <em>(not scored)</em>
            )}
          </li>
        ))}
      </ul>
    </details>
  )
}

/**
 * useRunBookmarks returns the bookmarks of a run's candidates by index,
 * once known (a run page remembers what was bookmarked); undefined until
 * then, and empty when they cannot be read.
 */
function useRunBookmarks(runId: string, on: boolean): Map<number, Bookmark> | undefined {
  const api = useApi()
  const [saved, setSaved] = useState<Map<number, Bookmark>>()
  useEffect(() => {
    if (!on) return
    const ac = new AbortController()
    api.bookmarks({ runId, limit: 100 }, ac.signal).then(
      (p) => setSaved(new Map(p.bookmarks.map((b) => [b.candidate_index, b]))),
      () => !ac.signal.aborted && setSaved(new Map()),
    )
    return () => ac.abort()
  }, [api, runId, on])
  return saved
}

function CandidateCard(props: { runId: string; index: number; candidate: SparkCandidate; bookmarkable: boolean; saved?: Bookmark }) {
  const { runId, index, candidate: c, bookmarkable } = props
  const id = `candidate-${index}`
  return (
    <article className="candidate" aria-labelledby={`${id}-title`} data-testid="candidate">
      <header>
        <h3 id={`${id}-title`}>
          Candidate {index + 1}
          <span className="scores">
            <span title="initial score">{score(c.initial_score)}</span>
            {c.improved_score !== undefined && (
              <>
                {' → '}
                <span title="improved score">{score(c.improved_score)}</span>{' '}
                <span className={`delta ${(c.score_delta ?? 0) >= 0 ? 'up' : 'down'}`}>({signed(c.score_delta)})</span>
              </>
            )}
          </span>
        </h3>
        {c.fallback && (
          <p className="warning">
            Fallback values were used: {(c.fallbacks ?? []).map((f) => `${f.stage} (${f.reason})`).join('; ')}
          </p>
        )}
      </header>
      <Section title="Idea" text={c.idea} />
      <Section title="Critique" text={c.initial_critique} />
      <div className="two">
        <Section title="Advocacy" text={c.advocacy} />
        <Section title="Skepticism" text={c.skepticism} />
      </div>
      <Section title="Improved idea" text={c.improved_idea} highlight />
      <Section title="Critique of the improved idea" text={c.improved_critique} />
      {c.logical_inference && (
        <section>
          <h4>Logical inference</h4>
          {c.logical_inference.inference_chain && (
            <ol>
              {c.logical_inference.inference_chain.map((s, i) => (
                <li key={i}>{s}</li>
              ))}
            </ol>
          )}
          {c.logical_inference.conclusion && (
            <p>
              <strong>Conclusion:</strong> {c.logical_inference.conclusion}
              {c.logical_inference.confidence !== undefined && ` (confidence ${Math.round(c.logical_inference.confidence * 100)}%)`}
            </p>
          )}
        </section>
      )}
      {(c.multi_dimensional_evaluation || c.improved_multi_dimensional_evaluation) && (
        <Suspense fallback={<ChartLoading />}>
          <DimensionRadar id={id} candidate={c} />
        </Suspense>
      )}
      {bookmarkable && <BookmarkControl runId={runId} candidateIndex={index} saved={props.saved} />}
    </article>
  )
}

function Section({ title, text, highlight }: { title: string; text?: string; highlight?: boolean }) {
  if (!text) return null
  return (
    <section className={highlight ? 'highlight' : undefined}>
      <h4>{title}</h4>
      <p className="prose">{text}</p>
    </section>
  )
}
