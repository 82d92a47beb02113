import { useCallback, useEffect, useRef, useState, type FormEvent, type KeyboardEvent } from 'react'
import { Link, useNavigate, useParams } from 'react-router'
import { errorMessage } from '../api/client'
import { useApi } from '../api/context'
import { Markdown } from '../results/Markdown'
import {
  ask,
  createConversation,
  deleteConversation,
  getConversation,
  listConversations,
  renameConversation,
  type ChatMessage,
  type Conversation,
} from './api'
import { HowMade } from './HowMade'

const defaultModels = ['madspark-debate', 'madspark-direct']

/** modelLabel names a chat model for people. */
export function modelLabel(id: string): string {
  if (id === 'madspark-debate') return 'Debate (routed by complexity)'
  if (id === 'madspark-direct') return 'Direct answer'
  return id
}

/** isSendKey tells whether a key press in the composer sends: Enter without Shift (Shift+Enter adds a line). */
export function isSendKey(e: Pick<KeyboardEvent, 'key' | 'shiftKey' | 'nativeEvent'>): boolean {
  return e.key === 'Enter' && !e.shiftKey && !(e.nativeEvent as { isComposing?: boolean }).isComposing
}

/** The answer being written, or the one that was stopped. */
interface Pending {
  text: string
  stopped?: boolean
}

/**
 * Chat is a conversation with the debate assistant: a sidebar of the kept
 * conversations, the messages, and a composer. Answers stream in as they
 * are written; Stop ends the run.
 */
