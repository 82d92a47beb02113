import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react'
import { Link, useNavigate, useSearchParams } from 'react-router'
import { ApiError } from '../api/client'
import { useApi } from '../api/context'
import { fieldMessage, problemOfError, type Problem } from '../api/problems'
import { ProblemView } from '../components/ProblemView'
import type { Bookmark, BookmarkPage } from '../api/types'
import { FieldError, errorId } from '../components/FieldError'
import { Pager } from '../components/Pager'
import { score, shortId, when } from '../components/format'
import { splitList } from '../form/schema'

const pageSize = 20

/**
 * Bookmarks lists saved candidates: search by text, filter by tags, a page
 * at a time; delete one; select several and remix them into a new spark
 * run.
 */
export function Bookmarks() {
  const api = useApi()
  const navigate = useNavigate()
  const [params, setParams] = useSearchParams()
  const q = params.get('q') ?? ''
  // One bookmark, by its ID: where "open it" of a duplicate warning leads.
  const only = params.get('id') ?? ''
  const tags = params.getAll('tag')
  const tagKey = tags.join('\u0000')
  const offset = Math.max(0, Number(params.get('offset')) || 0)
  const [qInput, setQInput] = useState(q)
  const [tagInput, setTagInput] = useState(tags.join(', '))
  const [page, setPage] = useState<BookmarkPage>()
  const [problem, setProblem] = useState<Problem>()
  const [selected, setSelected] = useState<Map<string, Bookmark>>(new Map())
  const [reloads, setReloads] = useState(0)

  useEffect(() => {
    setQInput(q)
    setTagInput(tagKey ? tagKey.split('\u0000').join(', ') : '')
  }, [q, tagKey])

  useEffect(() => {
    const ac = new AbortController()
    const tagList = tagKey ? tagKey.split('\u0000') : []
    setProblem(undefined)
    const req = only
      ? api.bookmark(only, ac.signal).then((b) => ({ bookmarks: [b], total: 1, next_offset: null }))
      : q
      ? api.searchBookmarks({ q, tags: tagList, limit: pageSize, offset }, ac.signal).then((p) => ({
          ...p,
          // Search matches text; the tags chosen narrow what it found.
          bookmarks: tagList.length ? p.bookmarks.filter((b) => tagList.every((t) => b.tags?.includes(t))) : p.bookmarks,
        }))
      : api.bookmarks({ tags: tagList, limit: pageSize, offset }, ac.signal)
    req.then(setPage, (err) => {
      if (!ac.signal.aborted) setProblem(problemOfError(err))
    })
    return () => ac.abort()
  }, [api, q, only, tagKey, offset, reloads])

  const go = (next: { q?: string; tags?: string[]; offset?: number }) => {
    const p = new URLSearchParams()
    const nq = next.q ?? q
    const nt = next.tags ?? tags
    if (nq) p.set('q', nq)
    for (const t of nt) p.append('tag', t)
    if (next.offset) p.set('offset', String(next.offset))
    setParams(p)
  }

  const onSearch = (e: FormEvent) => {
    e.preventDefault()
    go({ q: qInput.trim(), tags: splitList(tagInput), offset: 0 })
  }

  const toggle = (b: Bookmark, on: boolean) => {
    setSelected((s) => {
      const n = new Map(s)
      if (on) n.set(b.id, b)
      else n.delete(b.id)
      return n
    })
  }

  const onDeleted = useCallback((id: string) => {
    setSelected((s) => {
      const n = new Map(s)
      n.delete(id)
      return n
    })
    setReloads((r) => r + 1)
  }, [])

  return (
    <section aria-labelledby="bookmarks-heading">
      <h1 id="bookmarks-heading">Bookmarks</h1>
      <form className="filters" role="search" aria-label="Search bookmarks" onSubmit={onSearch}>
        <div className="field grow">
          <label htmlFor="bookmarks-q">Search</label>
          <input id="bookmarks-q" type="search" value={qInput} onChange={(e) => setQInput(e.target.value)} placeholder="topic, context or idea text" />
        </div>
        <div className="field grow">
          <label htmlFor="bookmarks-tags">Tags</label>
          <input id="bookmarks-tags" type="text" value={tagInput} onChange={(e) => setTagInput(e.target.value)} placeholder="comma-separated" autoComplete="off" />
        </div>
        <div className="field actions">
          <button type="submit">Search</button>
        </div>
      </form>
      <ExportImport onImported={() => setReloads((r) => r + 1)} />
      {only && (
        <p>
          One bookmark. <Link to="/bookmarks">Show all bookmarks</Link>
        </p>
      )}
      {problem && <ProblemView problem={problem} />}
      {selected.size > 0 && <RemixPanel selected={[...selected.values()]} onClear={() => setSelected(new Map())} onStarted={(id) => navigate(`/runs/${encodeURIComponent(id)}`)} />}
      {!page && !problem && <p aria-busy="true">Loading…</p>}
      {page && page.bookmarks.length === 0 && <p>No bookmarks{q || tags.length ? ' match' : ' yet: bookmark a candidate from a spark run'}.</p>}
      {page && page.bookmarks.length > 0 && (
        <ul className="bookmark-list" aria-label="Bookmarks">
          {page.bookmarks.map((b) => (
            <BookmarkItem
              key={b.id}
              bookmark={b}
              selected={selected.has(b.id)}
              onToggle={(on) => toggle(b, on)}
              onTag={(t) => go({ tags: tags.includes(t) ? tags : [...tags, t], offset: 0 })}
              onDeleted={onDeleted}
            />
          ))}
        </ul>
      )}
      {page && (
        <Pager
          label="Pages of bookmarks"
          offset={offset}
          limit={pageSize}
          count={page.bookmarks.length}
          total={q && tags.length ? undefined : page.total}
          nextOffset={page.next_offset}
          onChange={(o) => go({ offset: o })}
        />
      )}
    </section>
  )
}

