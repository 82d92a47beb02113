import { createParser } from 'eventsource-parser'
import { ApiError, errorMessage, type Client } from '../api/client'
import type { ProgressMessage } from '../api/types'
import type { Transport } from './reducer'

export interface FollowHandlers {
  /** A progress, result or error message, in order (possibly replayed twice). */
  onMessage(m: ProgressMessage): void
  /** The stream is open over transport (again, after onDisconnected). */
  onConnected?(transport: Transport): void
  /**
   * The stream was lost, or could not be opened (the server is restarting,
   * say); it is being opened again, after the last message received, until
   * it is or the run is over.
   */
  onDisconnected?(message: string): void
  /** The stream was refused for good (an unknown run, a refused token); the run may still be going. */
  onError?(message: string): void
}

export interface FollowOptions {
  /** The WebSocket constructor; undefined or null means SSE only. */
  WebSocket?: typeof WebSocket | null
  /** Delays between reconnection attempts, in ms; the last one repeats for as long as it takes. */
  retryDelays?: number[]
}

const defaultRetryDelays = [250, 500, 1000, 2000]

/**
 * followRun streams a run's progress: over the WebSocket /ws/runs/{id}
 * first, and over SSE (/api/runs/{id}/events) when the WebSocket cannot be
 * opened or is lost, resuming after the last message received. A stream
 * that is lost, or cannot be opened, is opened again by itself, for as
 * long as it takes (a server restarting comes back), pausing a little
 * longer each time up to the last of retryDelays. It stops after the final
 * result or error message, on a refusal that retrying cannot help (a 4xx
 * but 429), or when the returned function is called.
 *
 * A browser cannot send an Authorization header on a WebSocket, so when the
 * client has a token SSE (a fetch that can) is used from the start.
 */
export function followRun(client: Client, runId: string, h: FollowHandlers, opts: FollowOptions = {}): () => void {
  const WS = opts.WebSocket === undefined ? globalThis.WebSocket : opts.WebSocket
  const delays = opts.retryDelays ?? defaultRetryDelays
  const abort = new AbortController()
  let lastSeq = 0
  let finished = false
  let socket: WebSocket | undefined

  const deliver = (m: ProgressMessage) => {
    if (finished || abort.signal.aborted) return
    if (typeof m.seq === 'number' && m.seq > lastSeq) lastSeq = m.seq
    if (m.type === 'result' || m.type === 'error') finished = true
    h.onMessage(m)
  }

  const parse = (text: string): ProgressMessage | undefined => {
    try {
      const m = JSON.parse(text) as ProgressMessage
      return m && typeof m.type === 'string' ? m : undefined
    } catch {
      return undefined
    }
  }

  const sse = async (attempt = 0) => {
    while (!finished && !abort.signal.aborted) {
      try {
        const res = await client.events(runId, lastSeq, abort.signal)
        if (!res.body) throw new Error('the event stream has no body')
        h.onConnected?.('sse')
        const parser = createParser({
          onEvent(ev) {
            const m = parse(ev.data)
            if (m) {
              // A stream that delivers earns a fresh set of delays.
              attempt = 0
              deliver(m)
            }
          },
        })
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
        for (;;) {
          const { value, done } = await reader.read()
          if (done) break
          parser.feed(value)
          if (finished) {
            await reader.cancel().catch(() => {})
            break
          }
        }
        if (finished || abort.signal.aborted) return
        h.onDisconnected?.('the progress stream ended before the run did')
      } catch (err) {
        if (abort.signal.aborted) return
        // An unknown run or a refused request will not get better by retrying.
        if (err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429) {
          h.onError?.(errorMessage(err))
          return
        }
        h.onDisconnected?.(`lost the progress stream: ${errorMessage(err)}`)
      }
      if (finished || abort.signal.aborted) return
      await sleep(delays[Math.min(attempt++, delays.length - 1)], abort.signal)
    }
  }

  const websocket = (Ctor: typeof WebSocket) => {
    let ws: WebSocket
    try {
      ws = new Ctor(client.wsURL(runId, lastSeq))
    } catch {
      void sse()
      return
    }
    socket = ws
    let opened = false
    ws.onopen = () => {
      opened = true
      h.onConnected?.('websocket')
    }
    ws.onmessage = (ev: MessageEvent) => {
      if (typeof ev.data !== 'string') return
      const m = parse(ev.data)
      if (!m) return
      deliver(m)
      if (finished) ws.close(1000)
    }
    ws.onclose = () => {
      socket = undefined
      if (finished || abort.signal.aborted) return
      // Refused on the way to the server, or lost: carry on over SSE from
      // the last message received.
      if (opened) h.onDisconnected?.('lost the progress stream')
      void sse()
    }
  }

  if (WS && !client.hasToken()) {
    websocket(WS)
  } else {
    void sse()
  }

  return () => {
    abort.abort()
    finished = true
    if (socket && socket.readyState <= 1) socket.close(1000)
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t)
        resolve()
      },
      { once: true },
    )
  })
}