export function Chat() {
  const api = useApi()
  const navigate = useNavigate()
  const { id } = useParams()
  const [list, setList] = useState<Conversation[]>([])
  const [models, setModels] = useState<string[]>(defaultModels)
  const [model, setModel] = useState(defaultModels[0])
  const [conv, setConv] = useState<Conversation>()
  const [pending, setPending] = useState<Pending>()
  const [busy, setBusy] = useState(false)
  const [input, setInput] = useState('')
  const [error, setError] = useState<string>()
  const [status, setStatus] = useState('')
  const abort = useRef<AbortController | null>(null)
  // A conversation this page created and already holds: not loaded again.
  const created = useRef<string | null>(null)
  const composer = useRef<HTMLTextAreaElement>(null)

  const refreshList = useCallback(() => {
    listConversations(api).then(
      (l) => {
        setList(l.conversations)
        if (l.models.length > 0) setModels(l.models)
      },
      (err) => setError(errorMessage(err)),
    )
  }, [api])
  useEffect(refreshList, [refreshList])

  useEffect(() => {
    setError(undefined)
    if (!id) {
      setConv(undefined)
      setPending(undefined)
      return
    }
    if (created.current === id) return
    created.current = null
    const ac = new AbortController()
    getConversation(api, id, ac.signal).then(
      (c) => {
        setConv(c)
        setModel(c.model || defaultModels[0])
        setPending(undefined)
      },
      (err) => {
        if (!ac.signal.aborted) setError(errorMessage(err))
      },
    )
    return () => ac.abort()
  }, [api, id])

  // Leaving the page stops an answer under way.
  useEffect(() => () => abort.current?.abort(), [])

  const run = async (c: Conversation, content: string | undefined) => {
    const ac = new AbortController()
    abort.current = ac
    setBusy(true)
    setError(undefined)
    setPending({ text: '' })
    setStatus('Answering…')
    let text = ''
    try {
      await ask(
        api,
        c.id,
        { content, model },
        {
          onQuestion: (q) =>
            setConv((cur) => cur && { ...cur, messages: [...cur.messages.filter((m) => m.seq > 0 && m.seq < q.seq), q] }),
          onDelta: (d) => {
            text += d
            setPending({ text })
          },
          onAnswer: (a) => {
            setConv((cur) => cur && { ...cur, messages: [...cur.messages.filter((m) => m.seq < a.seq), a] })
            setPending(undefined)
          },
        },
        ac.signal,
      )
      setStatus('Answer complete.')
    } catch (err) {
      if (ac.signal.aborted) {
        setPending({ text, stopped: true })
        setStatus('Stopped.')
      } else {
        setPending(text ? { text, stopped: true } : undefined)
        setError(errorMessage(err))
        setStatus('')
      }
    } finally {
      abort.current = null
      setBusy(false)
      refreshList()
      composer.current?.focus()
    }
  }

  const send = async (e?: FormEvent) => {
    e?.preventDefault()
    const content = input.trim()
    if (!content || busy) return
    let c = conv
    if (!c) {
      try {
        c = await createConversation(api, model)
      } catch (err) {
        setError(errorMessage(err))
        return
      }
      created.current = c.id
      navigate(`/chat/${encodeURIComponent(c.id)}`)
    }
    const optimistic: ChatMessage = { seq: 0, role: 'user', content, created_at: new Date().toISOString() }
    setConv({ ...c, messages: [...c.messages, optimistic] })
    setInput('')
    await run(c, content)
  }

  const regenerate = () => {
    if (!conv || busy) return
    setConv({ ...conv, messages: conv.messages.slice(0, lastQuestion(conv.messages) + 1) })
    void run(conv, undefined)
  }

  const copy = async (text: string) => {
    try {
      await navigator.clipboard.writeText(text)
      setStatus('Answer copied.')
    } catch {
      setStatus('Could not copy: the browser refused.')
    }
  }

  const onKey = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (isSendKey(e)) {
      e.preventDefault()
      void send()
    }
  }

  const msgs = conv?.messages ?? []
  const lastAnswer = msgs.length > 0 && msgs[msgs.length - 1].role === 'assistant' ? msgs.length - 1 : -1
  const canRegenerate = !busy && msgs.some((m) => m.role === 'user' && m.seq > 0)
  return (
    <div className="chat">
      <ConversationList
        list={list}
        current={id}
        onChanged={(deleted) => {
          refreshList()
          if (deleted && deleted === id) navigate('/chat')
        }}
      />
      <section className="chat-main" aria-labelledby="chat-heading">
        <h1 id="chat-heading">{list.find((c) => c.id === conv?.id)?.title || conv?.title || 'New chat'}</h1>
        <div className="chat-log" role="log" aria-label="Messages" data-testid="chat-log">
          {msgs.length === 0 && !pending && <p className="hint">Ask the debate assistant anything. Enter sends; Shift+Enter adds a line.</p>}
          {msgs.map((m, i) =>
            m.role === 'user' ? (
              <div key={`${m.seq}-${i}`} className="msg msg-user" data-testid="question">
                <h2 className="sr-only">You</h2>
                <p>{m.content}</p>
              </div>
            ) : (
              <article key={`${m.seq}-${i}`} className="msg msg-assistant" data-testid="answer">
                <h2 className="sr-only">Answer</h2>
                <Markdown source={m.content} />
                <div className="msg-actions">
                  <button type="button" onClick={() => void copy(m.content)}>
                    Copy
                  </button>
                  {i === lastAnswer && (
                    <button type="button" onClick={regenerate} disabled={!canRegenerate}>
                      Regenerate
                    </button>
                  )}
                  {m.model && <span className="muted">{modelLabel(m.model)}</span>}
                </div>
                {m.run_id && <HowMade runId={m.run_id} />}
              </article>
            ),
          )}
          {pending && (
            <article className="msg msg-assistant" aria-busy={busy} data-testid={busy ? 'streaming' : 'stopped'}>
              <h2 className="sr-only">Answer</h2>
              {pending.text ? <Markdown source={pending.text} /> : <p className="muted">Thinking…</p>}
              {pending.stopped && (
                <p className="muted">
                  Stopped; this partial answer is not kept.{' '}
                  <button type="button" onClick={regenerate} disabled={!canRegenerate}>
                    Regenerate
                  </button>
                </p>
              )}
            </article>
          )}
        </div>
        {error && (
          <p className="field-error" role="alert">
            {error}
          </p>
        )}
        <p className="sr-only" role="status">
          {status}
        </p>
        <form className="composer" onSubmit={(e) => void send(e)}>
          <label htmlFor="chat-input" className="sr-only">
            Your message
          </label>
          <textarea
            id="chat-input"
            ref={composer}
            rows={3}
            value={input}
            placeholder="Ask a question (Enter sends, Shift+Enter adds a line)"
            onChange={(e) => setInput(e.target.value)}
            onKeyDown={onKey}
          />
          <div className="composer-bar">
            <label>
              Model{' '}
              <select value={model} onChange={(e) => setModel(e.target.value)} disabled={busy}>
                {models.map((m) => (
                  <option key={m} value={m}>
                    {modelLabel(m)}
                  </option>
                ))}
              </select>
            </label>
            {busy ? (
              <button type="button" className="stop" onClick={() => abort.current?.abort()}>
                Stop
              </button>
            ) : (
              <button type="submit" disabled={!input.trim()}>
                Send
              </button>
            )}
          </div>
        </form>
      </section>
    </div>
  )
}

