import { describe, expect, it, vi } from 'vitest'
import { ApiError, Client, errorMessage, filenameOf, query } from './client'
import { apiError, fakeServer, json, sse } from '../test/fake'
import { followRun } from '../progress/stream'
import type { ProgressMessage } from './types'

describe('Client', () => {
  it('sends JSON with the bearer token and reads JSON', async () => {
    const s = fakeServer({
      'POST /api/runs': () => json(202, { run_id: 'r1', status: 'queued' }),
    })
    const r = await s.client('s3cret').startRun('spark', { topic: 'urban farming', num_candidates: 3 }, ['a', 'b'])
    expect(r.run_id).toBe('r1')
    const c = s.calls[0]
    expect(c.headers.get('Authorization')).toBe('Bearer s3cret')
    expect(c.headers.get('Content-Type')).toBe('application/json')
    expect(c.body).toEqual({ pipeline: 'spark', params: { topic: 'urban farming', num_candidates: 3 }, tags: ['a', 'b'] })
  })

  it('sends no Authorization header without a token, and no tags when there are none', async () => {
    const s = fakeServer({ 'POST /api/runs': () => json(202, { run_id: 'r1', status: 'queued' }) })
    await s.client().startRun('chaos', { prompt: 'x' })
    expect(s.calls[0].headers.has('Authorization')).toBe(false)
    expect(s.calls[0].body).toEqual({ pipeline: 'chaos', params: { prompt: 'x' } })
  })

  it('turns an error answer into an ApiError naming the field, on one line', async () => {
    const s = fakeServer({
      'POST /api/runs': () => apiError(422, 'num_top_candidates (4) must not\n exceed num_candidates (3)', 'validation', 'params.num_top_candidates'),
    })
    const err = await s.client().startRun('spark', {}).catch((e) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect(err.status).toBe(422)
    expect(err.type).toBe('validation')
    expect(err.field).toBe('params.num_top_candidates')
    expect(err.message).toBe('num_top_candidates (4) must not exceed num_candidates (3)')
  })

  it('reads Retry-After on 429', async () => {
    const s = fakeServer({ 'GET /api/runs': () => apiError(429, 'too many requests', 'rate_limited', undefined) })
    const s2 = fakeServer({
      'GET /api/runs': () => new Response(JSON.stringify({ error: { message: 'too many requests', type: 'rate_limited' } }), { status: 429, headers: { 'Retry-After': '7' } }),
    })
    const e1 = await s.client().runs().catch((e) => e)
    expect(e1.retryAfter).toBeUndefined()
    const e2 = await s2.client().runs().catch((e) => e)
    expect(e2.retryAfter).toBe(7)
    expect(errorMessage(e2)).toBe('too many requests (try again in 7s)')
  })

  it('explains an answer that is not the API error shape', async () => {
    const s = fakeServer({ 'GET /api/pipelines': () => new Response('<html>bad gateway</html>', { status: 502, statusText: 'Bad Gateway' }) })
    const err = await s.client().pipelines().catch((e) => e)
    expect(err).toBeInstanceOf(ApiError)
    expect(err.message).toBe('the server answered 502 Bad Gateway')
    expect(err.type).toBe('internal')
  })

  it('reports an unreachable server as a network error', async () => {
    const c = new Client({ fetch: (() => Promise.reject(new TypeError('Failed to fetch'))) as typeof fetch })
    const err = await c.pipelines().catch((e) => e)
    expect(err.type).toBe('network')
    expect(err.message).toBe('cannot reach the server: Failed to fetch')
  })

  it('encodes filters, repeating tags and leaving out empty values', async () => {
    expect(query({ tag: ['a b', 'c'], q: '', limit: 20, offset: 0, status: undefined })).toBe('?tag=a+b&tag=c&limit=20&offset=0')
    expect(query({})).toBe('')
    const s = fakeServer({ 'GET /api/bookmarks': () => json(200, { bookmarks: [], total: 0, next_offset: null }) })
    await s.client().bookmarks({ tags: ['x', 'y'], limit: 5, offset: 10 })
    expect(s.calls[0].url.search).toBe('?tag=x&tag=y&limit=5&offset=10')
  })

  it('carries the duplicates of a refused bookmark', async () => {
    const dup = { recommendation: 'block', similar: [{ bookmark: { id: 'b1', idea_text: 'same idea' }, similarity: 0.96 }] }
    const s = fakeServer({ 'POST /api/bookmarks': () => apiError(409, 'a near-identical bookmark exists', 'conflict', undefined, { duplicates: dup }) })
    const err = await s.client().createBookmark({ run_id: 'r', candidate_index: 0 }).catch((e) => e)
    expect(err.status).toBe(409)
    expect(err.duplicates).toEqual(dup)
  })

  it('downloads an export under the name the server gives', async () => {
    const s = fakeServer({
      'GET /api/runs/abc/export': () =>
        new Response('a,b\n', { status: 200, headers: { 'Content-Type': 'text/csv', 'Content-Disposition': 'attachment; filename="madspark-spark-abcdefgh.csv"' } }),
    })
    const f = await s.client().exportRun('abc', 'csv')
    expect(f.filename).toBe('madspark-spark-abcdefgh.csv')
    expect(await f.blob.text()).toBe('a,b\n')
    expect(s.calls[0].url.searchParams.get('format')).toBe('csv')
  })

  it('parses Content-Disposition', () => {
    expect(filenameOf('attachment; filename="a b.md"')).toBe('a b.md')
    expect(filenameOf('attachment; filename=plain.pdf')).toBe('plain.pdf')
    expect(filenameOf("attachment; filename*=UTF-8''na%C3%AFve.json")).toBe('naïve.json')
    expect(filenameOf(null)).toBeUndefined()
  })

  it('builds WebSocket URLs from the page origin', () => {
    const c = new Client()
    expect(c.wsURL('r 1', 0, 'http://127.0.0.1:8080')).toBe('ws://127.0.0.1:8080/ws/runs/r%201')
    expect(c.wsURL('r1', 5, 'https://example.org')).toBe('wss://example.org/ws/runs/r1?after=5')
  })
})

/** FakeWebSocket is driven by the test: open, send messages, close. */
class FakeWebSocket {
  static last: FakeWebSocket | undefined
  url: string
  readyState = 0
  onopen: (() => void) | null = null
  onmessage: ((ev: { data: unknown }) => void) | null = null
  onclose: ((ev: { code: number }) => void) | null = null
  onerror: (() => void) | null = null
  closedWith?: number
  constructor(url: string) {
    this.url = url
    FakeWebSocket.last = this
  }
  open() {
    this.readyState = 1
    this.onopen?.()
  }
  send(m: Partial<ProgressMessage>) {
    this.onmessage?.({ data: JSON.stringify(m) })
  }
  close(code = 1000) {
    if (this.readyState === 3) return
    this.closedWith = code
    this.readyState = 3
    this.onclose?.({ code })
  }
  /** drop closes the connection as a network would. */
  drop() {
    this.readyState = 3
    this.onclose?.({ code: 1006 })
  }
}

const msg = (seq: number, type: ProgressMessage['type'], stage: string, progress: number, extra: Partial<ProgressMessage> = {}): ProgressMessage => ({
  type,
  seq,
  run_id: 'r1',
  stage,
  progress,
  message: stage,
  ...extra,
})

describe('followRun', () => {
  it('follows a run over the WebSocket and stops after the result', async () => {
    const s = fakeServer({})
    const got: ProgressMessage[] = []
    const transports: string[] = []
    followRun(s.client(), 'r1', { onMessage: (m) => got.push(m), onConnected: (t) => transports.push(t) }, { WebSocket: FakeWebSocket as unknown as typeof WebSocket })
    const ws = FakeWebSocket.last!
    expect(ws.url).toBe(`ws://${globalThis.location.host}/ws/runs/r1`)
    ws.open()
    ws.send(msg(1, 'progress', 'generate', 5))
    ws.send(msg(2, 'progress', 'evaluate', 20))
    ws.send(msg(3, 'result', 'done', 100, { data: { candidates: [] } }))
    ws.send(msg(4, 'progress', 'late', 100))
    expect(got.map((m) => m.seq)).toEqual([1, 2, 3])
    expect(transports).toEqual(['websocket'])
    expect(ws.closedWith).toBe(1000)
    expect(s.calls).toHaveLength(0)
  })

  it('falls back to SSE when the WebSocket cannot open, and resumes after the last message when it drops', async () => {
    const s = fakeServer({
      'GET /api/runs/r1/events': (c) => {
        const after = Number(c.url.searchParams.get('after') ?? 0)
        const all = [msg(1, 'progress', 'generate', 5), msg(2, 'progress', 'evaluate', 20), msg(3, 'progress', 'advocate', 45), msg(4, 'result', 'done', 100)]
        return sse(
          all.filter((m) => m.seq > after).map((m) => ({ id: m.seq, event: m.type, data: m })),
          { split: true },
        )
      },
    })
    // Refused: closed before it opened.
    const got: number[] = []
    const transports: string[] = []
    let done!: () => void
    const finished = new Promise<void>((r) => (done = r))
    followRun(
      s.client(),
      'r1',
      {
        onMessage: (m) => {
          got.push(m.seq)
          if (m.type === 'result') done()
        },
        onConnected: (t) => transports.push(t),
      },
      { WebSocket: FakeWebSocket as unknown as typeof WebSocket },
    )
    FakeWebSocket.last!.drop()
    await finished
    expect(got).toEqual([1, 2, 3, 4])
    expect(transports).toEqual(['sse'])
    expect(s.calls[0].headers.get('Accept')).toBe('text/event-stream')

    // Lost after two messages: SSE picks up after seq 2.
    const got2: number[] = []
    let done2!: () => void
    const finished2 = new Promise<void>((r) => (done2 = r))
    followRun(
      s.client(),
      'r1',
      {
        onMessage: (m) => {
          got2.push(m.seq)
          if (m.type === 'result') done2()
        },
      },
      { WebSocket: FakeWebSocket as unknown as typeof WebSocket },
    )
    const ws = FakeWebSocket.last!
    ws.open()
    ws.send(msg(1, 'progress', 'generate', 5))
    ws.send(msg(2, 'progress', 'evaluate', 20))
    ws.drop()
    await finished2
    expect(got2).toEqual([1, 2, 3, 4])
    const resumed = s.calls[1]
    expect(resumed.url.searchParams.get('after')).toBe('2')
    expect(resumed.headers.get('Last-Event-ID')).toBe('2')
  })

  it('uses SSE only when a token is set, since a browser cannot send it on a WebSocket', async () => {
    const s = fakeServer({ 'GET /api/runs/r1/events': () => sse([{ id: 1, data: msg(1, 'error', 'evaluate', 20, { message: 'provider failed' }) }]) })
    const ctor = vi.fn()
    let done!: (m: ProgressMessage) => void
    const last = new Promise<ProgressMessage>((r) => (done = r))
    followRun(s.client('tok'), 'r1', { onMessage: (m) => done(m) }, { WebSocket: ctor as unknown as typeof WebSocket })
    expect((await last).message).toBe('provider failed')
    expect(ctor).not.toHaveBeenCalled()
    expect(s.calls[0].headers.get('Authorization')).toBe('Bearer tok')
  })

  it('reconnects by itself, for as long as it takes, when the stream ends early or the server cannot be reached', async () => {
    // The stream ends after seq 1, then the server is down three times,
    // then it is back and the run ends.
    let n = 0
    const s = fakeServer({
      'GET /api/runs/r1/events': () => {
        n++
        if (n === 1) return sse([{ id: 1, data: msg(1, 'progress', 'generate', 5) }])
        if (n <= 4) throw new TypeError('Failed to fetch')
        return sse([{ id: 2, data: msg(2, 'progress', 'evaluate', 20) }, { id: 3, data: msg(3, 'result', 'done', 100) }])
      },
    })
    const got: number[] = []
    const events: string[] = []
    let done!: () => void
    const finished = new Promise<void>((r) => (done = r))
    followRun(
      s.client(),
      'r1',
      {
        onMessage: (m) => {
          got.push(m.seq)
          if (m.type === 'result') done()
        },
        onConnected: (t) => events.push(`connected ${t}`),
        onDisconnected: (why) => events.push(`lost: ${why}`),
        onError: (e) => events.push(`error ${e}`),
      },
      { WebSocket: null, retryDelays: [1, 2] },
    )
    await finished
    expect(got).toEqual([1, 2, 3])
    expect(events).toEqual([
      'connected sse',
      'lost: the progress stream ended before the run did',
      'lost: lost the progress stream: cannot reach the server: Failed to fetch',
      'lost: lost the progress stream: cannot reach the server: Failed to fetch',
      'lost: lost the progress stream: cannot reach the server: Failed to fetch',
      'connected sse',
    ])
    // Each attempt resumes after the last message received.
    expect(s.calls.map((c) => c.url.searchParams.get('after'))).toEqual([null, '1', '1', '1', '1'])
  })

  it('does not retry an unknown run', async () => {
    const s = fakeServer({})
    let fail!: (e: string) => void
    const failed = new Promise<string>((r) => (fail = r))
    followRun(s.client(), 'nope', { onMessage: () => {}, onError: fail }, { WebSocket: null, retryDelays: [1, 1, 1] })
    expect(await failed).toBe('unknown URL: GET /api/runs/nope/events')
    expect(s.calls).toHaveLength(1)
  })

  it('stops when asked', async () => {
    const s = fakeServer({})
    const got: number[] = []
    const stop = followRun(s.client(), 'r1', { onMessage: (m) => got.push(m.seq) }, { WebSocket: FakeWebSocket as unknown as typeof WebSocket })
    const ws = FakeWebSocket.last!
    ws.open()
    ws.send(msg(1, 'progress', 'generate', 5))
    stop()
    ws.send(msg(2, 'progress', 'evaluate', 20))
    expect(got).toEqual([1])
    expect(ws.closedWith).toBe(1000)
    expect(s.calls).toHaveLength(0)
  })
})
