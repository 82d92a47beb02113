import { render, screen, within } from '@testing-library/react'
import { MemoryRouter, Route, Routes } from 'react-router'
import { describe, expect, it } from 'vitest'
import { ApiProvider } from '../api/context'
import type { RunSummary } from '../api/types'
import { fakeServer, json } from '../test/fake'
import { History, groupRuns, runFacts } from './History'

const run = (id: string, over: Partial<RunSummary> = {}): RunSummary => ({
  run_id: id,
  pipeline: 'spark',
  status: 'succeeded',
  mode: 'mock',
  title: `topic ${id}`,
  created_at: '2026-01-01T00:00:00Z',
  ...over,
})

describe('the runs list', () => {
  it('groups the runs of an eval under it, and those of a batch or a chat under a heading where the first one is', () => {
    const runs = [
      run('e1-a', { parent: { kind: 'eval', id: 'e1', title: 'spark, 2 topics' } }),
      run('b-1', { parent: { kind: 'batch', id: 'b', title: 'ideas.csv' } }),
      run('solo'),
      run('e1-b', { parent: { kind: 'eval', id: 'e1', title: 'spark, 2 topics' } }),
      run('e1', { pipeline: 'eval' }),
      run('b-2', { parent: { kind: 'batch', id: 'b', title: 'ideas.csv' } }),
      run('e9-a', { parent: { kind: 'eval', id: 'e9', title: 'an eval on another page' } }),
    ]
    expect(groupRuns(runs).map((g) => [g.run?.run_id ?? `${g.parent!.kind}:${g.parent!.id}`, g.children.map((c) => c.run_id)])).toEqual([
      ['batch:b', ['b-1', 'b-2']],
      ['solo', []],
      ['e1', ['e1-a', 'e1-b']],
      ['eval:e9', ['e9-a']],
    ])
  })

  it('says how long a run took, its calls, tokens and cost', () => {
    expect(runFacts(run('x', { duration_ms: 42_000, usage: { llm_calls: 6, cached_calls: 0, input_tokens: 1000, output_tokens: 234, cost_usd: 0.0123 } }))).toBe(
      '42 s · 6 calls · 1,234 tokens · $0.01',
    )
    expect(runFacts(run('x', { duration_ms: null, usage: { llm_calls: 2, input_tokens: 10, output_tokens: 5, cost_usd: null, priced: false } }))).toBe('2 calls · 15 tokens · unpriced')
    expect(runFacts(run('x'))).toBe('')
  })

  it('shows each run with its outcome and facts, its sub-runs under it', async () => {
    const s = fakeServer({
      'GET /api/pipelines': () => json(200, { pipelines: [] }),
      'GET /api/runs': () =>
        json(200, {
          runs: [
            run('p1', { pipeline: 'proposal', duration_ms: 13_000, outcome: { verdict: { check: 'quality control', passed: false, note: 'not passed after 1 refinement' } } }),
            run('c-1', { pipeline: 'debate', parent: { kind: 'chat', id: 'conv_1', title: 'Goroutines' }, outcome: { repairs: 3 } }),
          ],
          limit: 20,
          offset: 0,
          next_offset: null,
        }),
    })
    render(
      <ApiProvider value={s.client()}>
        <MemoryRouter initialEntries={['/runs']}>
          <Routes>
            <Route path="/runs" element={<History />} />
          </Routes>
        </MemoryRouter>
      </ApiProvider>,
    )
    const rows = await screen.findAllByTestId('run-row')
    expect(rows.map((r) => r.dataset.runId)).toEqual(['p1', 'c-1'])
    expect(within(rows[0]).getAllByTestId('outcome-mark').map((m) => m.textContent)).toEqual(['not passed quality control'])
    expect(within(rows[0]).getByTestId('run-facts').textContent).toBe('13 s')
    const group = screen.getByTestId('run-group')
    expect(within(group).getByRole('link', { name: 'Chat: Goroutines' }).getAttribute('href')).toBe('/chat/conv_1')
    const sub = within(group).getByRole('list', { name: 'Answers of this chat' })
    expect(within(sub).getByTestId('outcome-mark').textContent).toBe('3 repairs')
  })
})
