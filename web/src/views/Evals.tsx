import { useEffect, useMemo, useState, type FormEvent } from 'react'
import { Link, useNavigate, useSearchParams } from 'react-router'
import { ApiError } from '../api/client'
import { useApi } from '../api/context'
import { fieldMessage, problemOfError, type Problem } from '../api/problems'
import type { EvalComparison, JSONSchema, PipelineInfo, RunPage, StartEvalRequest } from '../api/types'
import { FieldError, errorId } from '../components/FieldError'
import { ProblemView } from '../components/ProblemView'
import { StartWarning } from '../api/status'
import { StatusWithOutcome } from '../components/Outcome'
import { shortId, when } from '../components/format'
import { splitList } from '../form/schema'
import { interval, pct, sideName } from '../results/EvalResults'

/** The providers a judge may be (the eval package's JudgeProviders). */
export const judgeProviders = ['mock', 'openai', 'ollama', 'gemini', 'anthropic']

/** topicExample is an example of an eval's topics as JSON for a pipeline: one object of its required parameters. */
export function topicExample(schema: JSONSchema | undefined): string {
  const root = schema?.$ref ? schema.$defs?.[schema.$ref.replace('#/$defs/', '')] ?? schema : schema
  const example: Record<string, unknown> = {}
  for (const name of root?.required ?? []) {
    const p = root?.properties?.[name]
    example[name] = p?.type === 'integer' || p?.type === 'number' ? (p.minimum ?? 1) : p?.type === 'object' ? {} : `your ${name.replace(/_/g, ' ')}`
  }
  if (Object.keys(example).length === 0) example.topic = 'your topic'
  return JSON.stringify([example, example], null, 2)
}

/** topicsOf reads the topics field: one topic per line, or, as JSON, a list of topics or of parameter objects. */
export function topicsOf(text: string, asJSON: boolean): { topics?: StartEvalRequest['topics']; error?: string } {
  if (!asJSON) {
    const lines = splitList(text, '\n')
    return lines.length > 0 ? { topics: lines } : { error: 'Write at least one topic, one per line.' }
  }
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    return { error: 'This is not valid JSON: write a list such as the example, or turn off “Topics as JSON” and write one topic per line.' }
  }
  if (!Array.isArray(v) || v.length === 0) return { error: 'Write a JSON list with at least one topic or object of parameters, as in the example.' }
  return { topics: v as StartEvalRequest['topics'] }
}

/**
 * Evals measures a pipeline against a single call to the same model: pick
 * the pipeline, write the topics one per line (JSON only as an advanced
 * option), choose the judge, start it (its page follows it live and shows
 * the report); the recent evals are listed, and two of them compared.
 */
