import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { afterEach, describe, expect, it } from 'vitest'
import { ApiProvider } from '../api/context'
import type { CallView, RunSteps, StepView } from '../api/types'
import { fakeServer, json } from '../test/fake'
import { Timeline, layout, repairRule, repairedCalls } from './Timeline'

afterEach(cleanup)

function call(agent: string, startMs: number, latency: number, more: Partial<CallView> = {}): CallView {
  return {
    agent, provider: 'openai', model: 'gpt-4o-mini', attempt: 1, retries: 0, cached: false,
    input_tokens: 120, output_tokens: 40, cost_usd: 0.0012, latency_ms: latency, temperature: 0.7,
    prompt: [{ role: 'system', content: `You are ${agent}.` }, { role: 'user', content: `Prompt of ${agent}` }],
    response: `Reply of ${agent}`, started_at: new Date(Date.UTC(2026, 0, 1) + startMs).toISOString(), ...more,
  }
}

function step(key: string, calls: CallView[]): StepView {
  return {
    key, agent: calls[0]?.agent ?? '', model: '', provider: '', status: 'done', attempts: 1, cached: false,
    llm_calls: calls.length, cached_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: 0, latency_ms: 0,
    repairs: [], prompt: [], response: '', started_at: calls[0]?.started_at ?? '', finished_at: '', calls,
  }
}

// generate (0-1000 ms), then two evaluations side by side (1000-1500 and
// 1000-2000 ms), the second one re-asked after a retry, and a cached call.
const view: RunSteps = {
  run_id: 'run-1', pipeline: 'spark', status: 'succeeded', created_at: '2026-01-01T00:00:00Z',
  steps: [
    step('generate', [call('spark.generate', 0, 1000)]),
    step('evaluate', [call('spark.evaluate', 1000, 500), call('spark.evaluate', 1000, 1000, { attempt: 2, retries: 1 })]),
    step('improve', [call('spark.improve', 2000, 0, { cached: true })]),
  ],
}

