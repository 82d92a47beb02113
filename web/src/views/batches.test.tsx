import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import { MemoryRouter, Route, Routes } from 'react-router'
import { afterEach, describe, expect, it } from 'vitest'
import { ApiProvider } from '../api/context'
import type { Batch } from '../api/types'
import { fakeServer, sseBody } from '../test/fake'
import { BatchView } from './Batches'

afterEach(cleanup)

const batch = (over: Partial<Batch>): Batch => ({
  batch_id: 'b-1',
  pipeline: 'spark',
  source: 'ideas.csv',
  created_at: '2026-01-01T00:00:00Z',
  counts: { total: 2, pending: 1, running: 0, succeeded: 0, failed: 0, rejected: 1 },
  done: false,
  links: { self: '', events: '', results: '', export: '' },
  items: [
    { line: 2, topic: 'urban farming', status: 'queued', run_id: 'run-000000000001' },
    { line: 3, topic: 'ocean', status: 'rejected', error: 'num_candidates: want an integer, got "many"' },
  ],
  ...over,
})

describe('BatchView', () => {
  it('shows every row live from the progress stream, errors with their lines, and links each run', async () => {
    const finished = batch({
      done: true,
      counts: { total: 2, pending: 0, running: 0, succeeded: 1, failed: 0, rejected: 1 },
      items: [
        { line: 2, topic: 'urban farming', status: 'succeeded', run_id: 'run-000000000001', progress: 100 },
        { line: 3, topic: 'ocean', status: 'rejected', error: 'num_candidates: want an integer, got "many"' },
      ],
    })
    const s = fakeServer({
      'GET /api/batches/b-1/events': () =>
        new Response(
          sseBody([
            { id: 1, event: 'progress', data: batch({}) },
            { id: 2, event: 'done', data: finished },
          ]),
          { headers: { 'Content-Type': 'text/event-stream' } },
        ),
    })
    render(
      <ApiProvider value={s.client()}>
        <MemoryRouter initialEntries={['/batches/b-1']}>
          <Routes>
            <Route path="/batches/:id" element={<BatchView />} />
          </Routes>
        </MemoryRouter>
      </ApiProvider>,
    )
    await waitFor(() => expect(screen.getByTestId('batch-counts').textContent).toBe('1/2 succeeded · 1 rejected'), { timeout: 5000 })
    const rows = within(screen.getByRole('table', { name: 'Rows' })).getAllByRole('row').slice(1)
    expect(rows).toHaveLength(2)
    expect(within(rows[1]).getByRole('note').textContent).toBe('Line 3 was not run: num candidates must be a whole number, not "many"')
    expect(within(rows[0]).getByRole('link').getAttribute('href')).toBe('/runs/run-000000000001')
    expect(screen.getByText('finished')).toBeTruthy()
    expect(screen.queryByRole('button', { name: 'Cancel the rest' })).toBeNull()
    // One stream: done ends it.
    expect(s.calls.filter((c) => c.url.pathname.endsWith('/events'))).toHaveLength(1)
  })
})
