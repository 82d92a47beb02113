import { Client } from '../api/client'

/** A request the fake server received. */
export interface Call {
  method: string
  url: URL
  headers: Headers
  body?: unknown
}

export type Route = (call: Call) => Response | Promise<Response>

/** json answers with a JSON body. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(status === 204 ? null : JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  })
}

/** apiError answers with the API's error shape. */
export function apiError(status: number, message: string, type: string, field?: string, extra: Record<string, unknown> = {}): Response {
  return json(status, { error: { message, type, ...(field ? { field } : {}) }, ...extra })
}

/**
 * fakeServer is a fetch that answers from routes keyed "METHOD /path"
 * (the path without its query), and records every call. An unrouted
 * request is a 404 in the API's error shape.
 */
export function fakeServer(routes: Record<string, Route>) {
  const calls: Call[] = []
  const fetch = async (input: RequestInfo | URL, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(String(input), 'http://madspark.test')
    const method = (init.method ?? 'GET').toUpperCase()
    const call: Call = {
      method,
      url,
      headers: new Headers(init.headers),
      body: typeof init.body === 'string' ? JSON.parse(init.body) : undefined,
    }
    calls.push(call)
    if (init.signal?.aborted) throw new DOMException('aborted', 'AbortError')
    const route = routes[`${method} ${url.pathname}`]
    if (!route) return apiError(404, `unknown URL: ${method} ${url.pathname}`, 'not_found')
    return route(call)
  }
  const client = (token?: string) => new Client({ fetch: fetch as typeof globalThis.fetch, token: () => token })
  return { fetch, calls, client }
}

/** sseBody is an SSE stream of the given events, then its end. */
export function sseBody(events: { id?: number; event?: string; data: unknown }[], opts: { split?: boolean } = {}): ReadableStream<Uint8Array> {
  const text = events
    .map((e) => (e.id !== undefined ? `id: ${e.id}\n` : '') + (e.event ? `event: ${e.event}\n` : '') + `data: ${JSON.stringify(e.data)}\n\n`)
    .join('')
  const enc = new TextEncoder()
  // Split mid-event too, as a network does.
  const chunks = opts.split ? text.match(/[\s\S]{1,7}/g) ?? [] : [text]
  return new ReadableStream({
    start(c) {
      for (const ch of chunks) c.enqueue(enc.encode(ch))
      c.close()
    },
  })
}

/** sse answers with an SSE stream. */
export function sse(events: { id?: number; event?: string; data: unknown }[], opts: { split?: boolean } = {}): Response {
  return new Response(sseBody(events, opts), { status: 200, headers: { 'Content-Type': 'text/event-stream' } })
}
