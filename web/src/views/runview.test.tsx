import { act, render, screen, waitFor } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import type { ReactNode } from 'react'
import { MemoryRouter, Route, Routes } from 'react-router'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ApiProvider } from '../api/context'
import { StatusValue, type Status } from '../api/status'
import type { ProviderStatus, Run } from '../api/types'
import { fakeServer, json, sse, sseBody, type Route as FakeRoute } from '../test/fake'
import { RunView, resumeFrom } from './RunView'

const run: Run = {
  run_id: 'run-1',
  pipeline: 'proposal',
  status: 'succeeded',
  mode: 'live',
  provider: 'openai',
  model: 'gpt-4o-mini',
  title: 'peer tutoring',
  created_at: '2026-01-01T00:00:00Z',
  duration_ms: 13_000,
  usage: { llm_calls: 22, input_tokens: 30000, output_tokens: 2766, cost_usd: 0.0123 },
  result: { title: 'x' },
  outcome: { verdict: { check: 'quality control', passed: false, note: 'not passed after 3 refinements: feasibility 0.04 < 0.70' } },
}

function show(routes: Record<string, FakeRoute>, status: Partial<Status> = {}) {
  const s = fakeServer({ 'GET /api/runs/run-1/steps': () => json(200, { run_id: 'run-1', pipeline: 'proposal', status: 'running', created_at: '', steps: [] }), 'GET /api/runs/run-1/export': () => new Response('# x'), ...routes })
  const value: Status = { server: 'up', refresh: () => {}, ...status }
  const ui = (children: ReactNode) => (
    <ApiProvider value={s.client()}>
      <StatusValue value={value}>
        <MemoryRouter initialEntries={['/runs/run-1']}>
          <Routes>
            <Route path="/runs/:id" element={children} />
          </Routes>
        </MemoryRouter>
      </StatusValue>
    </ApiProvider>
  )
  render(ui(<RunView />))
  return { s, user: userEvent.setup() }
}

beforeEach(() => vi.stubGlobal('WebSocket', undefined))
afterEach(() => {
  vi.useRealTimers()
  vi.unstubAllGlobals()
})

