import { useEffect, useRef, useState } from 'react'
import { NavLink, Route, Routes, useLocation } from 'react-router'
import { useApi } from './api/context'
import { ServerModeProvider } from './api/mode'
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
  const { pathname } = useLocation()
  const main = useRef<HTMLElement>(null)
  const first = useRef(true)
  useEffect(() => {
    document.title = `${titleOf(pathname)} · madspark`
    // After a navigation, keyboard and screen reader users start at the new content.
    if (first.current) first.current = false
    else main.current?.focus()
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
    <>
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
    </>
  )
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
