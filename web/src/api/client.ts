import type {
  Batch,
  Bookmark,
  BatchSummary,
  BookmarkPage,
  CreateBatchResponse,
  CreateBookmarkRequest,
  CreateBookmarkResponse,
  Duplicates,
  EvalComparison,
  Failure,
  ImportResult,
  ExportFormat,
  HealthDetailed,
  PipelineInfo,
  PipelineList,
  ProviderStatus,
  RemixRequest,
  Run,
  RunFilter,
  RunPage,
  RunSteps,
  RunSummary,
  StartEvalRequest,
  StartRunResponse,
  TemperaturePresets,
} from './types'

/**
 * ApiError is an error answer of the API: its one-line message, its type
 * (validation, not_found, …) and, when one field is at fault, that field
 * ("params.num_top_candidates").
 */
export class ApiError extends Error {
  readonly status: number
  readonly type: string
  readonly field?: string
  /** Seconds to wait before retrying, from Retry-After on a 429. */
  readonly retryAfter?: number
  /** The duplicates of a bookmark that was refused (409, recommendation block). */
  readonly duplicates?: Duplicates
  /** What kind of failure ended a streamed answer. */
  readonly failure?: Failure

  constructor(
    status: number,
    message: string,
    type: string,
    opts: { field?: string; retryAfter?: number; duplicates?: Duplicates; failure?: Failure } = {},
  ) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.type = type
    this.field = opts.field
    this.retryAfter = opts.retryAfter
    this.duplicates = opts.duplicates
    this.failure = opts.failure
  }
}

/** oneLine collapses whitespace so that a message fits on one line. */
export function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim()
}

/** errorMessage is the one line to show for any error. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 429 && err.retryAfter !== undefined) {
      return `${err.message} (try again in ${err.retryAfter}s)`
    }
    return err.message
  }
  if (err instanceof Error) {
    return oneLine(err.message) || err.name
  }
  return oneLine(String(err))
}

export interface ClientOptions {
  /** Origin and path prefix of the API; '' means the page's own origin. */
  baseUrl?: string
  /** The bearer token, when the server requires one. */
  token?: () => string | undefined
  fetch?: typeof fetch
}

/** A downloaded export. */
export interface ExportFile {
  blob: Blob
  filename: string
}

const statusTypes: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  404: 'not_found',
  409: 'conflict',
  413: 'too_large',
  422: 'validation',
  429: 'rate_limited',
}

/** Client speaks madspark's HTTP API. */
export class Client {
  private readonly base: string
  private readonly token: () => string | undefined
  private readonly doFetch: typeof fetch
  private readonly reachListeners = new Set<(reached: boolean) => void>()

  constructor(opts: ClientOptions = {}) {
    this.base = (opts.baseUrl ?? '').replace(/\/$/, '')
    this.token = opts.token ?? (() => undefined)
    const f = opts.fetch ?? globalThis.fetch
    this.doFetch = async (input, init) => {
      try {
        const res = await f(input, init)
        this.reached(true)
        return res
      } catch (err) {
        if (!(err instanceof DOMException && err.name === 'AbortError')) this.reached(false)
        throw err
      }
    }
  }

  /**
   * onReach calls listener with true whenever the server answers a
   * request, and false whenever a request cannot reach it; the returned
   * function stops that.
   */
  onReach(listener: (reached: boolean) => void): () => void {
    this.reachListeners.add(listener)
    return () => this.reachListeners.delete(listener)
  }

  private reached(ok: boolean) {
    for (const l of this.reachListeners) l(ok)
  }

  /** hasToken reports whether requests carry a bearer token. */
  hasToken(): boolean {
    return !!this.token()
  }

  /** url is the absolute or origin-relative URL of an API path. */
  url(path: string): string {
    return this.base + path
  }

