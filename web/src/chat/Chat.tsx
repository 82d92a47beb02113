import { useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState, type FormEvent, type KeyboardEvent, type ReactNode } from 'react'
import { Link, useNavigate, useParams } from 'react-router'
import { ApiError } from '../api/client'
import { useApi } from '../api/context'
import { problemOf, problemOfError, retryWords, type Problem, type Where } from '../api/problems'
import { StartWarning, useStatus, whereOf } from '../api/status'
import { ProblemView } from '../components/ProblemView'
import { Markdown } from '../results/Markdown'
import {
  ask,
  createConversation,
  deleteConversation,
  getConversation,
  listConversations,
  renameConversation,
  type ChatMessage,
  type ChatRetry,
  type Conversation,
} from './api'
import { HowMade } from './HowMade'

const defaultModels = ['madspark-debate', 'madspark-direct']

/** The longest message the server takes when it does not say (bytes of UTF-8). */
export const defaultMaxMessageBytes = 32000

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

/** messageBytes is how long a message is as the server counts it: bytes of UTF-8. */
export function messageBytes(s: string): number {
  return new TextEncoder().encode(s).length
}

/** A question and what came of it. */
export interface Turn {
  question: ChatMessage
  /** Its answers, oldest first: each Regenerate adds one; the last is current. */
  answers: ChatMessage[]
  /** The failure of its last attempt, when no answer came after it. */
  failure?: ChatMessage
  /** The answer its last attempt had written when it was stopped, when no answer came after it. */
  stopped?: ChatMessage
}

/** turnsOf groups a conversation's messages by question: the last reply to each says how it stands. */
export function turnsOf(msgs: ChatMessage[]): Turn[] {
  const out: Turn[] = []
  for (const m of msgs) {
    if (m.role === 'user') {
      out.push({ question: m, answers: [] })
      continue
    }
    const t = out[out.length - 1]
    if (!t) continue
    if (m.role === 'assistant') {
      t.answers.push(m)
      t.failure = t.stopped = undefined
    } else if (m.role === 'stopped') {
      t.stopped = m
      t.failure = undefined
    } else {
      t.failure = m
      t.stopped = undefined
    }
  }
  return out
}

/** The answer being written. */
interface Pending {
  /** The question it answers: its seq, or 0 for a question not yet kept. */
  turn: number
  text: string
  /** A call of it is being tried again. */
  retry?: ChatRetry
}

/** local numbers the messages this page shows before the server has them: below 0, and never 0 (a question being sent). */
let local = -1

/**
 * Chat is a conversation with the debate assistant: a sidebar of the kept
 * conversations, the messages, and a composer. Answers stream in as they
 * are written; Stop ends the run. A failed answer keeps its question, says
 * what went wrong and offers Retry, also after a reload; Regenerate asks
 * the model again and keeps the answers it replaces (previous and next).
 */
