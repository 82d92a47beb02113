// Types of madspark's HTTP API (docs: the API contract served at
// /api/openapi.json). Field names are the API's snake_case.

/** A JSON Schema, as much of it as the parameter forms read. */
export interface JSONSchema {
  type?: string | string[]
  title?: string
  description?: string
  default?: unknown
  enum?: unknown[]
  const?: unknown
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  multipleOf?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  properties?: Record<string, JSONSchema>
  additionalProperties?: boolean | JSONSchema
  required?: string[]
  /** A parameter the server sets, which no form shows. */
  readOnly?: boolean
  items?: JSONSchema
  minItems?: number
  maxItems?: number
  oneOf?: JSONSchema[]
  anyOf?: JSONSchema[]
  $ref?: string
  $defs?: Record<string, JSONSchema>
  definitions?: Record<string, JSONSchema>
}

export interface PipelineInfo {
  name: string
  title?: string
  description?: string
  params_schema: JSONSchema
  defaults?: Record<string, unknown>
}

/** BrokenPipeline is a pipeline file the server could not serve. */
export interface BrokenPipeline {
  file: string
  error: string
  problems?: string[]
}

/** PipelineList is the answer of GET /api/pipelines. */
export interface PipelineList {
  pipelines: PipelineInfo[]
  broken?: BrokenPipeline[]
}

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'interrupted'

export interface Usage {
  llm_calls?: number
  cached_calls?: number
  input_tokens?: number
  output_tokens?: number
  /** Null when a model has no known price (priced false). */
  cost_usd?: number | null
  priced?: boolean
}

/** A pipeline's own judgement of a run's result, such as a proposal's quality control. */
export interface Verdict {
  /** What judged it, in words ("quality control"). */
  check: string
  passed: boolean
  /** Why, in one line. */
  note: string
}

/** How a run came out beyond its status. */
export interface Outcome {
  verdict?: Verdict
  /** The run stopped before it finished and kept part of its result. */
  partial?: boolean
  /** Repairs made to the model's replies. */
  repairs?: number
}

/** The eval, batch or conversation a run was made for. */
export interface Parent {
  kind: 'eval' | 'batch' | 'chat'
  id: string
  /** Its name; empty when it is gone. */
  title: string
}

export interface RunSummary {
  run_id: string
  pipeline: string
  status: RunStatus
  mode: string
  provider?: string
  model?: string
  title?: string
  tags?: string[]
  created_at: string
  finished_at?: string | null
  /** How long a finished run took, its time in the queue included; null while it goes on. */
  duration_ms?: number | null
  usage?: Usage
  /** resumable: the run failed or was interrupted, and POST /api/runs/{id}/resume finishes it. */
  resumable?: boolean
  outcome?: Outcome
  parent?: Parent
}

export interface Progress {
  stage: string
  progress: number
  message?: string
}

/** The kinds of failure the server tells apart (package failure). */
export type FailureKind =
  | 'provider_error'
  | 'rate_limited'
  | 'provider_paused'
  | 'auth'
  | 'provider_refused'
  | 'network'
  | 'timeout'
  | 'search_unavailable'
  | 'params'
  | 'reply_unusable'
  | 'interrupted'
  | 'cancelled'
  | 'file'
  | 'json'
  | 'database'
  | 'unknown'

/** What kind of failure an error is, with what a message for people needs. */
export interface Failure {
  kind: FailureKind
  provider?: string
  status?: number
  /** When a paused provider is tried again (RFC 3339). */
  retry_at?: string
  /** The parameter at fault, for params. */
  field?: string
  /** What happened, in words, as the server says it (package failure): the one mapping from errors to words. */
  message?: string
  /** What to do about it, as the server says it; absent when there is nothing to say. */
  advice?: string
  /** The error itself. */
  detail: string
}

export interface Run extends RunSummary {
  params?: Record<string, unknown>
  /** The result once the run succeeded; for a cancelled run, what it had finished, if its pipeline keeps that. */
  result?: unknown
  error?: string | null
  failure?: Failure
  progress?: Progress | null
}

export interface Links {
  self: string
  events: string
  ws: string
}

export interface StartRunResponse {
  run_id: string
  status: RunStatus
  links?: Links
}

export interface RunPage {
  runs: RunSummary[]
  limit: number
  offset: number
  next_offset: number | null
}

export interface RunFilter {
  pipeline?: string
  status?: string
  q?: string
  limit?: number
  offset?: number
}