/** ExportImport downloads every bookmark as bookmarks.json, and adds those of such a file. */
function ExportImport({ onImported }: { onImported(): void }) {
  const api = useApi()
  const link = useRef<HTMLAnchorElement>(null)
  const file = useRef<HTMLInputElement>(null)
  const [busy, setBusy] = useState(false)
  const [status, setStatus] = useState('')
  const [problem, setProblem] = useState<Problem>()
  const download = async () => {
    setBusy(true)
    setProblem(undefined)
    try {
      const f = await api.exportBookmarks()
      const url = URL.createObjectURL(f.blob)
      if (link.current) {
        link.current.href = url
        link.current.download = f.filename
        link.current.click()
      }
      setTimeout(() => URL.revokeObjectURL(url), 10_000)
      setStatus('Exported.')
    } catch (err) {
      setProblem(problemOfError(err))
    } finally {
      setBusy(false)
    }
  }
  const upload = async (f: File | undefined) => {
    if (!f) return
    setBusy(true)
    setProblem(undefined)
    setStatus('')
    try {
      const r = await api.importBookmarks(f)
      setStatus(
        `Imported ${r.imported === 1 ? '1 bookmark' : `${r.imported} bookmarks`}` +
          (r.skipped ? `; ${r.skipped === 1 ? '1 was' : `${r.skipped} were`} kept already and skipped.` : '.'),
      )
      onImported()
    } catch (err) {
      setProblem(problemOfError(err))
    } finally {
      setBusy(false)
      if (file.current) file.current.value = ''
    }
  }
  return (
    <div className="field actions export-import" role="group" aria-label="Export and import">
      <button type="button" onClick={() => void download()} disabled={busy}>
        Export bookmarks.json
      </button>
      <input
        id="bookmarks-import"
        ref={file}
        className="sr-only file-input"
        type="file"
        accept=".json,application/json"
        onChange={(e) => void upload(e.target.files?.[0])}
        disabled={busy}
      />
      <label className="button secondary file-button" htmlFor="bookmarks-import">
        Import bookmarks.json…
      </label>
      <span role="status" data-testid="import-status">
        {status}
      </span>
      {problem && <ProblemView problem={problem} />}
      <a ref={link} hidden aria-hidden="true" tabIndex={-1} />
    </div>
  )
}