export function Chat() {
  const api = useApi()
  const navigate = useNavigate()
  const { id } = useParams()
  const [list, setList] = useState<Conversation[]>([])
  const [models, setModels] = useState<string[]>(defaultModels)
  const [maxBytes, setMaxBytes] = useState(defaultMaxMessageBytes)
  const [model, setModel] = useState(defaultModels[0])
  const [conv, setConv] = useState<Conversation>()
  const [pending, setPending] = useState<Pending>()
  const [busy, setBusy] = useState(false)
  const [input, setInput] = useState('')
  // A problem of this page's own requests (the server out of reach, a
  // message refused), as opposed to a failed answer, which the
  // conversation keeps.
  const [problem, setProblem] = useState<Problem>()
  const [status, setStatus] = useState('')
  // The answer shown of each question with several, by the question's seq.
  const [shown, setShown] = useState<Record<number, number>>({})
  const abort = useRef<AbortController | null>(null)
  // A conversation this page created and already holds: not loaded again.
  const created = useRef<string | null>(null)
  const composer = useRef<HTMLTextAreaElement>(null)
  const serverStatus = useStatus()
  const where = whereOf(serverStatus.provider)
  const [drawer, setDrawer] = useState(false)
  const box = useChatHeight()
  const log = useStickyLog([conv, pending])

  const refreshList = useCallback(() => {
    listConversations(api).then(
      (l) => {
        setList(l.conversations)
        if (l.models.length > 0) setModels(l.models)
        if (l.max_message_bytes) setMaxBytes(l.max_message_bytes)
      },
      (err) => setProblem(problemOfError(err)),
    )
  }, [api])
  useEffect(refreshList, [refreshList])

  useEffect(() => {
    setProblem(undefined)
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
        setShown({})
      },
      (err) => {
        if (!ac.signal.aborted) setProblem(problemOfError(err))
      },
    )
    return () => ac.abort()
  }, [api, id])

  // Leaving the page stops an answer under way.
  useEffect(() => () => abort.current?.abort(), [])

  /**
   * run asks conversation c's model: content is a new question, undefined
   * the last question again (Regenerate, Retry). fresh is a conversation
   * made for this question, deleted if the question is refused.
   */
  const run = async (c: Conversation, content: string | undefined, fresh = false) => {
    const ac = new AbortController()
    abort.current = ac
    setBusy(true)
    setProblem(undefined)
    const last = c.messages.filter((m) => m.role === 'user').pop()
    let turn = content === undefined ? (last?.seq ?? 0) : 0
    setPending({ turn, text: '' })
    setStatus('Answering…')
    let text = ''
    let kept = false
    // Whatever the page held of the last attempt (its failure, a stopped
    // answer) gives way to the new attempt; a new question keeps the rest.
    const keep = (m: ChatMessage) => (content === undefined ? m.seq > 0 : m.seq !== 0)
    try {
      await ask(
        api,
        c.id,
        { content, model },
        {
          onQuestion: (q) => {
            kept = true
            turn = q.seq
            setPending((p) => p && { ...p, turn: q.seq })
            // A new question replaces its optimistic copy; one asked
            // again keeps the answers it had.
            setConv((cur) => cur && { ...cur, messages: content === undefined ? cur.messages.filter(keep) : [...cur.messages.filter(keep), q] })
            // The page stays where the person is: in the message box.
            if (fresh) navigate(`/chat/${encodeURIComponent(c.id)}`, { state: { keepFocus: true } })
          },
          onDelta: (d) => {
            text += d
            setPending({ turn, text })
          },
          onRetry: (r) => {
            setPending({ turn, text, retry: r })
            setStatus(retryWords(r.failure, r.delay_ms, r.attempt, where, r.max_attempts))
          },
          onAnswer: (a) => {
            setConv((cur) => cur && { ...cur, messages: [...cur.messages.filter((m) => m.seq !== 0 && m.seq < a.seq), a] })
            setShown((s) => {
              const n = { ...s }
              delete n[turn]
              return n
            })
            setPending(undefined)
          },
        },
        ac.signal,
      )
      setStatus('Answer complete.')
    } catch (err) {
      if (ac.signal.aborted) {
        // What was written is kept, as the server keeps it.
        setPending(undefined)
        const m: ChatMessage = { seq: local--, role: 'stopped', content: text, model, created_at: new Date().toISOString() }
        setConv((cur) => cur && { ...cur, messages: [...cur.messages.filter((x) => x.seq !== 0), m] })
        setStatus('Stopped; the partial answer is kept.')
      } else if (!kept) {
        // Refused before the question was kept: the text goes back to the
        // composer, and a conversation made for it goes away.
        setPending(undefined)
        setConv((cur) => cur && { ...cur, messages: cur.messages.filter((m) => m.seq !== 0) })
        if (content !== undefined) setInput((cur) => cur || content)
        if (fresh) {
          created.current = null
          setConv(undefined)
          void deleteConversation(api, c.id).catch(() => {})
        }
        setProblem(problemOfError(err))
        setStatus('')
      } else {
        setPending(undefined)
        // The server kept the failure with the question (role error);
        // without its failure (the stream was lost) the page says so.
        const failure = err instanceof ApiError ? err.failure : undefined
        const m: ChatMessage = { seq: local--, role: 'error', content: err instanceof Error ? err.message : String(err), failure, created_at: new Date().toISOString() }
        setConv((cur) => cur && { ...cur, messages: [...cur.messages, m] })
        if (!failure) setProblem(problemOfError(err))
        setStatus('The answer failed.')
        // A failure may have paused the provider: the page says so at once.
        serverStatus.refresh()
      }
    } finally {
      abort.current = null
      setBusy(false)
      refreshList()
      focusComposer()
    }
  }

  /** focusComposer puts the focus back in the message box, once the page has settled. */
  const focusComposer = () => requestAnimationFrame(() => composer.current?.focus())

  const used = useMemo(() => messageBytes(input), [input])
  const tooLong = used > maxBytes

  const send = async (e?: FormEvent) => {
    e?.preventDefault()
    const content = input.trim()
    if (!content || busy || tooLong) return
    let c = conv
    let fresh = false
    if (!c) {
      try {
        c = await createConversation(api, model)
      } catch (err) {
        setProblem(problemOfError(err))
        focusComposer()
        return
      }
      created.current = c.id
      fresh = true
    }
    const optimistic: ChatMessage = { seq: 0, role: 'user', content, created_at: new Date().toISOString() }
    setConv({ ...c, messages: [...c.messages, optimistic] })
    setInput('')
    await run(c, content, fresh)
  }

  const again = () => {
    if (!conv || busy) return
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

  const turns = turnsOf(conv?.messages ?? [])
  const lastTurn = turns.length - 1
  const title = list.find((c) => c.id === conv?.id)?.title || conv?.title || 'New chat'
  return (
    <div className="chat" ref={box}>
      <ConversationDrawer open={drawer} onClose={() => setDrawer(false)}>
        <ConversationList
          list={list}
          current={id}
          onOpen={() => setDrawer(false)}
          onChanged={(deleted) => {
            refreshList()
            if (deleted && deleted === id) navigate('/chat')
          }}
        />
      </ConversationDrawer>
      <section className="chat-main" aria-labelledby="chat-heading">
        <div className="chat-head">
          <button
            type="button"
            id="chat-drawer-toggle"
            className="chat-drawer-toggle"
            aria-expanded={drawer}
            aria-controls="chat-drawer"
            onClick={() => setDrawer((d) => !d)}
          >
            Conversations
          </button>
          <h1 id="chat-heading">{title}</h1>
        </div>
        <div className="chat-log" role="log" aria-label="Messages" data-testid="chat-log" tabIndex={0} ref={log}>
          {turns.length === 0 && !pending && <p className="hint">Ask the debate assistant anything. Enter sends; Shift+Enter adds a line.</p>}
          {turns.map((t, i) => (
            <TurnView
              key={`${t.question.seq}-${i}`}
              turn={t}
              last={i === lastTurn}
              busy={busy}
              where={where}
              pending={pending && (pending.turn === t.question.seq || (pending.turn === 0 && i === lastTurn)) ? pending : undefined}
              shown={shown[t.question.seq]}
              onShow={(n) => setShown((s) => ({ ...s, [t.question.seq]: n }))}
              onAgain={again}
              onCopy={(text) => void copy(text)}
            />
          ))}
        </div>
        {problem && <ProblemView problem={problem} testId="chat-problem" />}
        <StartWarning what="A question asked now" />
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
            aria-invalid={tooLong || undefined}
            aria-describedby="chat-length"
          />
          <p id="chat-length" className={tooLong ? 'field-error' : 'hint'} data-testid="chat-length" aria-live="polite">
            {tooLong
              ? `Too long to send: ${used.toLocaleString('en')} characters, over the limit of ${maxBytes.toLocaleString('en')}. Shorten it; your text stays here.`
              : `${used.toLocaleString('en')} / ${maxBytes.toLocaleString('en')} characters`}
          </p>
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
              <button type="submit" disabled={!input.trim() || tooLong}>
                Send
              </button>
            )}
          </div>
        </form>
      </section>
    </div>
  )
}

