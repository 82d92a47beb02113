/** Repair is one repair made to a model's reply, as a run's result lists it. */
export interface Repair {
  step?: string
  agent: string
  rule: string
  /** path is where in the reply's value, as a JSON pointer; absent for the whole reply. */
  path?: string
  action: string
}

/** repairsOf returns the `repairs` list of a run's result, or [] when it has none. */
export function repairsOf(result: unknown): Repair[] {
  if (typeof result !== 'object' || result === null) return []
  const list = (result as { repairs?: unknown }).repairs
  if (!Array.isArray(list)) return []
  return list.filter(
    (r): r is Repair =>
      typeof r === 'object' && r !== null && typeof r.agent === 'string' && typeof r.rule === 'string' && typeof r.action === 'string',
  )
}

/**
 * Repairs shows the repairs made to a run's model replies: a count, and the
 * list (agent, rule, where, what was done) folded under it. A run without repairs
 * shows nothing.
 */
export function Repairs({ result }: { result: unknown }) {
  const list = repairsOf(result)
  if (list.length === 0) return null
  const count = `${list.length} ${list.length === 1 ? 'repair' : 'repairs'}`
  return (
    <details className="repairs" data-testid="repairs">
      <summary>
        Replies repaired <span className="badge" aria-label={count}>{list.length}</span>
      </summary>
      <p>Usable replies that broke a rule were repaired as follows; the run succeeded.</p>
      <table className="data-table cards">
        <thead>
          <tr>
            <th scope="col">Agent</th>
            <th scope="col">Rule</th>
            <th scope="col">Where</th>
            <th scope="col">What was done</th>
          </tr>
        </thead>
        <tbody>
          {list.map((r, i) => (
            <tr key={i}>
              <td className="mono" data-label="Agent">
                {r.agent}
              </td>
              <td data-label="Rule">{r.rule}</td>
              <td className="mono" data-label="Where">
                {r.path || 'the whole reply'}
              </td>
              <td data-label="What was done">{r.action}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  )
}
