import type { Progress, ProgressMessage, RunRetry } from '../api/types'
import { requeueReason } from './words'

export { stageLabel } from './words'

/** A stage as the progress display shows it. */
export interface StageState {
  name: string
  /** interrupted: the run stopped during it (its process was lost) and was queued again. */
  status: 'active' | 'done' | 'failed' | 'cancelled' | 'interrupted'
  /** The run's overall progress when the stage last reported, 0-100. */
  progress: number
  message: string
}

export type Phase = 'idle' | 'connecting' | 'running' | 'succeeded' | 'failed' | 'cancelled' | 'interrupted'
export type Transport = 'websocket' | 'sse'

/** The state of the live stream: being opened, open, or lost and being opened again. */
export type Connection = 'connecting' | 'live' | 'reconnecting'

export interface ProgressState {
  phase: Phase
  transport?: Transport
  /** The highest sequence number applied; replays at or below it are ignored. */
  lastSeq: number
  /** Overall progress 0-100; it never goes back. */
  progress: number
  stage?: string
  message?: string
  stages: StageState[]
  /** Remarks that do not move the progress, such as a fallback being used. */
  notes: { stage: string; message: string }[]
  result?: unknown
  error?: string
  /** A problem with the stream itself (not the run), such as a lost connection. */
  streamError?: string
  /** The stages shown come from the run record's snapshot, until the stream's own messages replace them. */
  fromSnapshot?: boolean
  connection?: Connection
  /**
   * The run went back to the queue while it ran (its worker stopped or was
   * lost): why, in words, and whether it has resumed since.
   */
  requeued?: { why: string; resumed: boolean }
  /**
   * The calls being tried again now, by call, the latest last: each is
   * added by its retry message and dropped by the one that says it ended,
   * and all are when the run ends.
   */
  retrying: RunRetry[]
}

export type ProgressAction =
  | { type: 'connecting' }
  | { type: 'connected'; transport: Transport }
  | { type: 'message'; message: ProgressMessage }
  | { type: 'snapshot'; progress: Progress }
  | { type: 'stream_error'; error: string }
  /** The stream was lost; it is being opened again. */
  | { type: 'disconnected' }
  /** The run record says the run is over: the stream may have been lost before its final message. */
  | { type: 'ended'; status: 'succeeded' | 'failed' | 'cancelled' | 'interrupted'; error?: string }
  /** The run was resumed: its progress starts over. */
  | { type: 'reset' }

export const initialProgress: ProgressState = { phase: 'idle', lastSeq: 0, progress: 0, stages: [], notes: [], retrying: [] }

/** The stage name pipelines send with their last progress message. */
const doneStage = 'done'

/**
 * progressReducer folds a run's progress messages into what the progress
 * display shows. Messages may arrive twice (a client that reconnects is
 * sent what it missed): a sequence number already applied is ignored.
 * A result or error message is final; nothing after it changes the state.
 */
export function progressReducer(state: ProgressState, action: ProgressAction): ProgressState {
  switch (action.type) {
    case 'reset':
      return initialProgress
    case 'connecting':
      return isFinal(state) ? state : { ...state, phase: 'connecting', streamError: undefined, connection: 'connecting' }
    case 'connected':
      return isFinal(state)
        ? state
        : {
            ...state,
            phase: state.phase === 'connecting' || state.phase === 'idle' ? 'running' : state.phase,
            transport: action.transport,
            connection: 'live',
            streamError: undefined,
          }
    case 'disconnected':
      return isFinal(state) || state.connection === 'reconnecting' ? state : { ...state, transport: undefined, connection: 'reconnecting' }
    case 'stream_error':
      return isFinal(state) ? state : { ...state, streamError: action.error, transport: undefined, connection: undefined }
    case 'snapshot':
      if (isFinal(state) || state.stages.length > 0) return state
      return { ...applyProgress({ ...state, phase: 'running' }, action.progress.stage, action.progress.progress, action.progress.message ?? ''), fromSnapshot: true }
    case 'message':
      return applyMessage(state, action.message)
    case 'ended':
      if (isFinal(state)) return state
      if (action.status === 'succeeded') {
        return {
          ...state,
          phase: 'succeeded',
          progress: 100,
          message: 'done',
          stages: state.stages.map((s) => (s.status === 'active' ? { ...s, status: 'done' } : s)),
          streamError: undefined,
          retrying: [],
        }
      }
      // The stage under way when the run failed, was cancelled or was
      // interrupted did not finish.
      {
        const ended = action.status
        return {
          ...state,
          phase: ended,
          error: action.error || action.status,
          stages: state.stages.map((s) => (s.status === 'active' ? { ...s, status: ended } : s)),
          streamError: undefined,
          connection: undefined,
          retrying: [],
        }
      }
  }
}