/** TurnView shows a question and its answer: the one being written, the chosen one of several, or why there is none. */
function TurnView(props: {
  turn: Turn
  last: boolean
  busy: boolean
  where?: Where
  pending?: Pending
  shown?: number
  onShow(n: number): void
  onAgain(): void
  onCopy(text: string): void
}) {
  const { turn: t, last, busy, pending } = props
  const writing = !!pending
  const n = t.answers.length
  const index = Math.min(props.shown ?? n - 1, n - 1)
  const answer = n > 0 ? t.answers[index] : undefined
  return (
    <>
      <div className="msg msg-user" data-testid="question">
        <h2 className="sr-only">You</h2>
        <p>{t.question.content}</p>
      </div>
      {writing ? (
        <article className="msg msg-assistant" aria-busy={busy} data-testid="streaming">
          <h2 className="sr-only">Answer</h2>
          {pending.text ? <Markdown source={pending.text} /> : !pending.retry && <p className="muted">Thinking…</p>}
          {pending.retry && (
            <p className="retrying" data-testid="answer-retrying">
              {retryWords(pending.retry.failure, pending.retry.delay_ms, pending.retry.attempt, props.where, pending.retry.max_attempts)}
            </p>
          )}
        </article>
      ) : (
        answer && (
          <article className="msg msg-assistant" data-testid="answer" data-run-id={answer.run_id}>
            <h2 className="sr-only">Answer</h2>
            <Markdown source={answer.content} />
            <div className="msg-actions">
              {n > 1 && (
                <span className="versions" role="group" aria-label="Answers to this question">
                  <button type="button" onClick={() => props.onShow(index - 1)} disabled={index === 0} aria-label="Previous answer">
                    ‹
                  </button>
                  <span data-testid="answer-version">
                    {index + 1} / {n}
                  </span>
                  <button type="button" onClick={() => props.onShow(index + 1)} disabled={index === n - 1} aria-label="Next answer">
                    ›
                  </button>
                </span>
              )}
              <button type="button" onClick={() => props.onCopy(answer.content)}>
                Copy
              </button>
              {last && !t.failure && (
                <button type="button" onClick={props.onAgain} disabled={busy}>
                  Regenerate
                </button>
              )}
              {answer.model && <span className="muted">{modelLabel(answer.model)}</span>}
            </div>
            {answer.run_id && <HowMade key={answer.run_id} runId={answer.run_id} />}
          </article>
        )
      )}
      {!writing && t.stopped && (
        <article className="msg msg-assistant msg-stopped" data-testid="stopped">
          <h2 className="sr-only">Answer, stopped</h2>
          {t.stopped.content && <Markdown source={t.stopped.content} />}
          <p className="muted">
            {t.stopped.content ? 'Stopped before it was finished: the partial answer is kept.' : 'Stopped before any of the answer was written.'}{' '}
            {last && (
              <button type="button" onClick={props.onAgain} disabled={busy}>
                Regenerate
              </button>
            )}
          </p>
        </article>
      )}
      {!writing && t.failure && (
        <ProblemView problem={problemOf(t.failure.failure, t.failure.content, props.where)} testId="answer-failed">
          {last ? (
            <button type="button" className="primary" onClick={props.onAgain} disabled={busy}>
              Retry
            </button>
          ) : (
            <span className="muted">This question was not answered.</span>
          )}
        </ProblemView>
      )}
      {!writing && !t.failure && !t.stopped && n === 0 && t.question.seq > 0 && (
        <p className="msg msg-note" data-testid="unanswered">
          This question has no answer: it was stopped or interrupted.{' '}
          {last && (
            <button type="button" onClick={props.onAgain} disabled={busy}>
              Retry
            </button>
          )}
        </p>
      )}
    </>
  )
}