function BookmarkItem(props: { bookmark: Bookmark; selected: boolean; onToggle(on: boolean): void; onTag(t: string): void; onDeleted(id: string): void }) {
  const api = useApi()
  // The bookmark as last saved: an edit changes it in place.
  const [b, setB] = useState(props.bookmark)
  useEffect(() => setB(props.bookmark), [props.bookmark])
  const [editing, setEditing] = useState(false)
  const [confirming, setConfirming] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<Problem>()
  const idea = b.improved_idea || b.idea_text
  const deleteId = `delete-${b.id}`
  const remove = async () => {
    setBusy(true)
    setError(undefined)
    try {
      await api.deleteBookmark(b.id)
      props.onDeleted(b.id)
    } catch (err) {
      setBusy(false)
      setConfirming(false)
      setError(problemOfError(err))
    }
  }
  return (
    <li className="bookmark-item" data-testid="bookmark">
      <div className="select">
        <input
          id={`select-${b.id}`}
          type="checkbox"
          checked={props.selected}
          onChange={(e) => props.onToggle(e.target.checked)}
          aria-label={`Select for remix: ${truncate(idea, 60)}`}
        />
      </div>
      <div className="body">
        <p className="prose">{idea}</p>
        {b.improved_idea && b.idea_text && b.improved_idea !== b.idea_text && (
          <details>
            <summary>Original idea</summary>
            <p className="prose">{b.idea_text}</p>
          </details>
        )}
        <p className="meta">
          <span>{b.topic}</span> · score {score(b.score)}
          {b.improved_score !== undefined && ` → ${score(b.improved_score)}`} · <time dateTime={b.created_at}>{when(b.created_at)}</time> ·{' '}
          <Link to={`/runs/${encodeURIComponent(b.run_id)}`}>run {shortId(b.run_id)}</Link>
        </p>
        {b.notes && (
          <p className="notes prose" data-testid="bookmark-notes">
            {b.notes}
          </p>
        )}
        {b.tags?.length > 0 && (
          <ul className="tags" aria-label="Tags of this bookmark">
            {b.tags.map((t) => (
              <li key={t}>
                <button type="button" className="tag" onClick={() => props.onTag(t)} aria-label={`Filter by tag ${t}`}>
                  #{t}
                </button>
              </li>
            ))}
          </ul>
        )}
        {editing && (
          <BookmarkEditor
            bookmark={b}
            onSaved={(saved) => {
              setB(saved)
              setEditing(false)
              requestAnimationFrame(() => document.getElementById(`edit-${b.id}`)?.focus())
            }}
            onCancel={() => {
              setEditing(false)
              requestAnimationFrame(() => document.getElementById(`edit-${b.id}`)?.focus())
            }}
          />
        )}
        <div className="field actions">
          {!editing && (
            <button id={`edit-${b.id}`} type="button" onClick={() => setEditing(true)} aria-label={`Edit tags and notes: ${truncate(idea, 60)}`}>
              Edit tags and notes
            </button>
          )}
          {confirming ? (
            <span role="group" aria-label="Confirm deletion">
              Delete this bookmark?{' '}
              <button type="button" className="danger" onClick={() => void remove()} disabled={busy}>
                {busy ? 'Deleting…' : 'Delete'}
              </button>{' '}
              <button type="button" onClick={() => setConfirming(false)} disabled={busy}>
                Keep
              </button>
            </span>
          ) : (
            <button id={deleteId} type="button" onClick={() => setConfirming(true)} aria-describedby={error ? errorId(deleteId) : undefined}>
              Delete
            </button>
          )}
          {error && <ProblemView problem={error} id={errorId(deleteId)} />}
        </div>
      </div>
    </li>
  )
}