/** A progress message from /ws/runs/{id} or /api/runs/{id}/events. */
/**
 * The data of a run's retry message: a call of the run failed with an
 * error that may pass and is sent again after a pause; or, with ended, a
 * call that was retried ended.
 */
export interface RunRetry {
  /** Names the call among the run's: the messages of one call share it. */
  call: string
  agent?: string
  /** The attempt about to be made (2 for the first retry); for an ended call, the attempts it made. */
  attempt: number
  /** The most attempts the call makes. */
  max_attempts: number
  /** The pause before the attempt, in ms. */
  delay_ms: number
  /** What failed. */
  failure?: Failure
  /** How the call ended after its retries; absent while it is retried. */
  ended?: 'succeeded' | 'failed'
}

export interface ProgressMessage {
  type: 'progress' | 'retry' | 'result' | 'error'
  seq: number
  run_id?: string
  stage?: string
  progress?: number
  message?: string
  data?: unknown
}

export interface BookmarkMetadata {
  model_used?: string
  temperature?: number
  token_count?: number
}

export interface Bookmark {
  id: string
  run_id: string
  candidate_index: number
  idea_text: string
  improved_idea?: string
  topic: string
  context?: string
  score?: number
  improved_score?: number
  tags: string[]
  notes?: string
  created_at: string
  metadata?: BookmarkMetadata
}

export type Recommendation = 'allow' | 'warn' | 'block'

export interface SimilarBookmark {
  bookmark: Bookmark
  similarity: number
}

export interface Duplicates {
  recommendation: Recommendation
  similar: SimilarBookmark[]
}

export interface CreateBookmarkRequest {
  run_id: string
  candidate_index: number
  tags?: string[]
  notes?: string
  force?: boolean
}

export interface CreateBookmarkResponse {
  bookmark: Bookmark
  duplicates?: Duplicates
}

export interface BookmarkPage {
  bookmarks: Bookmark[]
  total: number
  next_offset: number | null
}

export interface RemixRequest {
  bookmark_ids: string[]
  topic?: string
  context?: string
  params?: Record<string, unknown>
}

export interface RoleTemperatures {
  idea_generation?: number
  evaluation?: number
  advocacy?: number
  skepticism?: number
  [role: string]: number | undefined
}

export interface TemperaturePresets {
  presets: Record<string, RoleTemperatures>
  default?: string
}

/** The provider this server calls and whether its calls go through (GET /api/provider). */
export interface ProviderStatus {
  mode: string
  provider: string
  model: string
  /** A model served on this machine or its network (the mock, Ollama, a local server), not a vendor's API. */
  local: boolean
  /** The host and port of a local server. */
  address?: string
  /** paused: failures in a row, calls fail at once until retry_at; trial: the next call decides. */
  state: 'ok' | 'paused' | 'trial'
  failures: number
  retry_at: string | null
  failure?: Failure
}

export interface HealthDetailed {
  status: string
  version?: string
  mode?: string
  provider_configured?: boolean
  provider?: string
  model?: string
}

export type ExportFormat = 'json' | 'csv' | 'markdown' | 'pdf'
export const exportFormats: ExportFormat[] = ['json', 'csv', 'markdown', 'pdf']

// The spark pipeline's result (its JSON contract).

export interface MultiDimensional {
  dimensions: Record<string, number>
  mean?: number
  weighted_score?: number
  rationale?: string
}

export interface LogicalInference {
  inference_chain?: string[]
  conclusion?: string
  confidence?: number
  contradictions?: string[]
  improvements?: string[]
}

export interface SparkCandidate {
  idea: string
  initial_score: number
  initial_critique?: string
  advocacy?: string
  skepticism?: string
  improved_idea?: string
  improved_score?: number
  improved_critique?: string
  score_delta?: number
  multi_dimensional_evaluation?: MultiDimensional
  improved_multi_dimensional_evaluation?: MultiDimensional
  logical_inference?: LogicalInference
  fallback?: boolean
  fallbacks?: { stage: string; reason: string }[]
}

export interface SparkResult {
  topic?: string
  context?: string
  generated?: number
  filtered?: number
  candidates: SparkCandidate[]
  /** Every generated idea, in the order it was generated. */
  ideas?: GeneratedIdea[]
}

/** One generated idea, with the critic's verdict when it was scored. */
export interface GeneratedIdea {
  title: string
  description: string
  score?: number
  critique?: string
  /** Its 1-based rank among the candidates; absent when it is not one. */
  candidate?: number
  /** The title of the kept idea the novelty filter found it a near-duplicate of. */
  duplicate_of?: string
}

