import { describe, expect, it } from 'vitest'
import type { ProgressMessage } from '../api/types'
import { initialProgress, progressReducer, stageLabel, type ProgressAction, type ProgressState } from './reducer'

const m = (seq: number, type: ProgressMessage['type'], stage: string, progress: number, message = '', data?: unknown): ProgressAction => ({
  type: 'message',
  message: { type, seq, stage, progress, message, data },
})

const fold = (actions: ProgressAction[], from: ProgressState = initialProgress) => actions.reduce(progressReducer, from)

describe('progressReducer', () => {
  it('notes a retried call while it is tried again, drops it when it ends, and leaves the stages and progress be', () => {
    const retry = (seq: number, call: string, attempt: number, ended?: string) =>
      m(seq, 'retry', 'evaluate', 20, 'a call failed', { call, attempt, max_attempts: 4, delay_ms: 1000, ended, failure: ended ? undefined : { kind: 'provider_error', detail: 'x' } })
    let s = fold([m(1, 'progress', 'generate', 5), m(2, 'progress', 'evaluate', 20), retry(3, 'evaluate#1', 2), retry(4, 'evaluate#2', 2), retry(5, 'evaluate#1', 3)])
    expect(s.retrying.map((r) => [r.call, r.attempt])).toEqual([
      ['evaluate#2', 2],
      ['evaluate#1', 3],
    ])
    expect(s.stages.map((x) => [x.name, x.status])).toEqual([
      ['generate', 'done'],
      ['evaluate', 'active'],
    ])
    expect([s.progress, s.message, s.notes]).toEqual([20, '', []])
    // Replayed after a reconnection: applied once.
    expect(fold([retry(4, 'evaluate#2', 2)], s)).toBe(s)
    s = fold([retry(6, 'evaluate#1', 3, 'succeeded')], s)
    expect(s.retrying.map((r) => r.call)).toEqual(['evaluate#2'])
    // The run's end ends every retry.
    const failed = fold([m(7, 'error', 'evaluate', 20, 'gave up')], s)
    expect(failed.retrying).toEqual([])
    expect(fold([{ type: 'ended', status: 'succeeded' }], s).retrying).toEqual([])
  })

  it('ends as the run record says when the stream was lost before the final message', () => {
    const lost = fold([{ type: 'connecting' }, m(1, 'progress', 'generate', 5), m(2, 'progress', 'evaluate', 20), { type: 'stream_error', error: 'lost the progress stream' }])
    expect(lost.streamError).toBe('lost the progress stream')
    let s = progressReducer(lost, { type: 'ended', status: 'succeeded' })
    expect([s.phase, s.progress, s.streamError]).toEqual(['succeeded', 100, undefined])
    expect(s.stages.map((x) => [x.name, x.status])).toEqual([
      ['generate', 'done'],
      ['evaluate', 'done'],
    ])
    s = progressReducer(lost, { type: 'ended', status: 'failed', error: 'provider down' })
    expect([s.phase, s.progress, s.error, s.streamError]).toEqual(['failed', 20, 'provider down', undefined])
    expect(s.stages.map((x) => x.status)).toEqual(['done', 'failed'])
    // A cancelled run's stage under way was cancelled, not failed.
    const c = progressReducer(lost, { type: 'ended', status: 'cancelled' })
    expect([c.phase, ...c.stages.map((x) => x.status)]).toEqual(['cancelled', 'done', 'cancelled'])
  })

  it('marks the stage a cancel stopped cancelled, from the final message', () => {
    const s = fold([m(1, 'progress', 'iteration 1', 5), m(2, 'progress', 'iteration 2', 40), { type: 'message', message: { type: 'error', seq: 3, stage: 'iteration 2', progress: 100, message: 'cancelled by request', data: { status: 'cancelled' } } }])
    expect(s.phase).toBe('cancelled')
    expect(s.stages.map((x) => [x.name, x.status])).toEqual([
      ['iteration 1', 'done'],
      ['iteration 2', 'cancelled'],
    ])
  })

  it('keeps what the final message said when the record then says the run is over', () => {
    const done = fold([m(1, 'progress', 'generate', 5), m(2, 'error', 'generate', 5, 'quota exceeded')])
    expect(progressReducer(done, { type: 'ended', status: 'succeeded' })).toBe(done)
  })

  it('follows a spark run stage by stage to its result', () => {
    let s = fold([{ type: 'connecting' }, { type: 'connected', transport: 'websocket' }])
    expect(s.phase).toBe('running')
    expect(s.transport).toBe('websocket')
    s = fold([m(1, 'progress', 'generate', 5, 'generating 5 ideas'), m(2, 'progress', 'evaluate', 20, 'evaluating 5 ideas')], s)
    expect(s.stages.map((x) => [x.name, x.status])).toEqual([
      ['generate', 'done'],
      ['evaluate', 'active'],
    ])
    expect(s.progress).toBe(20)
    expect(s.stage).toBe('evaluate')
    expect(s.message).toBe('evaluating 5 ideas')
    s = fold([m(3, 'progress', 'advocate', 45), m(4, 'progress', 'improve', 65), m(5, 'progress', 're_evaluate', 85), m(6, 'progress', 'done', 100, 'done')], s)
    expect(s.stages.every((x) => x.status === 'done')).toBe(true)
    expect(s.stages.map((x) => x.name)).toEqual(['generate', 'evaluate', 'advocate', 'improve', 're_evaluate'])
    expect(s.phase).toBe('running')
    s = fold([m(7, 'result', '', 100, '', { candidates: [1] })], s)
    expect(s.phase).toBe('succeeded')
    expect(s.progress).toBe(100)
    expect(s.result).toEqual({ candidates: [1] })
  })

  it('ignores messages replayed after a reconnection', () => {
    const s1 = fold([m(1, 'progress', 'generate', 5), m(2, 'progress', 'evaluate', 20)])
    const s2 = fold([m(1, 'progress', 'generate', 5), m(2, 'progress', 'evaluate', 20), m(3, 'progress', 'advocate', 45)], s1)
    expect(s2.lastSeq).toBe(3)
    expect(s2.stages.map((x) => x.name)).toEqual(['generate', 'evaluate', 'advocate'])
    expect(fold([m(2, 'progress', 'evaluate', 20)], s2)).toBe(s2)
  })

  it('never moves the bar back, and keeps remarks with a negative progress as notes', () => {
    const s = fold([m(1, 'progress', 'evaluate', 20), m(2, 'progress', 'advocate', -1, 'fallback used: timeout'), m(3, 'progress', 'evaluate', 10, 'again')])
    expect(s.progress).toBe(20)
    expect(s.notes).toEqual([{ stage: 'advocate', message: 'fallback used: timeout' }])
    expect(s.stages.map((x) => x.name)).toEqual(['evaluate'])
    expect(s.stages[0].message).toBe('again')
  })

  it('marks the failing stage and keeps the error; nothing changes after a final message', () => {
    let s = fold([m(1, 'progress', 'generate', 5), m(2, 'progress', 'evaluate', 20), m(3, 'error', 'evaluate', 20, 'critic: reply is not valid JSON')])
    expect(s.phase).toBe('failed')
    expect(s.error).toBe('critic: reply is not valid JSON')
    expect(s.stages.map((x) => [x.name, x.status])).toEqual([
      ['generate', 'done'],
      ['evaluate', 'failed'],
    ])
    const after = fold([m(4, 'progress', 'advocate', 45), { type: 'stream_error', error: 'lost' }, { type: 'connecting' }], s)
    expect(after).toBe(s)
    // An error naming a stage not yet seen adds it, failed.
    s = fold([m(1, 'progress', 'generate', 5), m(2, 'error', 'improve', 5, 'boom')])
    expect(s.stages.map((x) => [x.name, x.status])).toEqual([
      ['generate', 'done'],
      ['improve', 'failed'],
    ])
  })

  it('starts from the snapshot in the run record, once', () => {
    const s = fold([{ type: 'snapshot', progress: { stage: 'improve', progress: 65, message: 'improving 3 ideas' } }])
    expect(s.progress).toBe(65)
    expect(s.stages).toEqual([{ name: 'improve', status: 'active', progress: 65, message: 'improving 3 ideas' }])
    const s2 = fold([{ type: 'snapshot', progress: { stage: 'generate', progress: 5 } }], s)
    expect(s2).toBe(s)
    // The replayed stream then tells the stages in their order.
    const s3 = fold([m(1, 'progress', 'queued', 0), m(2, 'progress', 'generate', 5), m(3, 'progress', 'evaluate', 20)], s)
    expect(s3.stages.map((x) => [x.name, x.status])).toEqual([
      ['queued', 'done'],
      ['generate', 'done'],
      ['evaluate', 'active'],
    ])
    expect(s3.progress).toBe(65)
  })

  it('shows a stream problem until messages flow again', () => {
    const s = fold([m(1, 'progress', 'generate', 5), { type: 'stream_error', error: 'lost the progress stream' }])
    expect(s.streamError).toBe('lost the progress stream')
    expect(fold([m(2, 'progress', 'evaluate', 20)], s).streamError).toBeUndefined()
  })

  it('labels stages', () => {
    expect(stageLabel('re_evaluate')).toBe('Re-evaluate')
    expect(stageLabel('iteration 2')).toBe('Iteration 2')
  })
})

