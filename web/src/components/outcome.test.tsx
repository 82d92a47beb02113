import { render, screen } from '@testing-library/react'
import { describe, expect, it } from 'vitest'
import type { RunSummary } from '../api/types'
import { duration, tokens } from './format'
import { StatusWithOutcome, outcomeMarks, parentWords, statusTone } from './Outcome'

const run = (over: Partial<RunSummary>): RunSummary => ({ run_id: 'r1', pipeline: 'proposal', status: 'succeeded', mode: 'mock', created_at: '', ...over })

describe('how a run came out', () => {
  it('marks a verdict, a partial result and repairs, in that order, and tones the status', () => {
    const failedQC = run({ outcome: { verdict: { check: 'quality control', passed: false, note: 'not passed after 3 refinements: feasibility 0.42 < 0.70' }, repairs: 2 } })
    expect(outcomeMarks(failedQC).map((m) => [m.label, m.tone])).toEqual([
      ['not passed quality control', 'warn'],
      ['2 repairs', 'plain'],
    ])
    expect(outcomeMarks(failedQC)[0].title).toBe('Did not pass quality control (after 3 refinements: feasibility 0.42 < 0.70).')
    expect(statusTone(failedQC)).toBe('status-warn')
    const passed = run({ outcome: { verdict: { check: 'quality control', passed: true, note: 'coherence 0.82, feasibility 0.75' } } })
    expect(outcomeMarks(passed).map((m) => m.label)).toEqual(['passed quality control'])
    expect(statusTone(passed)).toBe('status-succeeded')
    expect(outcomeMarks(run({ status: 'cancelled', outcome: { partial: true, repairs: 1 } })).map((m) => m.label)).toEqual(['partial', '1 repair'])
    expect(outcomeMarks(run({ outcome: { repairs: 0 } }))).toEqual([])
    expect(statusTone(run({ status: 'interrupted' }))).toBe('status-interrupted')
  })

  it('shows the status beside the marks in a row', () => {
    render(<StatusWithOutcome run={run({ outcome: { verdict: { check: 'quality control', passed: false, note: '' } } })} testId="s" />)
    expect(screen.getByTestId('s').textContent).toBe('succeeded')
    expect(screen.getByTestId('s').className).toBe('status status-warn')
    expect(screen.getAllByTestId('outcome-mark').map((e) => e.textContent)).toEqual(['not passed quality control'])
  })

  it('says what a run was made for, with a link to it', () => {
    expect(parentWords({ kind: 'batch', id: 'b1', title: 'ideas.csv' })).toEqual({ text: 'A row of the batch “ideas.csv”', to: '/batches/b1' })
    expect(parentWords({ kind: 'chat', id: 'conv_1', title: '' })).toEqual({ text: 'An answer in the chat conv_1', to: '/chat/conv_1' })
    expect(parentWords({ kind: 'eval', id: 'e1', title: 'spark against a single call, 2 topics' }).to).toBe('/runs/e1')
  })

  it('says durations and tokens for people', () => {
    expect([duration(850), duration(42_400), duration(185_000), duration(3_720_000), duration(null)]).toEqual(['850 ms', '42 s', '3 min 5 s', '1 h 2 min', '–'])
    expect(tokens({ input_tokens: 12000, output_tokens: 345 })).toBe('12,345 tokens')
    expect(tokens({ input_tokens: 1, output_tokens: 0 })).toBe('1 token')
  })
})