export function Evals() {
  const api = useApi()
  const navigate = useNavigate()
  const [search] = useSearchParams()
  const from = search.get('from') ?? ''
  const [pipelines, setPipelines] = useState<PipelineInfo[]>()
  const [pipeline, setPipeline] = useState('spark')
  const [topics, setTopics] = useState('')
  const [asJSON, setAsJSON] = useState(false)
  const [judgeProvider, setJudgeProvider] = useState('')
  const [judgeModel, setJudgeModel] = useState('')
  const [fresh, setFresh] = useState(false)
  const [more, setMore] = useState(false)
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [problem, setProblem] = useState<Problem>()
  const [busy, setBusy] = useState(false)
  const [recent, setRecent] = useState<RunPage>()
  const [chosen, setChosen] = useState<string[]>([])

  useEffect(() => {
    const ac = new AbortController()
    api.pipelines(ac.signal).then(
      (ps) => setPipelines(ps.filter((p) => p.name !== 'eval')),
      (err) => !ac.signal.aborted && setProblem(problemOfError(err)),
    )
    api.runs({ pipeline: 'eval', limit: 20 }, ac.signal).then(setRecent, () => {})
    return () => ac.abort()
  }, [api])

  // Edit and run again: an earlier eval's values.
  useEffect(() => {
    if (!from) return
    const ac = new AbortController()
    api.run(from, ac.signal).then(
      (r) => {
        const p = (r.params ?? {}) as { pipeline?: string; topics?: unknown[]; judge_provider?: string; judge_model?: string; fresh?: boolean }
        if (p.pipeline) setPipeline(p.pipeline)
        setTopics(JSON.stringify(p.topics ?? [], null, 2))
        setAsJSON(true)
        setMore(true)
        setJudgeProvider(p.judge_provider ?? '')
        setJudgeModel(p.judge_model ?? '')
        setFresh(!!p.fresh)
      },
      (err) => !ac.signal.aborted && setProblem(problemOfError(err)),
    )
    return () => ac.abort()
  }, [api, from])

  const selected = pipelines?.find((p) => p.name === pipeline)
  const example = useMemo(() => topicExample(selected?.params_schema), [selected])

  const submit = async (e: FormEvent) => {
    e.preventDefault()
    setProblem(undefined)
    const t = topicsOf(topics, asJSON)
    if (t.error) {
      setErrors({ topics: t.error })
      document.getElementById('eval-topics')?.focus()
      return
    }
    setErrors({})
    setBusy(true)
    try {
      const r = await api.startEval({ pipeline, topics: t.topics!, judge_provider: judgeProvider || undefined, judge_model: judgeModel.trim() || undefined, fresh: fresh || undefined })
      navigate(`/runs/${encodeURIComponent(r.run_id)}`)
    } catch (err) {
      setBusy(false)
      const field = err instanceof ApiError ? err.field?.replace(/^params\./, '') : undefined
      if (field && ['pipeline', 'topics', 'judge_provider', 'judge_model'].includes(field)) {
        setErrors({ [field]: fieldMessage((err as ApiError).message, field) })
        if (field === 'judge_provider' || field === 'judge_model') setMore(true)
        document.getElementById(`eval-${field.replace('_', '-')}`)?.focus()
      } else {
        setProblem(problemOfError(err))
      }
    }
  }

  const toggle = (id: string, on: boolean) => setChosen((c) => (on ? [...c.filter((x) => x !== id), id].slice(-2) : c.filter((x) => x !== id)))

  return (
    <section aria-labelledby="evals-heading">
      <h1 id="evals-heading">Evals</h1>
      <p>
        An eval measures whether a pipeline does better than a single call to the same model: for each topic it runs both, and a judge compares the two
        answers in both orders. The report gives the win rate with its 95% interval.
      </p>
      <form className="eval-form" onSubmit={(e) => void submit(e)} noValidate aria-label="Start an eval">
        <div className="field">
          <label htmlFor="eval-pipeline">Pipeline to measure</label>
          <select
            id="eval-pipeline"
            value={pipeline}
            onChange={(e) => {
              setPipeline(e.target.value)
              setErrors({})
            }}
            aria-invalid={errors.pipeline ? true : undefined}
            aria-describedby={[selected?.description ? 'eval-pipeline-hint' : '', errors.pipeline ? errorId('eval-pipeline') : ''].filter(Boolean).join(' ') || undefined}
          >
            {(pipelines ?? [{ name: pipeline, title: pipeline } as PipelineInfo]).map((p) => (
              <option key={p.name} value={p.name}>
                {p.title || p.name}
              </option>
            ))}
          </select>
          {selected?.description && (
            <p className="hint" id="eval-pipeline-hint">
              {selected.description}
            </p>
          )}
          <FieldError id="eval-pipeline" message={errors.pipeline} />
        </div>
        <div className="field">
          <label htmlFor="eval-topics">{asJSON ? 'Topics (JSON)' : 'Topics, one per line'}</label>
          <textarea
            id="eval-topics"
            rows={asJSON ? 8 : 5}
            className={asJSON ? 'mono' : undefined}
            value={topics}
            onChange={(e) => {
              setTopics(e.target.value)
              if (errors.topics) setErrors((x) => ({ ...x, topics: '' }))
            }}
            placeholder={asJSON ? example : 'community composting\nquiet streets at night'}
            aria-invalid={errors.topics ? true : undefined}
            aria-describedby={['eval-topics-hint', errors.topics ? errorId('eval-topics') : ''].filter(Boolean).join(' ')}
          />
          <p className="hint" id="eval-topics-hint">
            {asJSON ? 'A JSON list: each item a topic, or an object of the pipeline’s parameters, as in the example.' : 'Each line is one run of the pipeline, and one question to the single call.'}
          </p>
          <FieldError id="eval-topics" message={errors.topics} />
        </div>
        <details className="advanced" open={more} onToggle={(e) => setMore(e.currentTarget.open)}>
          <summary>Advanced</summary>
          <div className="field field-toggle">
            <input
              id="eval-json"
              type="checkbox"
              role="switch"
              checked={asJSON}
              onChange={(e) => {
                setAsJSON(e.target.checked)
                setErrors({})
              }}
              aria-describedby="eval-json-hint"
            />
            <label htmlFor="eval-json">Topics as JSON</label>
            <div className="hint" id="eval-json-hint">
              To set other parameters per topic. For {selected?.title || pipeline}, for example:
              <pre className="example">{example}</pre>
            </div>
          </div>
          <div className="field">
            <label htmlFor="eval-judge-provider">Judge</label>
            <select
              id="eval-judge-provider"
              value={judgeProvider}
              onChange={(e) => setJudgeProvider(e.target.value)}
              aria-invalid={errors.judge_provider ? true : undefined}
              aria-describedby={errors.judge_provider ? errorId('eval-judge-provider') : 'eval-judge-hint'}
            >
              <option value="">The server’s own model</option>
              {judgeProviders.map((p) => (
                <option key={p} value={p}>
                  {p === 'mock' ? 'Mock (no model)' : p.charAt(0).toUpperCase() + p.slice(1)}
                </option>
              ))}
            </select>
            <p className="hint" id="eval-judge-hint">
              Another provider than the one measured makes a fairer judge.
            </p>
            <FieldError id="eval-judge-provider" message={errors.judge_provider} />
          </div>
          <div className="field">
            <label htmlFor="eval-judge-model">Judge model</label>
            <input
              id="eval-judge-model"
              type="text"
              value={judgeModel}
              onChange={(e) => setJudgeModel(e.target.value)}
              placeholder="the provider’s default"
              autoComplete="off"
              aria-invalid={errors.judge_model ? true : undefined}
              aria-describedby={errors.judge_model ? errorId('eval-judge-model') : undefined}
            />
            <FieldError id="eval-judge-model" message={errors.judge_model} />
          </div>
          <div className="field field-toggle">
            <input id="eval-fresh" type="checkbox" role="switch" checked={fresh} onChange={(e) => setFresh(e.target.checked)} aria-describedby="eval-fresh-hint" />
            <label htmlFor="eval-fresh">Fresh runs</label>
            <p className="hint" id="eval-fresh-hint">
              Run the pipeline again even for topics it already ran with the same settings.
            </p>
          </div>
        </details>
        <StartWarning what="An eval started now" />
        <div className="submit-row">
          <button type="submit" className="primary" disabled={busy || !pipelines}>
            {busy ? 'Starting…' : 'Start eval'}
          </button>
        </div>
        {problem && <ProblemView problem={problem} />}
      </form>

      <h2>Recent evals</h2>
      {!recent && <p aria-busy="true">Loading…</p>}
      {recent && recent.runs.length === 0 && <p>No evals yet.</p>}
      {recent && recent.runs.length > 0 && (
        <>
          <p className="hint">Choose two to compare them.</p>
          <table className="data-table cards" data-testid="eval-list">
            <caption className="sr-only">Recent evals</caption>
            <thead>
              <tr>
                <th scope="col">
                  <span className="sr-only">Compare</span>
                </th>
                <th scope="col">Eval</th>
                <th scope="col">Status</th>
                <th scope="col">Started</th>
              </tr>
            </thead>
            <tbody>
              {recent.runs.map((r) => (
                <tr key={r.run_id}>
                  <td data-label="Compare">
                    <input
                      type="checkbox"
                      checked={chosen.includes(r.run_id)}
                      disabled={r.status !== 'succeeded'}
                      onChange={(e) => toggle(r.run_id, e.target.checked)}
                      aria-label={`Compare the eval ${r.title || shortId(r.run_id)} of ${when(r.created_at)}`}
                    />
                  </td>
                  <td data-label="Eval">
                    <Link to={`/runs/${encodeURIComponent(r.run_id)}`}>{r.title || `eval ${shortId(r.run_id)}`}</Link>
                  </td>
                  <td data-label="Status">
                    <StatusWithOutcome run={r} />
                  </td>
                  <td data-label="Started">
                    <time dateTime={r.created_at}>{when(r.created_at)}</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <button
            type="button"
            disabled={chosen.length !== 2}
            onClick={() => navigate(`/evals/compare?a=${encodeURIComponent(chosen[0])}&b=${encodeURIComponent(chosen[1])}`)}
          >
            Compare the two chosen
          </button>
        </>
      )}
    </section>
  )
}

/** EvalCompare sets two evals side by side: win rates and intervals, what the difference means, and the topics they share. */
export function EvalCompare() {
  const api = useApi()
  const [search] = useSearchParams()
  const a = search.get('a') ?? ''
  const b = search.get('b') ?? ''
  const [c, setC] = useState<EvalComparison>()
  const [problem, setProblem] = useState<Problem>()
  useEffect(() => {
    const ac = new AbortController()
    setC(undefined)
    setProblem(undefined)
    api.compareEvals(a, b, ac.signal).then(setC, (err) => !ac.signal.aborted && setProblem(problemOfError(err)))
    return () => ac.abort()
  }, [api, a, b])
  const verdict = c && (c.intervals_overlap ? 'The intervals overlap: these evals do not show that either does better.' : `The intervals do not overlap: ${c.difference > 0 ? 'B' : 'A'} does better against its single call.`)
  return (
    <section aria-labelledby="compare-heading">
      <h1 id="compare-heading">Two evals compared</h1>
      <p>
        <Link to="/evals">All evals</Link>
      </p>
      {problem && <ProblemView problem={problem} />}
      {!c && !problem && <p aria-busy="true">Loading…</p>}
      {c && (
        <>
          {c.notice && (
            <p className="banner" role="note">
              {c.notice}
            </p>
          )}
          <p data-testid="compare-verdict">
            Difference in win rate (B − A): <strong>{(c.difference * 100 >= 0 ? '+' : '−') + Math.abs(c.difference * 100).toFixed(1)} points</strong>. {verdict}
          </p>
          <table className="data-table cards" data-testid="compare-table">
            <caption>The two evals</caption>
            <thead>
              <tr>
                <th scope="col">Eval</th>
                <th scope="col">Pipeline</th>
                <th scope="col">Model</th>
                <th scope="col">Judge</th>
                <th scope="col">Won / lost / tied</th>
                <th scope="col">Win rate</th>
                <th scope="col">95% interval</th>
              </tr>
            </thead>
            <tbody>
              {(
                [
                  ['A', c.a],
                  ['B', c.b],
                ] as const
              ).map(([name, s]) => {
                const [lo, hi] = interval(s.ci)
                return (
                  <tr key={name}>
                    <th scope="row" data-label="Eval">
                      <Link to={`/runs/${encodeURIComponent(s.run_id)}`}>
                        {name} · {shortId(s.run_id)}
                      </Link>
                    </th>
                    <td data-label="Pipeline">{s.pipeline}</td>
                    <td data-label="Model">
                      {s.provider}/{s.model}
                    </td>
                    <td data-label="Judge">
                      {s.judge_provider}
                      {s.judge_model ? `/${s.judge_model}` : ''}
                    </td>
                    <td data-label="Won / lost / tied">
                      {s.wins} / {s.losses} / {s.ties} of {s.n}
                    </td>
                    <td data-label="Win rate">{pct(s.win_rate)}</td>
                    <td data-label="95% interval">
                      {lo}–{hi}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
          {c.items.length > 0 && (
            <table className="data-table cards" data-testid="compare-topics">
              <caption>Topics both judged</caption>
              <thead>
                <tr>
                  <th scope="col">Topic</th>
                  <th scope="col">Winner in A</th>
                  <th scope="col">Winner in B</th>
                </tr>
              </thead>
              <tbody>
                {c.items.map((it, i) => (
                  <tr key={i}>
                    <td data-label="Topic">{it.topic}</td>
                    <td data-label="Winner in A">{it.a ? sideName(it.a, c.a.pipeline) : 'failed'}</td>
                    <td data-label="Winner in B">{it.b ? sideName(it.b, c.b.pipeline) : 'failed'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  )
}
