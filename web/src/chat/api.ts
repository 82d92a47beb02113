import { createParser } from 'eventsource-parser'
import { ApiError, type Client } from '../api/client'
import type { Failure } from '../api/types'

// The conversations of /api/conversations (see the API's OpenAPI document).

export interface ChatMessage {
  seq: number
  /**
   * A question, an answer, the failure of an answer (its content the
   * error), or an answer stopped before it finished (its content what had
   * been written).
   */
  role: 'user' | 'assistant' | 'error' | 'stopped'
  content: string
  /** What kind of failure a failed answer was. */
  failure?: Failure
  /** The run that wrote an answer: its record says how it was made. */
  run_id?: string
  model?: string
  created_at: string
}

export interface Conversation {
  id: string
  title: string
  model: string
  created_at: string
  updated_at: string
  messages: ChatMessage[]
}

export interface ConversationList {
  conversations: Conversation[]
  /** The models that answer conversations, the default first. */
  models: string[]
  /** The longest question a message may hold, in bytes of UTF-8. */
  max_message_bytes?: number
  next_offset: number | null
}

const path = (id: string) => `/api/conversations/${encodeURIComponent(id)}`

async function json<T>(res: Response): Promise<T> {
  if (res.status === 204) return undefined as T
  return (await res.json()) as T
}

export async function listConversations(c: Client, signal?: AbortSignal): Promise<ConversationList> {
  return json(await c.request('GET', '/api/conversations?limit=200', undefined, signal))
}

export async function createConversation(c: Client, model?: string): Promise<Conversation> {
  return json(await c.request('POST', '/api/conversations', model ? { model } : {}))
}

export async function getConversation(c: Client, id: string, signal?: AbortSignal): Promise<Conversation> {
  return json(await c.request('GET', path(id), undefined, signal))
}

export async function renameConversation(c: Client, id: string, title: string): Promise<Conversation> {
  return json(await c.request('PATCH', path(id), { title }))
}

export async function deleteConversation(c: Client, id: string): Promise<void> {
  await c.request('DELETE', path(id))
}

/** A call of an answer failed with an error that may pass, and is sent again after a pause. */
export interface ChatRetry {
  /** The attempt about to be made: 2 for the first retry. */
  attempt: number
  /** The most attempts the call makes. */
  max_attempts?: number
  /** The pause before it, in ms. */
  delay_ms: number
  failure?: Failure
}

export interface AnswerHandlers {
  /** The question, as kept. */
  onQuestion(m: ChatMessage): void
  /** The answer's next piece. */
  onDelta(text: string): void
  /** A call of the answer is being tried again. */
  onRetry?(r: ChatRetry): void
  /** The answer, as kept. */
  onAnswer(m: ChatMessage): void
}

/**
 * ask posts a question (or, with content undefined, asks for the last
 * question to be answered again) and streams the answer to h. Aborting
 * signal stops the run on the server. It rejects with an ApiError when the
 * request is refused or the answer fails (its failure says what kind of
 * failure, and the server keeps it with the question), and with an
 * AbortError when stopped.
 */
export async function ask(
  c: Client,
  id: string,
  body: { content?: string; model?: string },
  h: AnswerHandlers,
  signal: AbortSignal,
): Promise<void> {
  const route = body.content === undefined ? '/regenerate' : '/messages'
  const res = await c.request('POST', path(id) + route, body, signal, { Accept: 'text/event-stream' })
  if (!res.body) throw new ApiError(0, 'the server sent no answer', 'internal')
  let failure: ApiError | undefined
  let answered = false
  const parser = createParser({
    onEvent(ev) {
      let data: unknown
      try {
        data = JSON.parse(ev.data)
      } catch {
        return
      }
      switch (ev.event) {
        case 'question':
          h.onQuestion(data as ChatMessage)
          break
        case 'delta':
          h.onDelta((data as { text: string }).text)
          break
        case 'retry':
          h.onRetry?.(data as ChatRetry)
          break
        case 'answer':
          answered = true
          h.onAnswer(data as ChatMessage)
          break
        case 'error': {
          const d = data as { error?: { message?: string; type?: string }; failure?: Failure }
          failure = new ApiError(502, d.error?.message ?? 'the answer failed', d.error?.type ?? 'internal', { failure: d.failure })
          break
        }
      }
    },
  })
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    parser.feed(value)
  }
  if (failure) throw failure
  if (!answered) throw new ApiError(0, 'the answer was cut off', 'network')
}