describe('progressReducer, when the run or its stream is interrupted', () => {
  it('says it is reconnecting while the stream is lost, and live again once it is back', () => {
    let s = fold([{ type: 'connecting' }, { type: 'connected', transport: 'websocket' }, m(1, 'progress', 'generate', 5)])
    expect([s.connection, s.transport]).toEqual(['live', 'websocket'])
    s = fold([{ type: 'disconnected' }], s)
    expect([s.connection, s.transport, s.phase]).toEqual(['reconnecting', undefined, 'running'])
    // Lost again while reconnecting: the same state.
    expect(fold([{ type: 'disconnected' }], s)).toBe(s)
    s = fold([{ type: 'connected', transport: 'sse' }, m(2, 'progress', 'evaluate', 20)], s)
    expect([s.connection, s.transport, s.stages.map((x) => x.status)]).toEqual(['live', 'sse', ['done', 'active']])
    // A run that ended is not reconnecting.
    const over = fold([m(3, 'result', 'done', 100)], s)
    expect(fold([{ type: 'disconnected' }], over)).toBe(over)
  })

  it('marks the stage a requeue interrupted, then says the run resumed when it goes on', () => {
    let s = fold([m(1, 'progress', 'queued', 0, 'waiting for a worker'), m(2, 'progress', 'iteration 1', 5), m(3, 'progress', 'iteration 2', 40)])
    s = fold([m(4, 'progress', 'queued', 0, 'requeued: its worker stopped')], s)
    expect(s.requeued).toEqual({ why: 'the server stopped while it worked on the run', resumed: false })
    expect(s.stages.map((x) => [x.name, x.status])).toEqual([
      ['iteration 1', 'done'],
      ['iteration 2', 'interrupted'],
      ['queued', 'active'],
    ])
    expect(s.progress).toBe(40)
    // The resumed run replays its finished iterations, then goes on.
    s = fold([m(5, 'progress', 'iteration 1', 5), m(6, 'progress', 'iteration 2', 40), m(7, 'progress', 'iteration 3', 70)], s)
    expect(s.requeued).toEqual({ why: 'the server stopped while it worked on the run', resumed: true })
    expect(s.stages.map((x) => [x.name, x.status])).toEqual([
      ['iteration 1', 'done'],
      ['iteration 2', 'done'],
      ['queued', 'done'],
      ['iteration 3', 'active'],
    ])
    s = fold([m(8, 'result', 'done', 100)], s)
    expect([s.phase, s.requeued?.resumed]).toEqual(['succeeded', true])
  })

  it('ends interrupted, from the final message or the record', () => {
    const s = fold([m(1, 'progress', 'answer', 50), { type: 'message', message: { type: 'error', seq: 2, stage: 'answer', progress: 50, message: 'interrupted: madspark serve stopped', data: { status: 'interrupted' } } }])
    expect([s.phase, s.stages[0].status]).toEqual(['interrupted', 'interrupted'])
    const r = fold([m(1, 'progress', 'answer', 50), { type: 'ended', status: 'interrupted', error: 'interrupted: gone' }])
    expect([r.phase, r.error, r.stages[0].status]).toEqual(['interrupted', 'interrupted: gone', 'interrupted'])
  })

  it('marks the stage before done when a refinement goes back to an earlier stage', () => {
    const s = fold([m(1, 'progress', 'problem_formulation', 5), m(2, 'progress', 'quality_control', 85), m(3, 'progress', 'problem_formulation', 5, 'problem_formulation (round 1)')])
    expect(s.stages.map((x) => [x.name, x.status])).toEqual([
      ['problem_formulation', 'active'],
      ['quality_control', 'done'],
    ])
  })
})
