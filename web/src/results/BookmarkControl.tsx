import { useState, type FormEvent } from 'react'
import { Link } from 'react-router'
import { ApiError, errorMessage } from '../api/client'
import { useApi } from '../api/context'
import type { Duplicates } from '../api/types'
import { FieldError, errorId } from '../components/FieldError'
import { splitList } from '../form/schema'

type State =
  | { kind: 'idle' }
  | { kind: 'saving' }
  | { kind: 'saved'; id: string; duplicates?: Duplicates }
  | { kind: 'blocked'; duplicates: Duplicates; message: string }

/**
 * BookmarkControl saves one candidate of a run as a bookmark, with tags and
 * a note. When the API finds a near-identical bookmark it refuses; the
 * control shows the similar bookmarks and lets the person save anyway.
 */
export function BookmarkControl({ runId, candidateIndex }: { runId: string; candidateIndex: number }) {
  const api = useApi()
  const [tags, setTags] = useState('')
  const [notes, setNotes] = useState('')
  const [state, setState] = useState<State>({ kind: 'idle' })
  const [error, setError] = useState<{ field?: string; message: string }>()
  const base = `bookmark-${candidateIndex}`

  const save = async (force: boolean) => {
    setState({ kind: 'saving' })
    setError(undefined)
    try {
      const r = await api.createBookmark({ run_id: runId, candidate_index: candidateIndex, tags: splitList(tags), notes: notes.trim() || undefined, force })
      setState({ kind: 'saved', id: r.bookmark.id, duplicates: r.duplicates })
    } catch (err) {
      if (err instanceof ApiError && err.status === 409 && err.duplicates) {
        setState({ kind: 'blocked', duplicates: err.duplicates, message: err.message })
        return
      }
      setState({ kind: 'idle' })
      const field = err instanceof ApiError ? err.field : undefined
      setError({ field: field === 'tags' || field === 'notes' ? field : undefined, message: errorMessage(err) })
    }
  }

  const submit = (e: FormEvent) => {
    e.preventDefault()
    void save(false)
  }

  if (state.kind === 'saved') {
    const similar = state.duplicates?.recommendation === 'warn' ? state.duplicates.similar : []
    return (
      <div className="bookmark saved" role="status">
        <p>
          Bookmarked. <Link to="/bookmarks">See the bookmarks</Link> to search them or remix them into a new run.
        </p>
        {similar.length > 0 && (
          <div className="warning">
            <p>Similar bookmarks already exist:</p>
            <SimilarList similar={similar} />
          </div>
        )}
      </div>
    )
  }

  const tagsId = `${base}-tags`
  const notesId = `${base}-notes`
  const buttonId = `${base}-save`
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
        <button id={buttonId} type="submit" disabled={state.kind === 'saving'} aria-describedby={error && !error.field ? errorId(buttonId) : undefined}>
          {state.kind === 'saving' ? 'Saving…' : `Bookmark candidate ${candidateIndex + 1}`}
        </button>
        <FieldError id={buttonId} message={error && !error.field ? error.message : undefined} />
      </div>
      {state.kind === 'blocked' && (
        <div className="warning" role="alert">
          <p>{state.message}</p>
          <SimilarList similar={state.duplicates.similar} />
          <button type="button" onClick={() => void save(true)}>
            Save anyway
          </button>
        </div>
      )}
    </form>
  )
}

function SimilarList({ similar }: { similar: Duplicates['similar'] }) {
  return (
    <ul className="similar">
      {similar.map((s) => (
        <li key={s.bookmark.id}>
          <span className="badge">{Math.round(s.similarity * 100)}% similar</span> {s.bookmark.improved_idea || s.bookmark.idea_text}
        </li>
      ))}
    </ul>
  )
}
