import { useEffect, useState } from 'react'
import { useApi } from '../api/context'
import { problemOfError, type Problem } from '../api/problems'
import { ProblemView } from '../components/ProblemView'
import { Markdown } from './Markdown'

/**
 * GenericResult shows the result of any pipeline: its Markdown export,
 * rendered, and the raw JSON.
 */
export function GenericResult({ runId, result }: { runId: string; result: unknown }) {
  const api = useApi()
  const [md, setMd] = useState<string>()
  const [error, setError] = useState<Problem>()
  useEffect(() => {
    const ac = new AbortController()
    setMd(undefined)
    setError(undefined)
    api.markdown(runId, ac.signal).then(setMd, (err) => {
      if (!ac.signal.aborted) setError(problemOfError(err))
    })
    return () => ac.abort()
  }, [api, runId])
  return (
    <section className="results" aria-labelledby="results-heading">
      <h2 id="results-heading">Results</h2>
      {md === undefined && !error && <p aria-busy="true">Loading the report…</p>}
      {error && <ProblemView problem={error} />}
      {md !== undefined && <Markdown source={md} label="Report" />}
      <RawJSON value={result} />
    </section>
  )
}

/** RawJSON shows a value as indented JSON, folded. */
export function RawJSON({ value }: { value: unknown }) {
  return (
    <details className="raw">
      <summary>Raw JSON</summary>
      <pre tabIndex={0}>{JSON.stringify(value, null, 2)}</pre>
    </details>
  )
}