describe('a run’s header', () => {
  it('says at once that a proposal did not pass quality control, with how long it took and what it cost', async () => {
    show({ 'GET /api/runs/run-1': () => json(200, run) })
    const note = await screen.findByTestId('run-outcome')
    expect(note.textContent).toBe('It did not pass quality control (after 3 refinements: feasibility 0.04 < 0.70). The result is kept, marked as not passed.')
    expect(screen.getByTestId('run-status').className).toBe('status status-warn')
    expect(screen.getAllByTestId('outcome-mark').map((m) => m.textContent)).toEqual(['not passed quality control'])
    expect(screen.getByTestId('run-duration').textContent).toBe('13 s')
    expect(screen.getByTestId('run-usage').textContent).toBe('22 LLM calls, 32,766 tokens, $0.01')
    // It comes before the facts, the export and the report.
    expect(note.compareDocumentPosition(screen.getByText('Pipeline')) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy()
  })

  it('names what a run was made for, with a link to it', async () => {
    show({ 'GET /api/runs/run-1': () => json(200, { ...run, outcome: {}, parent: { kind: 'batch', id: 'b-1', title: 'ideas.csv' } }) })
    const link = await screen.findByTestId('run-parent')
    expect([link.textContent, link.getAttribute('href')]).toEqual(['A row of the batch “ideas.csv”', '/batches/b-1'])
    expect(screen.queryByTestId('run-outcome')).toBeNull()
  })
})

describe('a run when the server or the provider is out', () => {
  const paused: ProviderStatus = { mode: 'live', provider: 'openai', model: 'm', local: false, state: 'paused', failures: 5, retry_at: '', failure: { kind: 'provider_error', detail: 'x' } }

  it('holds Resume until the time the paused provider is tried again, then enables it by itself', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true })
    const at = new Date(Date.now() + 5000).toISOString()
    const failed = { ...run, status: 'failed', resumable: true, result: undefined, outcome: {}, error: 'circuit breaker open', failure: { kind: 'provider_paused', provider: 'openai', retry_at: at, detail: 'circuit breaker open' } }
    show({ 'GET /api/runs/run-1': () => json(200, failed) }, { provider: { ...paused, retry_at: at } })
    const resume = (await screen.findByText(/^Resume from /)).closest('button')!
    expect(resume.disabled).toBe(true)
    expect(document.getElementById(resume.getAttribute('aria-describedby')!)!.textContent).toMatch(/^Calls to the model are paused until .+: the run can be resumed from then\.$/)
    await act(async () => {
      vi.advanceTimersByTime(5200)
    })
    await waitFor(() => expect(screen.getByRole('button', { name: 'Resume run' }).hasAttribute('disabled')).toBe(false))
  })

  it('disables Cancel while the server is down, and says the page reconnects by itself', async () => {
    show(
      {
        'GET /api/runs/run-1': () => json(200, { ...run, status: 'running', result: undefined, outcome: {} }),
        'GET /api/runs/run-1/events': () => {
          throw new TypeError('Failed to fetch')
        },
      },
      { server: 'down', downSince: Date.now() },
    )
    const cancel = await screen.findByRole('button', { name: 'Cancel run' })
    expect((cancel as HTMLButtonElement).disabled).toBe(true)
    expect(screen.getByText('The server is not answering: the run can be cancelled once it is back.')).toBeTruthy()
    expect((await screen.findByTestId('progress-reconnecting')).textContent).toMatch(/reconnects by itself/)
    expect(screen.getByTestId('progress-line').textContent).toMatch(/^Reconnecting…/)
    expect(screen.getByTestId('progress-line').textContent).not.toMatch(/live over/)
  })

  it('reconnects by itself after the stream is lost, says the run was interrupted and resumed, and leaves no banner', async () => {
    let n = 0
    let status = 'running'
    show({
      'GET /api/runs/run-1': () => json(200, { ...run, status, result: status === 'succeeded' ? { title: 'x' } : undefined, outcome: {} }),
      'GET /api/runs/run-1/events': () => {
        n++
        if (n === 1) return sse([{ id: 1, data: { type: 'progress', seq: 1, stage: 'objectives', progress: 40 } }])
        if (n === 2) throw new TypeError('Failed to fetch')
        status = 'succeeded'
        return sse([
          { id: 2, data: { type: 'progress', seq: 2, stage: 'queued', progress: 0, message: 'requeued: its worker stopped' } },
          { id: 3, data: { type: 'progress', seq: 3, stage: 'objectives', progress: 40 } },
          { id: 4, data: { type: 'result', seq: 4, stage: 'done', progress: 100, data: { title: 'x' } } },
        ])
      },
    })
    const said = await screen.findByTestId('run-requeued', undefined, { timeout: 5000 })
    await waitFor(() => expect(screen.getByTestId('run-status').textContent).toBe('succeeded'), { timeout: 5000 })
    expect(said.textContent).toBe('The run was interrupted (the server stopped while it worked on the run) and resumed where it stopped; the steps it had finished were not paid for again.')
    expect(screen.queryByTestId('progress-reconnecting')).toBeNull()
    expect(screen.queryByRole('button', { name: 'Cancel run' })).toBeNull()
  })

  it('resumes from the latest of the run’s pause and the provider’s', () => {
    const now = Date.parse('2026-01-01T12:00:00Z')
    const failed = { ...run, failure: { kind: 'provider_paused' as const, retry_at: '2026-01-01T12:00:30Z', detail: 'x' } }
    expect(resumeFrom(failed, undefined, now)?.toISOString()).toBe('2026-01-01T12:00:30.000Z')
    expect(resumeFrom(failed, { ...paused, retry_at: '2026-01-01T12:01:00Z' }, now)?.toISOString()).toBe('2026-01-01T12:01:00.000Z')
    expect(resumeFrom(failed, undefined, Date.parse('2026-01-01T12:00:31Z'))).toBeUndefined()
    expect(resumeFrom({ ...run, failure: { kind: 'provider_error', detail: 'x' } }, undefined, now)).toBeUndefined()
  })
})

/** live is an event stream that stays open: push sends the next events. */
function live() {
  let ctl: ReadableStreamDefaultController<Uint8Array> | undefined
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (ctl = c) })
  return {
    response: () => new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } }),
    push: async (events: { id?: number; data: unknown }[]) => {
      const r = sseBody(events).getReader()
      for (;;) {
        const { value, done } = await r.read()
        if (done) break
        ctl?.enqueue(value)
      }
    },
  }
}

