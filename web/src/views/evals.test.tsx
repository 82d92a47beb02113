import { render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { MemoryRouter, Route, Routes } from 'react-router'
import { describe, expect, it } from 'vitest'
import { ApiProvider } from '../api/context'
import { interval } from '../results/EvalResults'
import { apiError, fakeServer, json } from '../test/fake'
import { sparkSchema } from '../test/fixtures'
import { EvalCompare, Evals, topicExample, topicsOf } from './Evals'

function page(routes: Parameters<typeof fakeServer>[0], at = '/evals') {
  const s = fakeServer({
    'GET /api/pipelines': () =>
      json(200, {
        pipelines: [
          { name: 'spark', title: 'Spark', params_schema: sparkSchema },
          { name: 'debate', title: 'Debate', params_schema: { type: 'object', required: ['query'], properties: { query: { type: 'string' } } } },
          { name: 'eval', title: 'Eval', params_schema: {} },
        ],
      }),
    'GET /api/runs': () => json(200, { runs: [], limit: 20, offset: 0, next_offset: null }),
    ...routes,
  })
  render(
    <ApiProvider value={s.client()}>
      <MemoryRouter initialEntries={[at]}>
        <Routes>
          <Route path="/evals" element={<Evals />} />
          <Route path="/evals/compare" element={<EvalCompare />} />
          <Route path="/runs/:id" element={<p>run page</p>} />
        </Routes>
      </MemoryRouter>
    </ApiProvider>,
  )
  return { s, user: userEvent.setup() }
}

describe('evals', () => {
  it('rounds an interval outwards, both ends alike', () => {
    expect(interval([0.0945, 0.9055])).toEqual(['9.4%', '90.6%'])
    expect(interval([0.3, 0.95])).toEqual(['30.0%', '95.0%'])
    expect(interval([0, 1])).toEqual(['0.0%', '100.0%'])
  })

  it('reads topics one per line, or as JSON in the advanced option', () => {
    expect(topicsOf(' urban farming \n\nquiet streets\n', false)).toEqual({ topics: ['urban farming', 'quiet streets'] })
    expect(topicsOf('\n', false).error).toMatch(/at least one topic/)
    expect(topicsOf('[{"topic": "x", "num_candidates": 2}]', true)).toEqual({ topics: [{ topic: 'x', num_candidates: 2 }] })
    expect(topicsOf('urban farming', true).error).toMatch(/not valid JSON/)
    expect(JSON.parse(topicExample(sparkSchema))[0]).toEqual({ topic: 'your topic' })
  })

  it('starts an eval from a pipeline chosen in a list and topics one per line', async () => {
    const { s, user } = page({ 'POST /api/evals': () => json(202, { run_id: 'ev-1', status: 'queued' }) })
    const pipeline = (await screen.findByLabelText('Pipeline to measure')) as HTMLSelectElement
    await screen.findByRole('option', { name: 'Debate' })
    expect([...pipeline.options].map((o) => o.value)).toEqual(['spark', 'debate'])
    await user.selectOptions(pipeline, 'debate')
    await user.type(screen.getByLabelText('Topics, one per line'), 'Is tea better than coffee?{Enter}Why is the sky blue?')
    await user.click(screen.getByText('Advanced'))
    await user.selectOptions(screen.getByLabelText('Judge'), 'anthropic')
    await user.click(screen.getByRole('button', { name: 'Start eval' }))
    await screen.findByText('run page')
    expect(s.calls.find((c) => c.method === 'POST')!.body).toEqual({ pipeline: 'debate', topics: ['Is tea better than coffee?', 'Why is the sky blue?'], judge_provider: 'anthropic' })
  })

  it('shows a topic the server refused beside the topics', async () => {
    const { user } = page({ 'POST /api/evals': () => apiError(422, 'topics: topics item 2: spark parameters: topic must not be empty', 'validation', 'topics') })
    await user.type(await screen.findByLabelText('Topics, one per line'), 'x')
    await user.click(screen.getByRole('button', { name: 'Start eval' }))
    const err = await screen.findByText(/Topics item 2/)
    expect(screen.getByLabelText('Topics, one per line').getAttribute('aria-describedby')).toContain(err.id)
  })

  it('compares two evals', async () => {
    const side = (id: string, rate: number) => ({ run_id: id, pipeline: 'spark', provider: 'mock', model: 'mock-1', judge_provider: 'mock', judge_model: '', n: 2, wins: 1, losses: 0, ties: 1, win_rate: rate, ci: [0.0945, 0.9055] })
    page(
      {
        'GET /api/evals/compare': () =>
          json(200, { a: side('ev-aaaaaaaa1', 0.75), b: side('ev-bbbbbbbb2', 0.5), difference: -0.25, intervals_overlap: true, items: [{ topic: 'urban farming', a: 'pipeline', b: 'tie' }] }),
      },
      '/evals/compare?a=ev-aaaaaaaa1&b=ev-bbbbbbbb2',
    )
    expect((await screen.findByTestId('compare-verdict')).textContent).toBe(
      'Difference in win rate (B − A): −25.0 points. The intervals overlap: these evals do not show that either does better.',
    )
    const rows = within(screen.getByTestId('compare-table')).getAllByRole('row').slice(1)
    expect(rows[0].textContent).toContain('75.0%')
    expect(rows[0].textContent).toContain('9.4%–90.6%')
    expect(within(screen.getByTestId('compare-topics')).getAllByRole('row')[1].textContent).toBe('urban farmingsparktie')
  })
})
