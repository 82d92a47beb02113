import { describe, expect, it } from 'vitest'
import { messageWords, requeueReason, stageLabel, words } from './words'

describe('progress in words', () => {
  it('names stages without identifiers', () => {
    expect(stageLabel('problem_formulation')).toBe('Problem formulation')
    expect(stageLabel('data_collection')).toBe('Data collection')
    expect(stageLabel('re_evaluate')).toBe('Re-evaluate')
    expect(stageLabel('iteration 2')).toBe('Iteration 2')
    expect(stageLabel('queued')).toBe('Waiting in the queue')
    expect(stageLabel('some_new_stage')).toBe('Some new stage')
  })

  it('says messages without identifiers, worker IDs or flags', () => {
    expect(messageWords('problem_formulation (round 3)')).toBe('problem formulation, round 3')
    expect(messageWords('quality control (round 1)')).toBe('quality control, round 1')
    expect(messageWords('round 1: feasibility 0.42 < 0.70; refining from problem_formulation')).toBe('round 1: feasibility 0.42 < 0.70; refining from problem formulation')
    expect(messageWords('requeued: worker vm-4121-3f2a lost')).toBe('the process working on the run stopped; queued again to resume where it stopped')
    expect(messageWords('requeued: its worker stopped')).toBe('the server stopped while it worked on the run; queued again to resume where it stopped')
    expect(messageWords('requeued: the lease of worker vm-1 lapsed')).toBe('the process working on the run lost touch with the database; queued again to resume where it stopped')
    expect(messageWords('resuming: waiting for a worker')).toBe('resuming where it stopped: waiting for a worker')
    expect(messageWords('web tools off (--no-web-tools)')).toBe('web tools off')
    expect(messageWords('run again with --no-web-tools')).toBe('run again with no web tools')
    expect(messageWords('complex (confidence 0.92)')).toBe('complex (92% sure)')
    // Words stay words; a number with a decimal point is no identifier.
    expect(messageWords('evaluating 5 ideas')).toBe('evaluating 5 ideas')
    expect(words('seed_ideas and num_candidates, but not snake or 0_1')).toBe('seed ideas and num candidates, but not snake or 0_1')
    for (const m of ['requeued: worker x lost', 'problem_formulation (round 3)', 'web tools off (--no-web-tools)']) {
      expect(messageWords(m), m).not.toMatch(/_|--|requeued|worker [a-z0-9-]+ lost/)
    }
  })

  it('tells a requeue from other messages', () => {
    expect(requeueReason('requeued: something new')).toBe('it was interrupted')
    expect(requeueReason('waiting for a worker')).toBeUndefined()
  })
})