describe('a run’s retries', () => {
  it('says a retried call as it happens, in words, and stops saying it once the call succeeds', async () => {
    const stream = live()
    const refused = {
      kind: 'network',
      provider: 'openai',
      message: 'cannot reach the provider at http://127.0.0.1:8080/v1: connection refused',
      advice: 'is the server running?',
      detail: 'openai: connection refused at 127.0.0.1:8080',
    }
    show(
      {
        'GET /api/runs/run-1': () => json(200, { ...run, status: 'running', result: undefined, outcome: {} }),
        'GET /api/runs/run-1/events': () => stream.response(),
      },
      { provider: { provider: 'openai', model: 'm', mode: 'live', local: true, address: '127.0.0.1:8080', state: 'ok', failures: 0, retry_at: null } },
    )
    await stream.push([
      { id: 1, data: { type: 'progress', seq: 1, stage: 'objectives', progress: 40 } },
      { id: 2, data: { type: 'retry', seq: 2, stage: 'objectives', progress: 40, data: { call: 'objectives#1', attempt: 2, max_attempts: 4, delay_ms: 2000, failure: refused } } },
    ])
    const line = await screen.findByTestId('progress-retrying')
    expect(line.textContent).toBe('The model server at 127.0.0.1:8080 refused the connection; trying again in 2 s (attempt 2 of 4).')
    // A second call retried at once: the latest is said, and that there are others.
    await stream.push([{ id: 3, data: { type: 'retry', seq: 3, stage: 'objectives', progress: 40, data: { call: 'objectives#2', attempt: 3, max_attempts: 4, delay_ms: 4000, failure: refused } } }])
    await waitFor(() => expect(screen.getByTestId('progress-retrying').textContent).toMatch(/\(attempt 3 of 4\)\. Another call is being tried again too\.$/))
    // The progress keeps its place and words.
    expect(screen.getByTestId('progress-line').textContent).toMatch(/^Running · 40%/)
    await stream.push([
      { id: 4, data: { type: 'retry', seq: 4, stage: 'objectives', progress: 40, data: { call: 'objectives#2', attempt: 3, max_attempts: 4, delay_ms: 0, ended: 'succeeded' } } },
      { id: 5, data: { type: 'retry', seq: 5, stage: 'objectives', progress: 40, data: { call: 'objectives#1', attempt: 2, max_attempts: 4, delay_ms: 0, ended: 'succeeded' } } },
    ])
    await waitFor(() => expect(screen.queryByTestId('progress-retrying')).toBeNull())
  })
})

describe('an interrupted run', () => {
  it('reads Interrupted with Resume after a reload, from its stored status and failure', async () => {
    const interrupted: Run = {
      ...run,
      pipeline: 'chaos',
      status: 'interrupted',
      resumable: true,
      result: undefined,
      outcome: {},
      error: 'interrupted at stage iteration 2: the process was stopped',
      failure: {
        kind: 'interrupted',
        message: 'the run was interrupted at stage iteration 2',
        advice: 'resume it to finish it; its finished steps are not paid again',
        detail: 'interrupted at stage iteration 2: the process was stopped',
      },
    }
    show({
      'GET /api/runs/run-1': () => json(200, interrupted),
      'GET /api/runs/run-1/events': () => sse([]),
    })
    const status = await screen.findByTestId('run-status')
    expect(status.textContent).toBe('interrupted')
    expect(status.className).toMatch(/\bstatus\b/) // shown capitalised: Interrupted
    const problem = screen.getByTestId('run-problem')
    expect(problem.querySelector('.problem-title')?.textContent).toBe('The run was interrupted at stage iteration 2.')
    expect(problem.querySelector('.problem-advice')?.textContent).toBe('Resume it to finish it; its finished steps are not paid again.')
    const resume = screen.getByRole('button', { name: 'Resume run' }) as HTMLButtonElement
    expect(resume.disabled).toBe(false)
    // Nothing says it is still running, or offers to cancel it.
    expect(screen.queryByRole('button', { name: 'Cancel run' })).toBeNull()
    expect(screen.queryByTestId('progress-retrying')).toBeNull()
  })
})
