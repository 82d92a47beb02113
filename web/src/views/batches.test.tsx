import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { MemoryRouter, Route, Routes } from 'react-router'
import { afterEach, describe, expect, it } from 'vitest'
import { ApiProvider } from '../api/context'
import type { Batch } from '../api/types'
import { fakeServer, sseBody } from '../test/fake'
import { BatchView, followBatch } from './Batches'

const realClick = HTMLAnchorElement.prototype.click
afterEach(() => {
  cleanup()
  HTMLAnchorElement.prototype.click = realClick
})

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

  it('shows each succeeded row’s best idea and score, and its outcome; downloads the results of a CSV file as CSV', async () => {
    const done = batch({
      done: true,
      counts: { total: 2, pending: 0, running: 0, succeeded: 1, failed: 0, rejected: 1 },
      items: [
        { line: 2, topic: 'urban farming', status: 'succeeded', run_id: 'run-000000000001', progress: 100, best: { text: 'Rooftop co-ops with a shared tank', score: 7.4 }, outcome: { repairs: 2 } },
        { line: 3, topic: 'ocean', status: 'rejected', error: 'num_candidates: want an integer, got "many"' },
      ],
    })
    const s = fakeServer({
      'GET /api/batches/b-1/events': () => new Response(sseBody([{ id: 1, event: 'done', data: done }]), { headers: { 'Content-Type': 'text/event-stream' } }),
      'GET /api/batches/b-1/results': (c) =>
        c.url.searchParams.get('format') === 'csv'
          ? new Response('line,topic\n2,urban farming\n', { headers: { 'Content-Type': 'text/csv', 'Content-Disposition': 'attachment; filename="madspark-batch-000000b1-results.csv"' } })
          : new Response('{}', { status: 500 }),
    })
    const clicked: string[] = []
    HTMLAnchorElement.prototype.click = function () {
      clicked.push(this.download)
    }
    URL.createObjectURL = () => 'blob:x'
    URL.revokeObjectURL = () => {}
    render(
      <ApiProvider value={s.client()}>
        <MemoryRouter initialEntries={['/batches/b-1']}>
          <Routes>
            <Route path="/batches/:id" element={<BatchView />} />
          </Routes>
        </MemoryRouter>
      </ApiProvider>,
    )
    const rows = within(await screen.findByRole('table', { name: 'Rows' })).getAllByRole('row').slice(1)
    expect(within(rows[0]).getByTestId('row-best').textContent).toBe('Rooftop co-ops with a shared tank')
    expect(within(rows[0]).getByTestId('row-score').textContent).toBe('7.4')
    expect(within(rows[0]).getByTestId('outcome-mark').textContent).toBe('2 repairs')
    expect(within(rows[1]).getByTestId('row-best').textContent).toBe('—')
    const csv = screen.getByRole('button', { name: 'Download results (CSV)' })
    expect(csv.className).toBe('primary')
    await userEvent.setup().click(csv)
    await waitFor(() => expect(clicked).toEqual(['madspark-batch-000000b1-results.csv']))
    expect(s.calls.some((c) => c.url.pathname === '/api/batches/b-1/results' && c.url.searchParams.get('format') === 'csv')).toBe(true)
  })

  it('follows a batch again by itself after the server comes back', async () => {
    let n = 0
    const s = fakeServer({
      'GET /api/batches/b-1/events': () => {
        n++
        if (n < 3) throw new TypeError('Failed to fetch')
        return new Response(sseBody([{ id: 1, event: 'done', data: batch({ done: true }) }]), { headers: { 'Content-Type': 'text/event-stream' } })
      },
    })
    const seen: boolean[] = []
    const errors: string[] = []
    await new Promise<void>((resolve) => {
      followBatch(s.client(), 'b-1', (b) => {
        seen.push(b.done)
        resolve()
      }, (e) => errors.push(e))
    })
    expect([n, seen, errors]).toEqual([3, [true], []])
  })
})
