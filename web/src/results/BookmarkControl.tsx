import { useState, type FormEvent } from 'react'
import { Link } from 'react-router'
import { ApiError } from '../api/client'
import { useApi } from '../api/context'
import { fieldMessage, problemOfError, type Problem } from '../api/problems'
import type { Bookmark, Duplicates } from '../api/types'
import { FieldError, errorId } from '../components/FieldError'
import { ProblemView } from '../components/ProblemView'
import { splitList } from '../form/schema'

type State =
  | { kind: 'idle' }
  | { kind: 'saving' }
  | { kind: 'saved'; id: string; duplicates?: Duplicates }
  | { kind: 'blocked'; duplicates: Duplicates }

/** bookmarkLink is the bookmarks page showing one bookmark. */
export function bookmarkLink(id: string): string {
  return `/bookmarks?id=${encodeURIComponent(id)}`
}

/**
 * BookmarkControl saves one candidate of a run as a bookmark, with tags and
 * a note. A candidate bookmarked already (saved) says so. When the API
 * finds the same idea bookmarked it refuses: the control says so in words,
 * links to the bookmark kept, and lets the person save anyway.
 */
export function BookmarkControl({ runId, candidateIndex, saved }: { runId: string; candidateIndex: number; saved?: Bookmark }) {
  const api = useApi()
  const [tags, setTags] = useState('')
  const [notes, setNotes] = useState('')
  const [state, setState] = useState<State>(saved ? { kind: 'saved', id: saved.id } : { kind: 'idle' })
  const [error, setError] = useState<{ field?: string; message?: string; problem?: Problem }>()
  const base = `bookmark-${candidateIndex}`

  const save = async (force: boolean) => {
    setState({ kind: 'saving' })
    setError(undefined)
    try {
      const r = await api.createBookmark({ run_id: runId, candidate_index: candidateIndex, tags: splitList(tags), notes: notes.trim() || undefined, force })
      setState({ kind: 'saved', id: r.bookmark.id, duplicates: r.duplicates })
    } catch (err) {
      if (err instanceof ApiError && err.status === 409 && err.duplicates) {
        setState({ kind: 'blocked', duplicates: err.duplicates })
        return
      }
      setState({ kind: 'idle' })
      const field = err instanceof ApiError ? err.field : undefined
      if (field === 'tags' || field?.startsWith('tags[') || field === 'notes') {
        setError({ field: field === 'notes' ? 'notes' : 'tags', message: fieldMessage((err as ApiError).message, field) })
      } else {
        setError({ problem: problemOfError(err) })
      }
    }
  }

  const submit = (e: FormEvent) => {
    e.preventDefault()
    void save(false)
  }

  if (state.kind === 'saved') {
    const similar = state.duplicates?.recommendation === 'warn' ? state.duplicates.similar : []
    return (
      <div className="bookmark saved" role="status" data-testid="bookmarked">
        <p>
          <span aria-hidden="true">★ </span>Bookmarked. <Link to={bookmarkLink(state.id)}>Open it</Link> · <Link to="/bookmarks">all bookmarks</Link>
        </p>
        {similar.length > 0 && (
          <p className="warning">
            A similar idea was bookmarked already: <Link to={bookmarkLink(similar[0].bookmark.id)}>open it</Link>.
          </p>
        )}
      </div>
    )
  }

  const tagsId = `${base}-tags`
  const notesId = `${base}-notes`
  const buttonId = `${base}-save`
  const kept = state.kind === 'blocked' ? state.duplicates.similar[0]?.bookmark : undefined
  return (
    <form className="bookmark" onSubmit={submit} aria-label={`Bookmark candidate ${candidateIndex + 1}`}>
      <div className="field">
        <label htmlFor={tagsId}>Tags</label>
        <input
          id={tagsId}
          type="text"
          value={tags}
          onChange={(e) => setTags(e.target.value)}
          placeholder="comma-separated"
          aria-invalid={error?.field === 'tags' || undefined}
          aria-describedby={error?.field === 'tags' ? errorId(tagsId) : undefined}
          autoComplete="off"
        />
        <FieldError id={tagsId} message={error?.field === 'tags' ? error.message : undefined} />
      </div>
      <div className="field">
        <label htmlFor={notesId}>Note</label>
        <input
          id={notesId}
          type="text"
          value={notes}
          onChange={(e) => setNotes(e.target.value)}
          aria-invalid={error?.field === 'notes' || undefined}
          aria-describedby={error?.field === 'notes' ? errorId(notesId) : undefined}
          autoComplete="off"
        />
        <FieldError id={notesId} message={error?.field === 'notes' ? error.message : undefined} />
      </div>
      <div className="field actions">
        <button id={buttonId} type="submit" disabled={state.kind === 'saving'} aria-describedby={error?.problem ? errorId(buttonId) : undefined}>
          {state.kind === 'saving' ? 'Saving…' : `Bookmark candidate ${candidateIndex + 1}`}
        </button>
        {error?.problem && <ProblemView problem={error.problem} id={errorId(buttonId)} />}
      </div>
      {state.kind === 'blocked' && (
        <div className="warning duplicate" role="alert">
          <p>
            You already bookmarked this idea
            {kept && kept.topic ? ` (for “${kept.topic}”)` : ''} —{' '}
            {kept ? <Link to={bookmarkLink(kept.id)}>open it</Link> : <Link to="/bookmarks">open your bookmarks</Link>} ·{' '}
            <button type="button" className="link" onClick={() => void save(true)}>
              Save anyway
            </button>
          </p>
        </div>
      )}
    </form>
  )
}