/** BookmarkEditor edits a bookmark's tags and notes in place; what the server refuses is said beside its field. */
function BookmarkEditor({ bookmark: b, onSaved, onCancel }: { bookmark: Bookmark; onSaved(b: Bookmark): void; onCancel(): void }) {
  const api = useApi()
  const [tags, setTags] = useState(b.tags.join(', '))
  const [notes, setNotes] = useState(b.notes ?? '')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<{ field?: 'tags' | 'notes'; message: string }>()
  const tagsId = `tags-${b.id}`
  const notesId = `notes-${b.id}`
  const save = async (e: FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      onSaved(await api.updateBookmark(b.id, { tags: splitList(tags), notes }))
    } catch (err) {
      setBusy(false)
      const f = err instanceof ApiError ? err.field : undefined
      const field = f === 'notes' ? 'notes' : f === 'tags' || f?.startsWith('tags[') ? 'tags' : undefined
      setError({ field, message: field ? fieldMessage((err as ApiError).message, f) : problemOfError(err).title })
      requestAnimationFrame(() => document.getElementById(field === 'notes' ? notesId : tagsId)?.focus())
    }
  }
  const fieldError = (f: string) => (error?.field === f ? error.message : undefined)
  return (
    <form className="bookmark-editor" onSubmit={(e) => void save(e)} aria-label="Edit tags and notes" data-testid="bookmark-editor">
      <div className="field">
        <label htmlFor={tagsId}>Tags</label>
        <input
          id={tagsId}
          type="text"
          value={tags}
          onChange={(e) => setTags(e.target.value)}
          placeholder="comma-separated"
          autoComplete="off"
          autoFocus
          aria-invalid={fieldError('tags') ? true : undefined}
          aria-describedby={fieldError('tags') ? errorId(tagsId) : undefined}
        />
        <FieldError id={tagsId} message={fieldError('tags')} />
      </div>
      <div className="field">
        <label htmlFor={notesId}>Notes</label>
        <textarea
          id={notesId}
          rows={3}
          value={notes}
          onChange={(e) => setNotes(e.target.value)}
          aria-invalid={fieldError('notes') ? true : undefined}
          aria-describedby={fieldError('notes') ? errorId(notesId) : undefined}
        />
        <FieldError id={notesId} message={fieldError('notes')} />
      </div>
      <div className="field actions">
        <button type="submit" className="primary" disabled={busy} aria-describedby={error && !error.field ? errorId(`save-${b.id}`) : undefined}>
          {busy ? 'Saving…' : 'Save'}
        </button>
        <button type="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
        <FieldError id={`save-${b.id}`} message={error && !error.field ? error.message : undefined} />
      </div>
    </form>
  )
}

function RemixPanel({ selected, onClear, onStarted }: { selected: Bookmark[]; onClear(): void; onStarted(runId: string): void }) {
  const api = useApi()
  const [topic, setTopic] = useState('')
  const [context, setContext] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<{ field?: string; message: string }>()
  // The optional fields are folded, so that the panel, which stays in view,
  // leaves room for the list on a phone.
  const [more, setMore] = useState(false)
  const submit = async (e: FormEvent) => {
    e.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      const r = await api.remix({ bookmark_ids: selected.map((b) => b.id), topic: topic.trim() || undefined, context: context.trim() || undefined })
      onStarted(r.run_id)
    } catch (err) {
      setBusy(false)
      const f = err instanceof ApiError ? err.field : undefined
      setError({ field: f === 'topic' || f === 'context' ? f : undefined, message: f === 'topic' || f === 'context' ? fieldMessage((err as ApiError).message, f) : problemOfError(err).title })
    }
  }
  const fieldError = (f: string) => (error?.field === f ? error.message : undefined)
  return (
    <form className="remix" onSubmit={submit} aria-labelledby="remix-heading">
      <h2 id="remix-heading">Remix {selected.length} selected</h2>
      <details className="remix-more" open={more || !!error?.field} onToggle={(e) => setMore(e.currentTarget.open)}>
        <summary>Topic and context (optional)</summary>
        <div className="remix-fields">
          <div className="field">
            <label htmlFor="remix-topic">Topic</label>
            <input
              id="remix-topic"
              type="text"
              value={topic}
              onChange={(e) => setTopic(e.target.value)}
              placeholder={`optional; default: ${selected[0]?.topic ?? ''}`}
              aria-invalid={fieldError('topic') ? true : undefined}
              aria-describedby={fieldError('topic') ? errorId('remix-topic') : undefined}
            />
            <FieldError id="remix-topic" message={fieldError('topic')} />
          </div>
          <div className="field">
            <label htmlFor="remix-context">Context</label>
            <input
              id="remix-context"
              type="text"
              value={context}
              onChange={(e) => setContext(e.target.value)}
              placeholder="optional"
              aria-invalid={fieldError('context') ? true : undefined}
              aria-describedby={fieldError('context') ? errorId('remix-context') : undefined}
            />
            <FieldError id="remix-context" message={fieldError('context')} />
          </div>
        </div>
      </details>
      <div className="field actions">
        <button id="remix-submit" type="submit" className="primary" disabled={busy} aria-describedby={error && !error.field ? errorId('remix-submit') : undefined}>
          {busy ? 'Starting…' : 'Remix into a new run'}
        </button>{' '}
        <button type="button" onClick={onClear} disabled={busy}>
          Clear selection
        </button>
        <FieldError id="remix-submit" message={error && !error.field ? error.message : undefined} />
      </div>
    </form>
  )
}

function truncate(s: string, n: number): string {
  return s.length <= n ? s : s.slice(0, n - 1) + '…'
}
