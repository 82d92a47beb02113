import { useEffect, useRef, useState } from 'react'
import { NavLink, Route, Routes, useLocation } from 'react-router'
import { useApi } from './api/context'
import { ServerModeProvider } from './api/mode'
import { localTime } from './api/problems'
import { StatusProvider, pausedUntil, providerWho, useNow, useStatus } from './api/status'
import { BatchView, Batches } from './views/Batches'
import { Chat } from './chat/Chat'
import { Bookmarks } from './views/Bookmarks'
import { EvalCompare, Evals } from './views/Evals'
import { History } from './views/History'
import { NewRun } from './views/NewRun'
import { RunView } from './views/RunView'
import { Settings } from './views/Settings'

/** titleOf names a page for the browser's tab and history. */
function titleOf(path: string): string {
  if (path === '/') return 'New run'
  if (path === '/runs') return 'Runs'
  if (path.startsWith('/runs/')) return `Run ${decodeURIComponent(path.slice(6, 14))}`
  if (path === '/batches') return 'Batches'
  if (path.startsWith('/batches/')) return `Batch ${decodeURIComponent(path.slice(9, 17))}`
  if (path === '/evals/compare') return 'Two evals compared'
  if (path.startsWith('/evals')) return 'Evals'
  if (path.startsWith('/bookmarks')) return 'Bookmarks'
  if (path.startsWith('/chat')) return 'Chat'
  if (path.startsWith('/settings')) return 'Settings'
  return 'Not found'
}

/** App is the page: a header with the navigation, and the current view. */
export function App() {
  const api = useApi()
  const [mode, setMode] = useState<string>()
  const location = useLocation()
  const { pathname } = location
  const keepFocus = (location.state as { keepFocus?: boolean } | null)?.keepFocus
  const main = useRef<HTMLElement>(null)
  const first = useRef(true)
  useEffect(() => {
    document.title = `${titleOf(pathname)} · madspark`
    // After a navigation, keyboard and screen reader users start at the
    // new content; unless the page moved by itself while they typed (a
    // chat's first question gives it its address).
    if (first.current) first.current = false
    else if (!keepFocus) main.current?.focus()
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [pathname])
  useEffect(() => {
    const ac = new AbortController()
    api.health(ac.signal).then(
      (h) => setMode(h.mode),
      () => {},
    )
    return () => ac.abort()
  }, [api])
  return (
    <StatusProvider client={api}>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <NavLink to="/" className="brand" end>
          madspark
        </NavLink>
        <nav aria-label="Main">
          <ul>
            <li>
              <NavLink to="/" end>
                New run
              </NavLink>
            </li>
            <li>
              <NavLink to="/runs" end>
                Runs
              </NavLink>
            </li>
            <li>
              <NavLink to="/batches">Batches</NavLink>
            </li>
            <li>
              <NavLink to="/evals">Evals</NavLink>
            </li>
            <li>
              <NavLink to="/chat">Chat</NavLink>
            </li>
            <li>
              <NavLink to="/bookmarks">Bookmarks</NavLink>
            </li>
            <li>
              <NavLink to="/settings">Settings</NavLink>
            </li>
          </ul>
        </nav>
      </header>
      {mode === 'mock' && (
        <div className="banner mock global" role="note" data-testid="mock-banner">
          <strong>Mock mode:</strong> the server has no model configured; every run returns mock data.
        </div>
      )}
      <Outages />
      <main id="main" tabIndex={-1} ref={main}>
        {/* A run page shows no banner of its own when this one is shown. */}
        <ServerModeProvider value={mode}>
          <Routes>
            <Route path="/" element={<NewRun />} />
            <Route path="/runs" element={<History />} />
            <Route path="/runs/:id" element={<RunView />} />
            <Route path="/batches" element={<Batches />} />
            <Route path="/batches/:id" element={<BatchView />} />
            <Route path="/evals" element={<Evals />} />
            <Route path="/evals/compare" element={<EvalCompare />} />
            <Route path="/bookmarks" element={<Bookmarks />} />
            <Route path="/chat/:id?" element={<Chat />} />
            <Route path="/settings" element={<Settings />} />
            <Route path="*" element={<NotFound />} />
          </Routes>
        </ServerModeProvider>
      </main>
    </StatusProvider>
  )
}

/**
 * Outages says, on every page and before anyone starts work, what cannot
 * work now: the madspark server not answering (the page reconnects by
 * itself), or the model provider's calls paused after failures in a row
 * (until when). Each goes away by itself when it ends.
 */
function Outages() {
  const { server, downSince, provider } = useStatus()
  const paused = pausedUntil(provider)
  useNow(paused) // drawn again when the pause ends
  if (server === 'down') {
    return (
      <div className="banner outage global" role="status" data-testid="server-down">
        <strong>The madspark server is not answering</strong>
        {downSince ? ` (since ${localTime(new Date(downSince).toISOString())})` : ''}. What this page shows stays; it reconnects by itself as soon as the
        server is back. Nothing can be started or cancelled until then.
      </div>
    )
  }
  if (paused && provider) {
    const who = providerWho(provider)
    return (
      <div className="banner outage global" role="status" data-testid="provider-paused">
        <strong>Calls to {who} are paused until {localTime(paused.toISOString())}</strong>: it failed {provider.failures} times in a row
        {provider.failure?.kind === 'provider_error' ? ' with a server error' : provider.failure?.kind === 'network' ? ', out of reach' : ''}. A run or an
        answer started before then fails at once; wait until then, and madspark tries it again by itself.
      </div>
    )
  }
  return null
}

function NotFound() {
  return (
    <section aria-labelledby="nf-heading">
      <h1 id="nf-heading">Not found</h1>
      <p>
        There is no page here. <NavLink to="/">Start a run</NavLink>.
      </p>
    </section>
  )
}