  /** headers are the headers every request carries. */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    const h: Record<string, string> = { ...extra }
    const t = this.token()
    if (t) h['Authorization'] = `Bearer ${t}`
    return h
  }

  /** request sends one request and returns its response, throwing ApiError on a 4xx/5xx. */
  async request(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    accept: Record<string, string> = { Accept: 'application/json' },
  ): Promise<Response> {
    const init: RequestInit = { method, headers: this.headers(accept), signal }
    if (body !== undefined) {
      init.body = JSON.stringify(body)
      ;(init.headers as Record<string, string>)['Content-Type'] = 'application/json'
    }
    let res: Response
    try {
      res = await this.doFetch(this.url(path), init)
    } catch (err) {
      if (err instanceof DOMException && err.name === 'AbortError') throw err
      throw new ApiError(0, `cannot reach the server: ${errorMessage(err)}`, 'network')
    }
    if (!res.ok) throw await toApiError(res)
    return res
  }

  private async json<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const res = await this.request(method, path, body, signal)
    if (res.status === 204) return undefined as T
    try {
      return (await res.json()) as T
    } catch {
      throw new ApiError(res.status, `the server's answer to ${method} ${path} is not JSON`, 'internal')
    }
  }

  async pipelines(signal?: AbortSignal): Promise<PipelineInfo[]> {
    return (await this.pipelineList(signal)).pipelines
  }

  /** pipelineList is the pipelines served and the pipeline files that could not be. */
  async pipelineList(signal?: AbortSignal): Promise<Required<PipelineList>> {
    const r = await this.json<PipelineList>('GET', '/api/pipelines', undefined, signal)
    return { pipelines: r.pipelines ?? [], broken: r.broken ?? [] }
  }

  temperaturePresets(signal?: AbortSignal): Promise<TemperaturePresets> {
    return this.json('GET', '/api/temperature-presets', undefined, signal)
  }

  health(signal?: AbortSignal): Promise<HealthDetailed> {
    return this.json('GET', '/health/detailed', undefined, signal)
  }

  /** provider says which provider the server calls and whether its calls are paused. */
  provider(signal?: AbortSignal): Promise<ProviderStatus> {
    return this.json('GET', '/api/provider', undefined, signal)
  }

  startRun(pipeline: string, params: Record<string, unknown>, tags?: string[]): Promise<StartRunResponse> {
    const body: Record<string, unknown> = { pipeline, params }
    if (tags && tags.length > 0) body.tags = tags
    return this.json('POST', '/api/runs', body)
  }

  runs(f: RunFilter = {}, signal?: AbortSignal): Promise<RunPage> {
    return this.json('GET', '/api/runs' + query({ ...f }), undefined, signal)
  }

  run(id: string, signal?: AbortSignal): Promise<Run> {
    return this.json('GET', `/api/runs/${encodeURIComponent(id)}`, undefined, signal)
  }

  /** runSteps returns a run's steps and their LLM calls; steps appear as they finish. */
  runSteps(id: string, signal?: AbortSignal): Promise<RunSteps> {
    return this.json('GET', `/api/runs/${encodeURIComponent(id)}/steps`, undefined, signal)
  }

  cancelRun(id: string): Promise<{ run_id: string; status: string }> {
    return this.json('DELETE', `/api/runs/${encodeURIComponent(id)}`)
  }

  /** resumeRun queues a failed or interrupted run to finish; its finished steps are not paid again. */
  resumeRun(id: string): Promise<RunSummary> {
    return this.json('POST', `/api/runs/${encodeURIComponent(id)}/resume`)
  }

  /** exportRun downloads a run in one format, named as the server names it. */
  async exportRun(id: string, format: ExportFormat): Promise<ExportFile> {
    const res = await this.request('GET', `/api/runs/${encodeURIComponent(id)}/export?format=${format}`)
    const blob = await res.blob()
    return { blob, filename: filenameOf(res.headers.get('Content-Disposition')) ?? `madspark-${id.slice(0, 8)}.${extension(format)}` }
  }

  /** markdown returns a run's Markdown export as text. */
  async markdown(id: string, signal?: AbortSignal): Promise<string> {
    const res = await this.request('GET', `/api/runs/${encodeURIComponent(id)}/export?format=markdown`, undefined, signal)
    return res.text()
  }

  /**
   * createBookmark saves a candidate of a run. A near-identical bookmark
   * makes the API refuse (409) unless force is set: the ApiError then
   * carries the duplicates.
   */
  createBookmark(req: CreateBookmarkRequest): Promise<CreateBookmarkResponse> {
    return this.json('POST', '/api/bookmarks', req)
  }

  bookmarks(opts: { tags?: string[]; runId?: string; limit?: number; offset?: number } = {}, signal?: AbortSignal): Promise<BookmarkPage> {
    return this.json('GET', '/api/bookmarks' + query({ tag: opts.tags, run_id: opts.runId, limit: opts.limit, offset: opts.offset }), undefined, signal)
  }

  bookmark(id: string, signal?: AbortSignal): Promise<Bookmark> {
    return this.json('GET', `/api/bookmarks/${encodeURIComponent(id)}`, undefined, signal)
  }

  /** exportBookmarks downloads every bookmark as the seed's bookmarks.json. */
  async exportBookmarks(): Promise<ExportFile> {
    const res = await this.request('GET', '/api/bookmarks/export')
    return { blob: await res.blob(), filename: filenameOf(res.headers.get('Content-Disposition')) ?? 'bookmarks.json' }
  }

  /** importBookmarks adds the bookmarks of a bookmarks.json file; those kept already are skipped. */
  async importBookmarks(file: Blob): Promise<ImportResult> {
    let body: unknown
    try {
      body = JSON.parse(await file.text())
    } catch {
      throw new ApiError(400, 'the file is not JSON: choose a bookmarks.json file exported from madspark', 'invalid_request')
    }
    return this.json('POST', '/api/bookmarks/import', body)
  }

  /** startEval queues an eval: a pipeline against a single call to the same model. */
  startEval(req: StartEvalRequest): Promise<StartRunResponse> {
    return this.json('POST', '/api/evals', req)
  }

  /** compareEvals sets two succeeded evals side by side. */
  compareEvals(a: string, b: string, signal?: AbortSignal): Promise<EvalComparison> {
    return this.json('GET', '/api/evals/compare' + query({ a, b }), undefined, signal)
  }

  searchBookmarks(
    opts: { q: string; tags?: string[]; limit?: number; offset?: number },
    signal?: AbortSignal,
  ): Promise<BookmarkPage> {
    return this.json(
      'GET',
      '/api/bookmarks/search' + query({ q: opts.q, tag: opts.tags, limit: opts.limit, offset: opts.offset }),
      undefined,
      signal,
    )
  }

  /** updateBookmark sets a bookmark's tags, its notes or both; what is left out is kept. */
  updateBookmark(id: string, change: { tags?: string[]; notes?: string }): Promise<Bookmark> {
    return this.json('PATCH', `/api/bookmarks/${encodeURIComponent(id)}`, change)
  }

  deleteBookmark(id: string): Promise<void> {
    return this.json('DELETE', `/api/bookmarks/${encodeURIComponent(id)}`)
  }

  remix(req: RemixRequest): Promise<StartRunResponse> {
    return this.json('POST', '/api/bookmarks/remix', req)
  }

  /**
   * createBatch uploads a batch file (CSV or JSON) as a form, every row a
   * run of pipeline.
   */
  async createBatch(pipeline: string, file: Blob, filename: string): Promise<CreateBatchResponse> {
    const form = new FormData()
    form.append('file', file, filename)
    let res: Response
    try {
      res = await this.doFetch(this.url('/api/batches' + query({ pipeline })), {
        method: 'POST',
        headers: this.headers({ Accept: 'application/json' }),
        body: form,
      })
    } catch (err) {
      throw new ApiError(0, `cannot reach the server: ${errorMessage(err)}`, 'network')
    }
    if (!res.ok) throw await toApiError(res)
    return (await res.json()) as CreateBatchResponse
  }

  async batches(opts: { limit?: number; offset?: number } = {}, signal?: AbortSignal): Promise<BatchSummary[]> {
    const r = await this.json<{ batches: BatchSummary[] }>('GET', '/api/batches' + query({ ...opts }), undefined, signal)
    return r.batches ?? []
  }

  batch(id: string, signal?: AbortSignal): Promise<Batch> {
    return this.json('GET', `/api/batches/${encodeURIComponent(id)}`, undefined, signal)
  }

  cancelBatch(id: string): Promise<{ batch_id: string; cancelled: number }> {
    return this.json('DELETE', `/api/batches/${encodeURIComponent(id)}`)
  }

  /** batchEvents opens the SSE stream of a batch's progress. */
  batchEvents(id: string, signal?: AbortSignal): Promise<Response> {
    return this.request('GET', `/api/batches/${encodeURIComponent(id)}/events`, undefined, signal, { Accept: 'text/event-stream' })
  }

  /**
   * batchFile downloads a batch's results document (results), its results
   * as a spreadsheet (results-csv) or the zip of its exports (export).
   */
  async batchFile(id: string, which: 'results' | 'results-csv' | 'export'): Promise<ExportFile> {
    const path = which === 'results-csv' ? 'results?format=csv' : which
    const res = await this.request('GET', `/api/batches/${encodeURIComponent(id)}/${path}`, undefined, undefined, { Accept: '*/*' })
    const blob = await res.blob()
    const ext = { results: '-results.json', 'results-csv': '-results.csv', export: '.zip' }[which]
    return { blob, filename: filenameOf(res.headers.get('Content-Disposition')) ?? `madspark-batch-${id.slice(-8)}${ext}` }
  }

  /**
   * events opens the SSE stream of a run's progress after message seq
   * (sent both as ?after= and as Last-Event-ID).
   */
  events(id: string, after: number, signal?: AbortSignal): Promise<Response> {
    const h: Record<string, string> = { Accept: 'text/event-stream' }
    if (after > 0) h['Last-Event-ID'] = String(after)
    return this.request('GET', this.eventsPath(id, after), undefined, signal, h)
  }

  private eventsPath(id: string, after: number): string {
    return `/api/runs/${encodeURIComponent(id)}/events` + (after > 0 ? `?after=${after}` : '')
  }

  /** eventsURL is the SSE stream of a run's progress, after message seq. */
  eventsURL(id: string, after = 0): string {
    return this.url(this.eventsPath(id, after))
  }

  /** wsURL is the WebSocket of a run's progress, after message seq. */
  wsURL(id: string, after = 0, origin: string = globalThis.location?.origin ?? 'http://localhost'): string {
    const u = new URL(this.url(`/ws/runs/${encodeURIComponent(id)}`), origin)
    u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:'
    if (after > 0) u.searchParams.set('after', String(after))
    return u.toString()
  }
}

