import { render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { MemoryRouter, Route, Routes } from 'react-router'
import { describe, expect, it } from 'vitest'
import { ApiProvider } from '../api/context'
import { fakeServer, json } from '../test/fake'
import { sparkResult } from '../test/fixtures'
import { RunView } from '../views/RunView'
import { Repairs, repairsOf } from './Repairs'

const repairs = [
  { step: 'generate', agent: 'spark.generate', rule: 'count', action: '4 ideas kept of 5 asked' },
  { step: 'evaluate', agent: 'spark.evaluate', rule: 'index', action: 'indices counted from 1 renumbered: 1..4 → 0..3' },
  { step: 'evaluate', agent: 'spark.evaluate', rule: 'range', path: '/evaluations/2/score', action: '10.5 → 10 (the maximum)' },
]

describe('repairs', () => {
  it('reads only well-formed repairs from a result', () => {
    expect(repairsOf(undefined)).toEqual([])
    expect(repairsOf({ repairs: null })).toEqual([])
    expect(repairsOf({ repairs: [{ agent: 'a' }, repairs[0]] })).toEqual([repairs[0]])
  })

  it('shows nothing for a run without repairs', () => {
    const { container } = render(<Repairs result={{ repairs: [] }} />)
    expect(container.innerHTML).toBe('')
  })

  it('shows the count, and the list folded under it', async () => {
    const user = userEvent.setup()
    render(<Repairs result={{ repairs }} />)
    const box = screen.getByTestId('repairs') as HTMLDetailsElement
    expect(within(box).getByLabelText('3 repairs').textContent).toBe('3')
    expect(box.open).toBe(false)
    await user.click(within(box).getByText('Replies repaired'))
    expect(box.open).toBe(true)
    const rows = within(box).getAllByRole('row').map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent))
    expect(rows.slice(1)).toEqual(repairs.map((r) => [r.agent, r.rule, r.path ?? 'the whole reply', r.action]))
  })

  it('is part of a finished run’s view', async () => {
    const s = fakeServer({
      'GET /api/runs/run-1': () =>
        json(200, {
          run_id: 'run-1', pipeline: 'spark', status: 'succeeded', mode: 'live', provider: 'openai', model: 'm',
          title: 'urban farming', created_at: '2025-01-01T00:00:00Z', result: { ...sparkResult, repairs: repairs.slice(0, 1) },
        }),
    })
    render(
      <ApiProvider value={s.client()}>
        <MemoryRouter initialEntries={['/runs/run-1']}>
          <Routes>
            <Route path="/runs/:id" element={<RunView />} />
          </Routes>
        </MemoryRouter>
      </ApiProvider>,
    )
    const box = await screen.findByTestId('repairs')
    expect(within(box).getByLabelText('1 repair').textContent).toBe('1')
    expect(within(box).getByText('4 ideas kept of 5 asked')).toBeTruthy()
  })
})
