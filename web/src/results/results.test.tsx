import { cleanup, render, screen, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { MemoryRouter } from 'react-router'
import { describe, expect, it } from 'vitest'
import { ApiProvider } from '../api/context'
import type { SparkResult } from '../api/types'
import { apiError, fakeServer, json, type Route } from '../test/fake'
import { sparkResult } from '../test/fixtures'
import { GenericResult } from './GenericResult'
import { renderMarkdown } from './Markdown'
import { dimensionRows } from './ScoreCharts'
import { SparkResults, isSparkResult } from './SparkResults'
import { EvalResults, isEvalResult, type EvalReport } from './EvalResults'

function show(ui: React.ReactNode, routes: Record<string, Route> = {}) {
  const s = fakeServer(routes)
  render(
    <ApiProvider value={s.client()}>
      <MemoryRouter>{ui}</MemoryRouter>
    </ApiProvider>,
  )
  return { s, user: userEvent.setup() }
}

const bookmark = (id: string, idea: string) => ({ id, run_id: 'run-1', candidate_index: 0, idea_text: idea, topic: 'urban farming', tags: [], created_at: '2025-01-01T00:00:00Z' })

describe('spark results', () => {
  it('shows every part of every candidate', () => {
    show(<SparkResults runId="run-1" result={sparkResult as SparkResult} bookmarkable />)
    const cards = screen.getAllByTestId('candidate')
    expect(cards).toHaveLength(2)
    const first = within(cards[0])
    for (const [heading, text] of [
      ['Idea', 'Rooftop hydroponics co-ops: neighbours share one system'],
      ['Critique', 'Promising but water costs are unclear.'],
      ['Advocacy', 'STRENGTHS:\n• cheap to start\n• builds community'],
      ['Skepticism', 'RISKS & CHALLENGES:\n• roof load limits'],
      ['Improved idea', 'Rooftop hydroponics co-ops with a shared rain-water tank'],
      ['Critique of the improved idea', 'Water costs addressed.'],
    ]) {
      const h = first.getByRole('heading', { name: heading, level: 4 })
      expect(h.nextElementSibling?.textContent).toBe(text)
    }
    expect(first.getByRole('heading', { level: 3 }).textContent).toBe('Candidate 16.1 → 7.4 (+1.3)')
    expect(within(cards[1]).getByRole('heading', { level: 3 }).textContent).toBe('Candidate 25.5 → 5.2 (−0.3)')
    expect(screen.getByText(/5 generated, 1 near-duplicates dropped, 2 carried through/)).toBeTruthy()
  })

  it('draws the score comparison as a bar chart and the dimensions as a radar chart', async () => {
    show(<SparkResults runId="run-1" result={sparkResult as SparkResult} bookmarkable={false} />)
    const bars = await screen.findByTestId('score-comparison')
    // Two series (initial, improved) of two candidates.
    expect(bars.querySelectorAll('.recharts-bar-rectangle path, .recharts-bar-rectangle rect').length).toBe(4)
    const table = within(bars).getByRole('table')
    expect(within(table).getAllByRole('row').map((r) => r.textContent)).toEqual(['CandidateInitialImproved', '#16.17.4', '#25.55.2'])
    // The legend lists the series as they are drawn.
    expect([...bars.querySelectorAll('.recharts-legend-item-text')].map((e) => e.textContent)).toEqual(['Initial', 'Improved'])

    // Only the first candidate has multi-dimensional scores.
    const radars = await screen.findAllByTestId('dimension-radar')
    expect(radars).toHaveLength(1)
    expect(within(screen.getAllByTestId('candidate')[0]).getByTestId('dimension-radar')).toBe(radars[0])
    expect(radars[0].querySelectorAll('.recharts-radar-polygon').length).toBe(2)
    expect([...radars[0].querySelectorAll('.recharts-legend-item-text')].map((e) => e.textContent)).toEqual(['Initial', 'Improved'])
    expect(radars[0].textContent).toContain('weighted 6.1 → 7.2')
    expect(within(radars[0]).getByRole('row', { name: /Cost effectiveness/ }).textContent).toBe('Cost effectiveness5.06.0')
    // Nothing to bookmark here.
    expect(screen.queryByRole('button', { name: /Bookmark/ })).toBeNull()
  })

  it('pairs dimensions by name', () => {
    expect(dimensionRows({ dimensions: { impact: 4 } }, { dimensions: { impact: 6 } })).toEqual([{ dimension: 'Impact', axis: 'Impact', initial: 4, improved: 6 }])
    expect(dimensionRows(undefined, undefined)).toEqual([])
  })

  it('recognises spark results', () => {
    expect(isSparkResult(sparkResult)).toBe(true)
    expect(isSparkResult({ answer: 'x' })).toBe(false)
    expect(isSparkResult(null)).toBe(false)
  })
})

describe('bookmarking a candidate', () => {
  it('saves with tags and a note, and says so', async () => {
    const { s, user } = show(<SparkResults runId="run-1" result={sparkResult as SparkResult} bookmarkable />, {
      'POST /api/bookmarks': () => json(201, { bookmark: bookmark('bm-12345678', 'x'), duplicates: { recommendation: 'allow', similar: [] } }),
    })
    const card = within(screen.getAllByTestId('candidate')[1])
    await user.type(await card.findByLabelText('Tags'), 'garage, energy')
    await user.type(card.getByLabelText('Note'), 'ask the city')
    await user.click(card.getByRole('button', { name: 'Bookmark candidate 2' }))
    expect(await card.findByText(/Bookmarked/)).toBeTruthy()
    expect(card.getByRole('link', { name: 'Open it' }).getAttribute('href')).toBe('/bookmarks?id=bm-12345678')
    expect(s.calls.find((c) => c.method === 'POST')!.body).toEqual({ run_id: 'run-1', candidate_index: 1, tags: ['garage', 'energy'], notes: 'ask the city', force: false })
  })

  it('remembers which candidates are bookmarked', async () => {
    const { s } = show(<SparkResults runId="run-1" result={sparkResult as SparkResult} bookmarkable />, {
      'GET /api/bookmarks': () => json(200, { bookmarks: [{ ...bookmark('bm-7', 'x'), candidate_index: 1 }], total: 1, next_offset: null }),
    })
    const cards = screen.getAllByTestId('candidate')
    expect(await within(cards[1]).findByText(/Bookmarked/)).toBeTruthy()
    expect(within(cards[1]).getByRole('link', { name: 'Open it' }).getAttribute('href')).toBe('/bookmarks?id=bm-7')
    expect(within(cards[0]).getByRole('button', { name: 'Bookmark candidate 1' })).toBeTruthy()
    expect(s.calls[0].url.searchParams.get('run_id')).toBe('run-1')
  })

  it('shows similar bookmarks when the API warns', async () => {
    const { user } = show(<SparkResults runId="run-1" result={sparkResult as SparkResult} bookmarkable />, {
      'POST /api/bookmarks': () =>
        json(201, { bookmark: bookmark('bm-2', 'x'), duplicates: { recommendation: 'warn', similar: [{ bookmark: bookmark('bm-1', 'Rooftop co-ops'), similarity: 0.74 }] } }),
    })
    await user.click(await screen.findByRole('button', { name: 'Bookmark candidate 1' }))
    const warning = (await screen.findByText(/A similar idea was bookmarked already/)).closest('p')!
    expect(within(warning).getByRole('link', { name: 'open it' }).getAttribute('href')).toBe('/bookmarks?id=bm-1')
  })

  it('shows the block with the near-identical bookmark and can save anyway', async () => {
    let n = 0
    const { s, user } = show(<SparkResults runId="run-1" result={sparkResult as SparkResult} bookmarkable />, {
      'POST /api/bookmarks': (c) =>
        ++n === 1
          ? apiError(409, 'a near-identical bookmark exists', 'conflict', undefined, {
              duplicates: { recommendation: 'block', similar: [{ bookmark: bookmark('bm-1', 'Rooftop hydroponics co-ops'), similarity: 0.95 }] },
            })
          : json(201, { bookmark: bookmark('bm-3', 'x'), duplicates: { recommendation: (c.body as { force: boolean }).force ? 'allow' : 'block', similar: [] } }),
    })
    await user.click(await screen.findByRole('button', { name: 'Bookmark candidate 1' }))
    const alert = await screen.findByRole('alert')
    // In words: no ID, no similarity, no API field.
    expect(alert.textContent).toBe('You already bookmarked this idea (for “urban farming”) — open it · Save anyway')
    expect(within(alert).getByRole('link', { name: 'open it' }).getAttribute('href')).toBe('/bookmarks?id=bm-1')
    await user.click(within(alert).getByRole('button', { name: 'Save anyway' }))
    expect(await screen.findByText(/Bookmarked/)).toBeTruthy()
    expect(s.calls.filter((c) => c.method === 'POST').map((c) => (c.body as { force: boolean }).force)).toEqual([false, true])
  })

  it('shows an error about the tags under the tags field', async () => {
    const { user } = show(<SparkResults runId="run-1" result={sparkResult as SparkResult} bookmarkable />, {
      'POST /api/bookmarks': () => apiError(422, 'tag "a b" must not contain spaces', 'validation', 'tags'),
    })
    const card = within(screen.getAllByTestId('candidate')[0])
    await user.type(await card.findByLabelText('Tags'), 'a b')
    await user.click(card.getByRole('button', { name: 'Bookmark candidate 1' }))
    const err = await card.findByText('Tag "a b" must not contain spaces')
    expect(card.getByLabelText('Tags').getAttribute('aria-describedby')).toBe(err.id)
  })
})

describe('other pipelines', () => {
  it('renders the Markdown export and the raw JSON', async () => {
    const result = { answer: 'B-trees favour reads', route: { path: 'complex' } }
    const { s } = show(<GenericResult runId="run-9" result={result} />, {
      'GET /api/runs/run-9/export': () => new Response('# Debate\n\n**Answer:** B-trees favour reads\n\n| a | b |\n|---|---|\n| 1 | 2 |\n', { status: 200 }),
    })
    const h = await screen.findByRole('heading', { name: 'Debate', level: 1 })
    expect(h.closest('.markdown')).toBeTruthy()
    expect(screen.getByRole('table')).toBeTruthy()
    expect(s.calls[0].url.searchParams.get('format')).toBe('markdown')
    expect(screen.getByText('Raw JSON').closest('details')?.querySelector('pre')?.textContent).toBe(JSON.stringify(result, null, 2))
  })

  it('says why the report is missing', async () => {
    show(<GenericResult runId="run-9" result={{}} />, { 'GET /api/runs/run-9/export': () => apiError(422, 'format markdown is not available for this run', 'validation', 'format') })
    const alert = await screen.findByRole('alert')
    expect(alert.querySelector('.problem-title')!.textContent).toBe('Format markdown is not available for this run.')
    expect(alert.textContent).toContain('Technical detail')
  })

  it('renders Markdown without scripts, handlers or javascript: links', () => {
    const html = renderMarkdown('# T\n\n<img src=x onerror="alert(1)"><script>alert(2)</script>\n\n[x](javascript:alert(3)) [ok](https://example.org)')
    expect(html).toContain('<h1>T</h1>')
    expect(html).not.toMatch(/onerror|<script|javascript:/)
    expect(html).toContain('href="https://example.org"')
  })
})

describe('eval results', () => {
  const report = {
    run_id: 'ev-1', pipeline: 'spark', provider: 'mock', model: 'mock-1', judge_provider: 'mock', judge_model: 'mock-1',
    topics: 3, n: 2, wins: 1, losses: 0, ties: 1, failures: 1, win_rate: 0.75, ci: [0.3, 0.95], position_consistency: 0.5,
    pipeline_repairs: 0, repairs: [], notice: 'MOCK DATA: this eval proves nothing about the pipeline.',
    usage: {
      pipeline: { llm_calls: 12, cached_calls: 0, input_tokens: 100, output_tokens: 50, cost_usd: 0, wall_ms: 2000 },
      baseline: { llm_calls: 2, cached_calls: 0, input_tokens: 10, output_tokens: 5, cost_usd: 0, wall_ms: 500 },
      judge: { llm_calls: 4, cached_calls: 0, input_tokens: 40, output_tokens: 4, cost_usd: 0, wall_ms: 100 },
    },
    items: [
      { index: 1, topic: 'urban farming', winner: 'pipeline', consistent: true, run_id: 'run-a', verdicts: [{ order: 'pipeline_first', winner: 'pipeline', reasons: 'More concrete.' }, { order: 'baseline_first', winner: 'pipeline', reasons: 'More concrete.' }] },
      { index: 2, topic: 'ocean cleanup', winner: 'tie', consistent: false, run_id: 'run-b', reused: true, verdicts: [{ order: 'pipeline_first', winner: 'pipeline', reasons: 'A is first.' }, { order: 'baseline_first', winner: 'baseline', reasons: 'B is worse.' }] },
      { index: 3, topic: 'quiet cities', winner: '', consistent: false, verdicts: null, error: 'provider down' },
    ],
  }

  it('tells an eval report from other results', () => {
    expect(isEvalResult(report)).toBe(true)
    expect(isEvalResult(sparkResult)).toBe(false)
  })

  it('shows the win rate with its interval, the topics and links to their runs', () => {
    show(<EvalResults result={report as unknown as EvalReport} />)
    expect(screen.getByTestId('eval-headline').textContent).toContain('win rate 75.0% (95% CI 30.0%–95.0%)')
    expect(screen.getByRole('note').textContent).toContain('proves nothing')
    expect(screen.getByRole('figure').getAttribute('aria-label')).toContain('95% interval 30.0% to 95.0%')
    const rows = within(screen.getByTestId('eval-topics')).getAllByRole('row').slice(1)
    expect(rows).toHaveLength(3)
    expect(within(rows[0]).getByRole('link', { name: 'run' }).getAttribute('href')).toBe('/runs/run-a')
    expect(rows[0].textContent).toContain('More concrete.')
    expect(rows[0].textContent).not.toContain('More concrete. / More concrete.')
    expect(rows[1].textContent).toContain('tie (orders disagree)')
    expect(within(rows[1]).getByRole('link', { name: 'earlier run' }).getAttribute('href')).toBe('/runs/run-b')
    expect(rows[2].textContent).toContain('failed')
    expect(rows[2].textContent).toContain('provider down')
  })

  it('does not headline the win rate of too few topics: it says first that they cannot tell', () => {
    show(<EvalResults result={report as unknown as EvalReport} />)
    const headline = screen.getByTestId('eval-headline')
    expect(screen.getByTestId('eval-undecided').textContent).toBe('2 topics cannot tell which does better: the 95% interval of the win rate (30.0%–95.0%) includes 50%, a draw; more topics narrow it. ')
    expect(headline.textContent!.indexOf('cannot tell')).toBeLessThan(headline.textContent!.indexOf('win rate 75.0%'))
    expect(headline.querySelector('strong:not(.undecided)')).toBeNull()
    cleanup()
    // An interval clear of 50% tells: the win rate is the headline.
    show(<EvalResults result={{ ...report, n: 40, ci: [0.6, 0.85] } as unknown as EvalReport} />)
    expect(screen.queryByTestId('eval-undecided')).toBeNull()
    expect(screen.getByTestId('eval-headline').querySelector('strong')!.textContent).toBe('75.0%')
  })
})