/** query encodes defined values as a query string; arrays repeat the key. */
export function query(params: Record<string, string | number | string[] | undefined | null>): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue
    if (Array.isArray(v)) {
      for (const x of v) if (x !== '') q.append(k, x)
    } else {
      q.set(k, String(v))
    }
  }
  const s = q.toString()
  return s ? '?' + s : ''
}

/** toApiError reads an error answer: the API's JSON error, or the status line. */
export async function toApiError(res: Response): Promise<ApiError> {
  const retry = res.headers.get('Retry-After')
  const retryAfter = retry !== null && /^\d+$/.test(retry.trim()) ? Number(retry) : undefined
  let body: unknown
  try {
    body = await res.json()
  } catch {
    body = undefined
  }
  const e = (body as { error?: { message?: unknown; type?: unknown; field?: unknown } } | undefined)?.error
  const fallbackType = statusTypes[res.status] ?? (res.status >= 500 ? 'internal' : 'invalid_request')
  if (e && typeof e.message === 'string') {
    return new ApiError(res.status, oneLine(e.message), typeof e.type === 'string' ? e.type : fallbackType, {
      field: typeof e.field === 'string' && e.field !== '' ? e.field : undefined,
      retryAfter,
      duplicates: (body as { duplicates?: Duplicates }).duplicates,
    })
  }
  const text = `${res.status} ${res.statusText}`.trim()
  return new ApiError(res.status, `the server answered ${text}`, fallbackType, { retryAfter })
}

/** filenameOf reads the file name of a Content-Disposition header. */
export function filenameOf(cd: string | null): string | undefined {
  if (!cd) return undefined
  const star = /filename\*\s*=\s*UTF-8''([^;]+)/i.exec(cd)
  if (star) {
    try {
      return decodeURIComponent(star[1].trim())
    } catch {
      // fall through to the plain parameter
    }
  }
  const m = /filename\s*=\s*(?:"([^"]*)"|([^;]+))/i.exec(cd)
  const name = m?.[1] ?? m?.[2]?.trim()
  return name || undefined
}

function extension(f: ExportFormat): string {
  return f === 'markdown' ? 'md' : f
}