export function isFinal(s: ProgressState): boolean {
  return s.phase === 'succeeded' || s.phase === 'failed' || s.phase === 'cancelled' || s.phase === 'interrupted'
}

/** finalStatus is the status a final error message gives: its data's (cancelled, interrupted), else failed. */
function finalStatus(m: ProgressMessage): 'failed' | 'cancelled' | 'interrupted' {
  const d = m.data as { status?: string } | undefined
  const st = d && typeof d === 'object' ? d.status : undefined
  return st === 'cancelled' || st === 'interrupted' ? st : 'failed'
}

function applyMessage(state: ProgressState, m: ProgressMessage): ProgressState {
  if (isFinal(state)) return state
  if (typeof m.seq === 'number' && m.seq > 0) {
    if (m.seq <= state.lastSeq) return state
    state = { ...state, lastSeq: m.seq }
  }
  if (state.fromSnapshot) {
    // The stream replays the run from its start: its stages, in order,
    // replace the snapshot's one.
    state = { ...state, stages: [], fromSnapshot: false }
  }
  switch (m.type) {
    case 'result':
      return {
        ...state,
        phase: 'succeeded',
        progress: 100,
        stage: m.stage || state.stage,
        message: m.message || 'done',
        stages: state.stages.map((s) => (s.status === 'active' ? { ...s, status: 'done' } : s)),
        result: m.data,
        streamError: undefined,
        connection: undefined,
        retrying: [],
      }
    case 'error': {
      const error = m.message || (typeof m.data === 'string' ? m.data : 'the run failed')
      const ended = finalStatus(m)
      const failing = m.stage || state.stage
      let stages = state.stages.map((s) => (s.status === 'active' ? { ...s, status: (s.name === failing ? ended : 'done') as StageState['status'] } : s))
      if (failing && failing !== doneStage && !stages.some((s) => s.name === failing)) {
        stages = [...stages, { name: failing, status: ended, progress: state.progress, message: ended === 'cancelled' ? '' : error }]
      }
      return { ...state, phase: ended, error, stages, streamError: undefined, connection: undefined, retrying: [] }
    }
    case 'retry':
      return applyRetry({ ...state, phase: 'running', streamError: undefined }, m.data as RunRetry | undefined)
    case 'progress':
      return applyProgress({ ...state, phase: 'running', streamError: undefined }, m.stage ?? '', m.progress ?? -1, m.message ?? '')
    default:
      return state
  }
}

/** applyRetry notes a call being tried again, or drops one that ended. */
function applyRetry(state: ProgressState, r: RunRetry | undefined): ProgressState {
  if (!r || typeof r !== 'object' || typeof r.call !== 'string') return state
  const others = (state.retrying ?? []).filter((x) => x.call !== r.call)
  return { ...state, retrying: r.ended ? others : [...others, r] }
}

function applyProgress(state: ProgressState, stage: string, progress: number, message: string): ProgressState {
  // A negative progress is a remark about a stage (a fallback was used,
  // say), not a step forward.
  if (progress < 0) {
    return { ...state, notes: [...state.notes, { stage, message }] }
  }
  const overall = Math.max(state.progress, Math.min(100, progress))
  // Back in the queue while it ran: the stage under way was interrupted.
  const why = stage === queuedStage ? requeueReason(message) : undefined
  if (why) {
    const stages = state.stages.map((s) => (s.status === 'active' ? { ...s, status: 'interrupted' as const } : s)).filter((s) => s.name !== queuedStage)
    return { ...state, progress: overall, stage, message, requeued: { why, resumed: false }, stages: [...stages, { name: stage, status: 'active', progress: overall, message }] }
  }
  if (state.requeued && !state.requeued.resumed && stage !== queuedStage) state = { ...state, requeued: { ...state.requeued, resumed: true } }
  if (stage === doneStage || stage === '') {
    return {
      ...state,
      progress: overall,
      message,
      stages: stage === doneStage ? state.stages.map((s) => (s.status === 'active' ? { ...s, status: 'done' } : s)) : state.stages,
    }
  }
  // The stage reporting is under way; the one under way before it, if
  // another, is done (a refinement or a resumed run goes back to a stage
  // seen before), as is one that was interrupted and is now past.
  const i = state.stages.findIndex((s) => s.name === stage)
  const others = state.stages.map((s) => (s.name !== stage && (s.status === 'active' || s.status === 'interrupted') ? { ...s, status: 'done' as const } : s))
  const stages: StageState[] =
    i >= 0 ? others.map((s, j) => (j === i ? { ...s, status: 'active', progress: overall, message } : s)) : [...others, { name: stage, status: 'active', progress: overall, message }]
  return { ...state, progress: overall, stage, message, stages }
}

/** The stage the queue reports a run waiting in. */
const queuedStage = 'queued'