/** Counts of a batch's rows by state. */
export interface BatchCounts {
  total: number
  pending: number
  running: number
  succeeded: number
  failed: number
  /** Rows whose run was cancelled on request: not failures. */
  cancelled?: number
  rejected: number
}

export interface BatchLinks {
  self: string
  events: string
  results: string
  export: string
}

/** A batch without its rows (GET /api/batches). */
export interface BatchSummary {
  batch_id: string
  pipeline: string
  source: string
  created_at: string
  counts: BatchCounts
  done: boolean
  links: BatchLinks
}

/** A row of a batch and the state of its run. */
export interface BatchItem {
  line: number
  topic: string
  tags?: string[]
  status: string
  run_id?: string
  error?: string
  progress?: number
  stage?: string
  /** A succeeded row's best-scored idea (its improved version), when its pipeline lists ideas. */
  best?: { text: string; score: number }
  /** How a row's run came out, once it ended. */
  outcome?: Outcome
}

/** A batch with its rows (GET /api/batches/{id}, and its progress events). */
export interface Batch extends BatchSummary {
  items: BatchItem[]
}

/** The answer of POST /api/batches. */
export interface CreateBatchResponse {
  batch_id: string
  pipeline: string
  source: string
  accepted: { line: number; topic: string; run_id: string }[]
  rejected: { line: number; topic?: string; reason: string }[]
  warnings?: string[]
  links: BatchLinks
}

/** One message of a prompt sent to a model. */
export interface PromptMessage {
  role: 'system' | 'user' | 'assistant' | string
  content: string
}

/**
 * One LLM request of a step (GET /api/runs/{id}/steps): a request sent to
 * the provider (each attempt of a retried one, the failed ones with their
 * error), a reply from the cache, or a request that failed before it was
 * sent.
 */
export interface CallView {
  agent: string
  provider: string
  model: string
  /** 1 for a first request, 2 and more for a re-ask of a reply that failed validation. */
  attempt: number
  /** Sends of this request before this one that failed with a transient error. */
  retries: number
  /** The request reached the provider and was paid for. */
  sent?: boolean
  cached: boolean
  input_tokens: number
  output_tokens: number
  /** Null when the model has no known price (priced false). */
  cost_usd: number | null
  priced?: boolean
  latency_ms: number
  temperature: number
  max_tokens?: number
  finish_reason?: string
  error?: string
  /** What the agent asked, the system prompt first. */
  prompt: PromptMessage[]
  /** The messages exactly as the provider sent them; empty when nothing was sent. */
  messages?: PromptMessage[]
  /** The structured-output setting sent with them (OpenAI's response_format), if any. */
  response_format?: unknown
  response: string
  started_at: string
}

/** A fix made to a reply so that it could be used. */
export interface RepairView {
  agent: string
  rule: string
  path?: string
  action: string
}

/** One step of a run, with its calls. */
export interface StepView {
  key: string
  agent: string
  model: string
  provider: string
  status: 'done' | 'failed' | 'cancelled' | string
  error?: string
  attempts: number
  cached: boolean
  llm_calls: number
  cached_calls: number
  input_tokens: number
  output_tokens: number
  cost_usd: number | null
  priced?: boolean
  latency_ms: number
  repairs: RepairView[]
  prompt: PromptMessage[]
  response: string
  started_at: string
  finished_at: string
  calls: CallView[]
}

/** The steps view of a run. */
export interface RunSteps {
  run_id: string
  pipeline: string
  status: RunStatus
  created_at: string
  steps: StepView[]
  /** The steps' usage summed: every request sent, once. */
  usage?: Usage
}

/** One eval of a comparison. */
export interface EvalSummary {
  run_id: string
  pipeline: string
  provider: string
  model: string
  judge_provider: string
  judge_model: string
  n: number
  wins: number
  losses: number
  ties: number
  win_rate: number
  ci: [number, number]
}

/** Two evals side by side (GET /api/evals/compare). */
export interface EvalComparison {
  a: EvalSummary
  b: EvalSummary
  /** B's win rate minus A's. */
  difference: number
  intervals_overlap: boolean
  items: { topic: string; a: string; b: string }[]
  notice?: string
}

/** The body of POST /api/evals. */
export interface StartEvalRequest {
  pipeline: string
  topics: 'builtin' | (string | Record<string, unknown>)[]
  limit?: number
  judge_provider?: string
  judge_model?: string
  fresh?: boolean
}

/** The answer of POST /api/bookmarks/import. */
export interface ImportResult {
  imported: number
  skipped: number
}