describe('the call timeline', () => {
  it('lays calls out by start and latency, parallel calls overlapping', () => {
    const { rows, totalMs } = layout(view)
    expect(totalMs).toBe(2000)
    expect(rows.map((r) => [r.step, r.left, r.width])).toEqual([
      ['generate', 0, 50],
      ['evaluate', 50, 25],
      ['evaluate', 50, 50],
      ['improve', 100, 0.5],
    ])
  })

  it('marks retries, re-asks and cache hits, and shows a call in full when chosen', async () => {
    const s = fakeServer({ 'GET /api/runs/run-1/steps': () => json(200, view) })
    render(
      <ApiProvider value={s.client()}>
        <Timeline runId="run-1" live={false} />
      </ApiProvider>,
    )
    const list = await screen.findByRole('list', { name: 'Calls in the order they started' })
    const rows = within(list).getAllByRole('button')
    expect(rows).toHaveLength(4)
    expect(rows[2].textContent).toMatch(/re-ask 1/)
    expect(rows[2].textContent).toMatch(/1 retry/)
    expect(rows[3].textContent).toMatch(/cached/)
    expect(rows[0].textContent).not.toMatch(/cached|retry|re-ask/)
    expect(screen.queryByTestId('call-detail')).toBeNull()
    await userEvent.setup().click(rows[1])
    const detail = await screen.findByTestId('call-detail')
    expect(rows[1].getAttribute('aria-expanded')).toBe('true')
    expect(within(detail).getByTestId('call-prompt').textContent).toContain('Prompt of spark.evaluate')
    expect(within(detail).getByTestId('call-prompt').textContent).toContain('You are spark.evaluate.')
    expect(within(detail).getByTestId('call-response').textContent).toBe('Reply of spark.evaluate')
    expect(detail.textContent).toContain('120 in, 40 out')
    expect(detail.textContent).toContain('$0.0012')
  })

  it('shows the messages as sent, the response format, a failed attempt and an unknown cost', async () => {
    const sent = [
      { role: 'system', content: 'You are spark.evaluate.\n\nReply with only a JSON value of this shape: {"score": number}' },
      { role: 'user', content: 'Prompt of spark.evaluate' },
    ]
    const failed = call('spark.evaluate', 0, 300, { error: 'openai: HTTP 500: overloaded', response: '', sent: true, messages: sent, input_tokens: 0, output_tokens: 0 })
    const unpriced = call('spark.evaluate', 300, 700, {
      retries: 1, sent: true, messages: sent, cost_usd: null, priced: false,
      response_format: { type: 'json_schema', json_schema: { name: 'spark_evaluations' } },
    })
    const s = fakeServer({
      'GET /api/runs/run-2/steps': () => json(200, { ...view, run_id: 'run-2', steps: [step('evaluate', [failed, unpriced])] }),
    })
    render(
      <ApiProvider value={s.client()}>
        <Timeline runId="run-2" live={false} />
      </ApiProvider>,
    )
    const list = await screen.findByRole('list', { name: 'Calls in the order they started' })
    const rows = within(list).getAllByRole('button')
    expect(rows[0].textContent).toMatch(/failed/)
    const user = userEvent.setup()
    await user.click(rows[0])
    let detail = await screen.findByTestId('call-detail')
    expect(within(detail).getByTestId('call-response').textContent).toBe('openai: HTTP 500: overloaded')
    await user.click(rows[1])
    detail = await screen.findByTestId('call-detail')
    expect(detail.textContent).toContain('Messages sent')
    expect(within(detail).getByTestId('call-prompt').textContent).toContain('Reply with only a JSON value of this shape')
    expect(within(detail).getByTestId('call-response-format').textContent).toContain('spark_evaluations')
    expect(detail.textContent).toContain('unpriced')
  })

  it('polls while the run goes on', async () => {
    let n = 0
    const s = fakeServer({
      'GET /api/runs/run-1/steps': () => {
        n++
        return json(200, n === 1 ? { ...view, status: 'running', steps: [] } : { ...view, status: 'running', steps: view.steps.slice(0, 1) })
      },
    })
    render(
      <ApiProvider value={s.client()}>
        <Timeline runId="run-1" live={true} />
      </ApiProvider>,
    )
    expect(await screen.findByText('No call has finished yet.')).toBeTruthy()
    await waitFor(() => expect(screen.getAllByTestId('timeline-call')).toHaveLength(1), { timeout: 4000 })
  })

  it('finds the call each repair was made to: the reply used, the last call of its agent that did not fail', () => {
    const calls = [call('debate.propose', 0, 100, { error: 'HTTP 500' }), call('debate.propose', 100, 100), call('debate.propose', 200, 100, { attempt: 2 }), call('other', 300, 10)]
    const got = repairedCalls(calls, [
      { agent: 'debate.propose', rule: 'prose', action: 'the text is the summary' },
      { agent: 'debate.propose', rule: 'budget', action: 'kept, 80 tokens' },
      { agent: 'nobody', rule: 'count', action: 'cut to 3' },
    ])
    expect([...got.entries()].map(([i, rs]) => [i, rs.map((r) => r.rule)])).toEqual([
      [2, ['prose', 'budget']],
      [3, ['count']],
    ])
    expect(repairedCalls([call('a', 0, 1, { error: 'x' })], [{ agent: 'a', rule: 'prose', action: 'y' }]).size).toBe(0)
    expect(repairRule('prose')).toBe('Prose instead of JSON')
    expect(repairRule('new_rule')).toBe('New rule')
  })

  it('marks a repaired call, says what was repaired, and shows each call’s tokens and cost', async () => {
    const repaired: RunSteps = {
      ...view,
      steps: [{ ...step('r1/drafter', [call('debate.propose', 0, 400, { input_tokens: 1200, output_tokens: 34 })]), repairs: [{ agent: 'debate.propose', rule: 'prose', path: '', action: 'the text taken as the summary' }] }],
    }
    const s = fakeServer({ 'GET /api/runs/run-3/steps': () => json(200, { ...repaired, run_id: 'run-3' }) })
    render(
      <ApiProvider value={s.client()}>
        <Timeline runId="run-3" live={false} />
      </ApiProvider>,
    )
    const row = await screen.findByTestId('timeline-call')
    expect(row.dataset.repaired).toBe('true')
    expect(within(row).getByText('repaired (1)')).toBeTruthy()
    expect(within(row).getByTestId('call-usage').textContent).toBe('1,234 tokens · $0.0012')
    expect(screen.getByTestId('timeline').textContent).toContain('1 call over 400 ms, 1 repaired.')
    await userEvent.setup().click(within(row).getByRole('button'))
    expect((await screen.findByTestId('call-repairs')).textContent).toBe('Prose instead of JSON: the text taken as the summary')
  })

  it('reads the calls again as soon as progress comes', async () => {
    let n = 0
    const s = fakeServer({
      'GET /api/runs/run-1/steps': () => {
        n++
        return json(200, { ...view, status: 'running', steps: view.steps.slice(0, Math.min(n, 3)) })
      },
    })
    const client = s.client()
    const ui = (version: number) => (
      <ApiProvider value={client}>
        <Timeline runId="run-1" live={true} version={version} />
      </ApiProvider>
    )
    const { rerender } = render(ui(0))
    await waitFor(() => expect(screen.getAllByTestId('timeline-call')).toHaveLength(1))
    rerender(ui(5))
    // Well before the next poll (3 s): the new step's calls are there, read once.
    await waitFor(() => expect(screen.getAllByTestId('timeline-call')).toHaveLength(3), { timeout: 1000 })
    expect(n).toBe(2)
  })
})
