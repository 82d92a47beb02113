import type { Progress, ProgressMessage } from '../api/types'

/** A stage as the progress display shows it. */
export interface StageState {
  name: string
  status: 'active' | 'done' | 'failed' | 'cancelled'
  /** The run's overall progress when the stage last reported, 0-100. */
  progress: number
  message: string
}

export type Phase = 'idle' | 'connecting' | 'running' | 'succeeded' | 'failed' | 'cancelled'
export type Transport = 'websocket' | 'sse'

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
}

export type ProgressAction =
  | { type: 'connecting' }
  | { type: 'connected'; transport: Transport }
  | { type: 'message'; message: ProgressMessage }
  | { type: 'snapshot'; progress: Progress }
  | { type: 'stream_error'; error: string }
  /** The run record says the run is over: the stream may have been lost before its final message. */
  | { type: 'ended'; status: 'succeeded' | 'failed' | 'cancelled'; error?: string }
  /** The run was resumed: its progress starts over. */
  | { type: 'reset' }

export const initialProgress: ProgressState = { phase: 'idle', lastSeq: 0, progress: 0, stages: [], notes: [] }

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
      return isFinal(state) ? state : { ...state, phase: 'connecting', streamError: undefined }
    case 'connected':
      return isFinal(state)
        ? state
        : { ...state, phase: state.phase === 'connecting' || state.phase === 'idle' ? 'running' : state.phase, transport: action.transport }
    case 'stream_error':
      return isFinal(state) ? state : { ...state, streamError: action.error }
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
        }
      }
      // The stage under way when the run failed or was cancelled did not
      // finish: it failed, or was cancelled.
      {
        const ended = action.status === 'cancelled' ? 'cancelled' : 'failed'
        return {
          ...state,
          phase: ended,
          error: action.error || action.status,
          stages: state.stages.map((s) => (s.status === 'active' ? { ...s, status: ended } : s)),
          streamError: undefined,
        }
      }
  }
}

export function isFinal(s: ProgressState): boolean {
  return s.phase === 'succeeded' || s.phase === 'failed' || s.phase === 'cancelled'
}

/** finalStatus is the status a final error message gives: its data's, cancelled or failed. */
function finalStatus(m: ProgressMessage): 'failed' | 'cancelled' {
  const d = m.data as { status?: string } | undefined
  return d && typeof d === 'object' && d.status === 'cancelled' ? 'cancelled' : 'failed'
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
      }
    case 'error': {
      const error = m.message || (typeof m.data === 'string' ? m.data : 'the run failed')
      const ended = finalStatus(m)
      const failing = m.stage || state.stage
      let stages = state.stages.map((s) => (s.status === 'active' ? { ...s, status: (s.name === failing ? ended : 'done') as StageState['status'] } : s))
      if (failing && failing !== doneStage && !stages.some((s) => s.name === failing)) {
        stages = [...stages, { name: failing, status: ended, progress: state.progress, message: ended === 'cancelled' ? '' : error }]
      }
      return { ...state, phase: ended, error, stages, streamError: undefined }
    }
    case 'progress':
      return applyProgress({ ...state, phase: 'running', streamError: undefined }, m.stage ?? '', m.progress ?? -1, m.message ?? '')
    default:
      return state
  }
}

function applyProgress(state: ProgressState, stage: string, progress: number, message: string): ProgressState {
  // A negative progress is a remark about a stage (a fallback was used,
  // say), not a step forward.
  if (progress < 0) {
    return { ...state, notes: [...state.notes, { stage, message }] }
  }
  const overall = Math.max(state.progress, Math.min(100, progress))
  if (stage === doneStage || stage === '') {
    return {
      ...state,
      progress: overall,
      message,
      stages: stage === doneStage ? state.stages.map((s) => (s.status === 'active' ? { ...s, status: 'done' } : s)) : state.stages,
    }
  }
  const i = state.stages.findIndex((s) => s.name === stage)
  let stages: StageState[]
  if (i >= 0) {
    stages = state.stages.map((s, j) => (j === i ? { ...s, status: 'active', progress: overall, message } : s))
  } else {
    // A new stage: those before it are done.
    stages = [
      ...state.stages.map((s) => (s.status === 'active' ? { ...s, status: 'done' as const } : s)),
      { name: stage, status: 'active', progress: overall, message },
    ]
  }
  return { ...state, progress: overall, stage, message, stages }
}

/** stageLabel turns a stage name such as "re_evaluate" into "Re-evaluate". */
export function stageLabel(name: string): string {
  const s = name.replace(/_/g, ' ').replace(/^re /, 're-')
  return s.charAt(0).toUpperCase() + s.slice(1)
}
