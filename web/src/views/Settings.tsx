import { useState, type FormEvent } from 'react'

const key = 'madspark.api_token'

/** storedToken is the API token kept for this browser tab, if any. */
export function storedToken(): string | undefined {
  try {
    return sessionStorage.getItem(key) || undefined
  } catch {
    return undefined
  }
}

/**
 * Settings keeps the API token for a server that requires one
 * (MADSPARK_API_TOKEN), for this tab only (session storage).
 */
export function Settings() {
  const [token, setToken] = useState(storedToken() ?? '')
  const [saved, setSaved] = useState(false)
  const save = (e: FormEvent) => {
    e.preventDefault()
    try {
      if (token.trim()) sessionStorage.setItem(key, token.trim())
      else sessionStorage.removeItem(key)
      setSaved(true)
    } catch {
      setSaved(false)
    }
  }
  return (
    <section aria-labelledby="settings-heading">
      <h1 id="settings-heading">Settings</h1>
      <form onSubmit={save}>
        <div className="field">
          <label htmlFor="api-token">API token</label>
          <input
            id="api-token"
            type="password"
            autoComplete="off"
            value={token}
            onChange={(e) => {
              setToken(e.target.value)
              setSaved(false)
            }}
            aria-describedby="api-token-hint"
          />
          <p className="hint" id="api-token-hint">
            Only for a server started with MADSPARK_API_TOKEN. Kept in this tab until it is closed; sent as a bearer token. Progress then streams over
            SSE, since a browser cannot send the token on a WebSocket.
          </p>
        </div>
        <div className="field actions">
          <button type="submit">Save</button>
          {saved && <span role="status"> Saved.</span>}
        </div>
      </form>
    </section>
  )
}