/**
 * ConversationDrawer holds the conversations: beside the messages on a
 * wide screen; on a narrow one, a drawer that the Conversations button
 * opens over them, closed by its own button, Escape or a tap beside it.
 */
function ConversationDrawer({ open, onClose, children }: { open: boolean; onClose(): void; children: ReactNode }) {
  const close = useRef<HTMLButtonElement>(null)
  useEffect(() => {
    if (!open) return
    close.current?.focus()
    const onKey = (e: globalThis.KeyboardEvent) => {
      if (e.key === 'Escape') {
        onClose()
        document.getElementById('chat-drawer-toggle')?.focus()
      }
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [open, onClose])
  return (
    <>
      <div id="chat-drawer" className={open ? 'chat-drawer open' : 'chat-drawer'} data-testid="chat-drawer">
        <button
          ref={close}
          type="button"
          className="chat-drawer-close"
          onClick={() => {
            onClose()
            document.getElementById('chat-drawer-toggle')?.focus()
          }}
        >
          Close
        </button>
        {children}
      </div>
      {open && <div className="chat-backdrop" aria-hidden="true" onClick={onClose} />}
    </>
  )
}

/**
 * useChatHeight keeps the chat within the window: its height is what is
 * left below the header and banners, so that only the messages scroll
 * and the message box stays in view.
 */
function useChatHeight() {
  const box = useRef<HTMLDivElement>(null)
  useLayoutEffect(() => {
    const el = box.current
    if (!el) return
    const fit = () => {
      const top = `${Math.round(el.getBoundingClientRect().top + window.scrollY)}px`
      if (el.style.getPropertyValue('--chat-top') !== top) el.style.setProperty('--chat-top', top)
    }
    fit()
    window.addEventListener('resize', fit)
    const ro = typeof ResizeObserver === 'undefined' ? undefined : new ResizeObserver(fit)
    ro?.observe(document.body)
    // A banner shown or taken away above the page (mock mode, an outage)
    // moves the chat without always resizing the body.
    const mo = typeof MutationObserver === 'undefined' ? undefined : new MutationObserver(fit)
    mo?.observe(el.closest('main')?.parentElement ?? document.body, { childList: true })
    return () => {
      window.removeEventListener('resize', fit)
      ro?.disconnect()
      mo?.disconnect()
    }
  }, [])
  return box
}

/**
 * useStickyLog keeps the messages scrolled to the newest while the reader
 * is there (within a few lines of the end); one who scrolled up to read is
 * left where they are. deps are what changes the messages.
 */
function useStickyLog(deps: unknown[]) {
  const log = useRef<HTMLDivElement>(null)
  const atEnd = useRef(true)
  useEffect(() => {
    const el = log.current
    if (!el) return
    const onScroll = () => {
      atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80
    }
    el.addEventListener('scroll', onScroll)
    return () => el.removeEventListener('scroll', onScroll)
  }, [])
  useLayoutEffect(() => {
    const el = log.current
    if (el && atEnd.current) el.scrollTop = el.scrollHeight
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps)
  return log
}

/** ConversationList is the sidebar: the kept conversations, renamed and deleted in place. */
function ConversationList({ list, current, onOpen, onChanged }: { list: Conversation[]; current?: string; onOpen(): void; onChanged(deleted?: string): void }) {
  const api = useApi()
  const [editing, setEditing] = useState<string>()
  const [title, setTitle] = useState('')
  const [problem, setProblem] = useState<Problem>()
  const rename = async (e: FormEvent, id: string) => {
    e.preventDefault()
    try {
      await renameConversation(api, id, title)
      setEditing(undefined)
      setProblem(undefined)
      onChanged()
    } catch (err) {
      setProblem(problemOfError(err))
    }
  }
  const remove = async (c: Conversation) => {
    if (!window.confirm(`Delete the conversation “${c.title || 'Untitled'}”?`)) return
    try {
      await deleteConversation(api, c.id)
      onChanged(c.id)
    } catch (err) {
      setProblem(problemOfError(err))
    }
  }
  return (
    <nav className="chat-side" aria-label="Conversations">
      <Link to="/chat" className="button new-chat" onClick={onOpen}>
        New chat
      </Link>
      {problem && <ProblemView problem={problem} />}
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
                  <Link to={`/chat/${encodeURIComponent(c.id)}`} aria-current={c.id === current ? 'page' : undefined} onClick={onOpen}>
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