/** lastQuestion is the index of the last question. */
function lastQuestion(msgs: ChatMessage[]): number {
  for (let i = msgs.length - 1; i >= 0; i--) if (msgs[i].role === 'user') return i
  return -1
}

/** ConversationList is the sidebar: the kept conversations, renamed and deleted in place. */
function ConversationList({ list, current, onChanged }: { list: Conversation[]; current?: string; onChanged(deleted?: string): void }) {
  const api = useApi()
  const [editing, setEditing] = useState<string>()
  const [title, setTitle] = useState('')
  const [error, setError] = useState<string>()
  const rename = async (e: FormEvent, id: string) => {
    e.preventDefault()
    try {
      await renameConversation(api, id, title)
      setEditing(undefined)
      setError(undefined)
      onChanged()
    } catch (err) {
      setError(errorMessage(err))
    }
  }
  const remove = async (c: Conversation) => {
    if (!window.confirm(`Delete the conversation “${c.title || 'Untitled'}”?`)) return
    try {
      await deleteConversation(api, c.id)
      onChanged(c.id)
    } catch (err) {
      setError(errorMessage(err))
    }
  }
  return (
    <nav className="chat-side" aria-label="Conversations">
      <Link to="/chat" className="button new-chat">
        New chat
      </Link>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
      {list.length === 0 ? (
        <p className="muted">No conversations yet.</p>
      ) : (
        <ul data-testid="conversations">
          {list.map((c) => (
            <li key={c.id} className={c.id === current ? 'current' : undefined}>
              {editing === c.id ? (
                <form onSubmit={(e) => void rename(e, c.id)} className="rename">
                  <label htmlFor={`title-${c.id}`} className="sr-only">
                    New title
                  </label>
                  <input id={`title-${c.id}`} value={title} onChange={(e) => setTitle(e.target.value)} autoFocus maxLength={200} />
                  <button type="submit">Save</button>
                  <button type="button" onClick={() => setEditing(undefined)}>
                    Cancel
                  </button>
                </form>
              ) : (
                <>
                  <Link to={`/chat/${encodeURIComponent(c.id)}`} aria-current={c.id === current ? 'page' : undefined}>
                    {c.title || 'Untitled'}
                  </Link>
                  <span className="side-actions">
                    <button
                      type="button"
                      aria-label={`Rename “${c.title || 'Untitled'}”`}
                      onClick={() => {
                        setEditing(c.id)
                        setTitle(c.title)
                      }}
                    >
                      Rename
                    </button>
                    <button type="button" aria-label={`Delete “${c.title || 'Untitled'}”`} onClick={() => void remove(c)}>
                      Delete
                    </button>
                  </span>
                </>
              )}
            </li>
          ))}
        </ul>
      )}
    </nav>
  )
}
