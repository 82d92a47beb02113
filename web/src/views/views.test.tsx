import { cleanup, render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { MemoryRouter, Route, Routes, useLocation, useParams } from 'react-router'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { ApiProvider } from '../api/context'
import type { Run } from '../api/types'
import { apiError, fakeServer, json, sse, type Route as FakeRoute } from '../test/fake'
import { sparkResult } from '../test/fixtures'
import { Bookmarks } from './Bookmarks'
import { History } from './History'
import { RunView } from './RunView'

function Where() {
  const loc = useLocation()
  return <output data-testid="where">{loc.pathname + loc.search}</output>
}

function OtherRun() {
  return <p>opened run {useParams().id}</p>
}

function show(path: string, routes: Record<string, FakeRoute>) {
  const s = fakeServer(routes)
  render(
    <ApiProvider value={s.client()}>
      <MemoryRouter initialEntries={[path]}>
        <Routes>
          <Route path="/runs" element={<History />} />
          <Route path="/runs/:id" element={path.startsWith('/runs/') ? <RunView /> : <OtherRun />} />
          <Route path="/bookmarks" element={<Bookmarks />} />
        </Routes>
        <Where />
      </MemoryRouter>
    </ApiProvider>,
  )
  return { s, user: userEvent.setup() }
}

const baseRun: Run = {
  run_id: 'run-1',
  pipeline: 'spark',
  status: 'running',
  mode: 'mock',
  provider: 'mock',
  model: 'mock',
  title: 'urban farming',
  created_at: '2025-01-01T00:00:00Z',
  progress: { stage: 'generate', progress: 5, message: 'generating 5 ideas' },
}

beforeEach(() => {
  // Progress then comes over SSE, which the fake server speaks.
  vi.stubGlobal('WebSocket', undefined)
})
afterEach(() => vi.unstubAllGlobals())

describe('a run', () => {
  it('shows live progress by stage, then the results, in mock mode with a banner', async () => {
    const { s } = show('/runs/run-1', {
      'GET /api/runs/run-1': () => json(200, baseRun),
      'GET /api/runs/run-1/events': () => {
        const events = [
          { type: 'progress', seq: 1, stage: 'generate', progress: 5, message: 'generating 5 ideas' },
          { type: 'progress', seq: 2, stage: 'evaluate', progress: 20, message: 'evaluating 5 ideas' },
          { type: 'progress', seq: 3, stage: 'advocate', progress: 45, message: 'arguing' },
        ]
        return sse(events.map((e) => ({ id: e.seq, event: e.type, data: e })))
      },
    })
    expect((await screen.findByTestId('mock-banner')).textContent).toMatch(/Mock mode/)
    const stages = await screen.findByRole('list', { name: 'Stages' })
    await waitFor(() => expect(within(stages).getAllByRole('listitem').map((li) => [li.dataset.stage, li.dataset.status])).toEqual([
      ['generate', 'done'],
      ['evaluate', 'done'],
      ['advocate', 'active'],
    ]))
    expect(screen.getByRole('progressbar', { name: 'Run progress' }).getAttribute('aria-valuenow')).toBe('45')
    expect(screen.getByRole('button', { name: 'Cancel run' })).toBeTruthy()
    // The stream ended before the run: the view reconnects after seq 3.
    await waitFor(() => expect(s.calls.some((c) => c.url.pathname.endsWith('/events') && c.url.searchParams.get('after') === '3')).toBe(true))
    expect(screen.queryByTestId('candidate')).toBeNull()
  })

  it('loads the results when the final message arrives', async () => {
    let finished = false
    show('/runs/run-1', {
      'GET /api/runs/run-1': () => json(200, finished ? { ...baseRun, status: 'succeeded', result: sparkResult, usage: { llm_calls: 8 } } : baseRun),
      'GET /api/runs/run-1/events': () => {
        finished = true
        return sse([
          { id: 1, data: { type: 'progress', seq: 1, stage: 'generate', progress: 5 } },
          { id: 2, data: { type: 'result', seq: 2, stage: 'done', progress: 100, data: sparkResult } },
        ])
      },
    })
    expect(await screen.findAllByTestId('candidate')).toHaveLength(2)
    expect(screen.getByTestId('run-status').textContent).toBe('succeeded')
    expect(screen.getByRole('progressbar').getAttribute('aria-valuenow')).toBe('100')
    expect(screen.queryByRole('button', { name: 'Cancel run' })).toBeNull()
    expect(screen.getByTestId('run-usage').textContent).toBe('8 LLM calls, 0 tokens, $0')
    expect(await screen.findByTestId('score-comparison')).toBeTruthy()
  })

  it('cancels a running run, and shows why when it cannot', async () => {
    let cancelled = false
    const { user } = show('/runs/run-1', {
      'GET /api/runs/run-1': () => json(200, cancelled ? { ...baseRun, status: 'cancelled' } : baseRun),
      'GET /api/runs/run-1/events': () => new Response(new ReadableStream({ start() {} }), { headers: { 'Content-Type': 'text/event-stream' } }),
      'DELETE /api/runs/run-1': () => {
        cancelled = true
        return json(202, { run_id: 'run-1', status: 'cancelled' })
      },
    })
    await user.click(await screen.findByRole('button', { name: 'Cancel run' }))
    // It asks first.
    const confirm = screen.getByRole('group', { name: /Cancel this run\?/ })
    expect(cancelled).toBe(false)
    await user.click(within(confirm).getByRole('button', { name: 'Yes, cancel the run' }))
    expect((await screen.findByTestId('run-cancelled')).textContent).toContain('The run was cancelled.')
    expect(screen.getByTestId('run-status').textContent).toBe('cancelled')
    expect(screen.getByTestId('progress').textContent).toMatch(/Cancelled · 5%/)
  })

  it('shows an interrupted run, resumes it, and follows it to its result', async () => {
    let state: 'interrupted' | 'queued' | 'succeeded' = 'interrupted'
    const interrupted = {
      ...baseRun,
      status: 'interrupted',
      resumable: true,
      error: 'interrupted: madspark (pid 41 on host h) stopped without finishing it; resume with: madspark resume run-1',
      failure: { kind: 'interrupted', detail: 'interrupted: madspark (pid 41 on host h) stopped without finishing it; resume with: madspark resume run-1' },
    }
    const { s, user } = show('/runs/run-1', {
      'GET /api/runs/run-1': () =>
        json(200, state === 'interrupted' ? interrupted : state === 'queued' ? { ...baseRun, status: 'queued', resumable: false } : { ...baseRun, status: 'succeeded', result: sparkResult }),
      'POST /api/runs/run-1/resume': () => {
        state = 'queued'
        return json(202, { ...baseRun, status: 'queued', resumable: false })
      },
      'GET /api/runs/run-1/events': () => {
        state = 'succeeded'
        return sse([
          { id: 7, data: { type: 'progress', seq: 7, stage: 'generate', progress: 5 } },
          { id: 8, data: { type: 'result', seq: 8, stage: 'done', progress: 100, data: sparkResult } },
        ])
      },
    })
    expect(await screen.findByText(/The run was interrupted/)).toBeTruthy()
    expect(screen.getByTestId('run-status').textContent).toBe('interrupted')
    expect(screen.queryByRole('button', { name: 'Cancel run' })).toBeNull()
    // Over: no stream is followed until it is resumed.
    expect(s.calls.some((c) => c.url.pathname.endsWith('/events'))).toBe(false)
    await user.click(screen.getByRole('button', { name: 'Resume run' }))
    expect(await screen.findAllByTestId('candidate')).toHaveLength(2)
    expect(screen.getByTestId('run-status').textContent).toBe('succeeded')
    expect(screen.queryByRole('button', { name: 'Resume run' })).toBeNull()
    expect(s.calls.filter((c) => c.method === 'POST' && c.url.pathname === '/api/runs/run-1/resume')).toHaveLength(1)
  })

  it('says why a run cannot be resumed beside the button', async () => {
    const { user } = show('/runs/run-1', {
      'GET /api/runs/run-1': () => json(200, { ...baseRun, status: 'failed', resumable: true, error: 'provider down' }),
      'POST /api/runs/run-1/resume': () => apiError(409, 'run run-1 is being worked by madspark (pid 7 on host h)', 'conflict'),
    })
    await user.click(await screen.findByRole('button', { name: 'Resume run' }))
    expect((await screen.findByText(/being worked by madspark/, { selector: '.problem-title' })).textContent).toBe('Run run-1 is being worked by madspark (pid 7 on host h).')
  })

  it('shows why a run cannot be cancelled beside the button', async () => {
    const { user } = show('/runs/run-1', {
      'GET /api/runs/run-1': () => json(200, baseRun),
      'GET /api/runs/run-1/events': () => new Response(new ReadableStream({ start() {} }), { headers: { 'Content-Type': 'text/event-stream' } }),
      'DELETE /api/runs/run-1': () => apiError(409, 'run run-1 already finished', 'conflict'),
    })
    await user.click(await screen.findByRole('button', { name: 'Cancel run' }))
    const button = screen.getByRole('button', { name: 'Yes, cancel the run' })
    await user.click(button)
    const err = (await screen.findByText('Run run-1 already finished.')).closest('[role=alert]')!
    expect(button.getAttribute('aria-describedby')).toBe(err.id)
  })

  it('exports in the chosen format, and shows an export error beside the control', async () => {
    const created: Blob[] = []
    vi.stubGlobal('URL', Object.assign(URL, { createObjectURL: (b: Blob) => (created.push(b), 'blob:x'), revokeObjectURL: () => {} }))
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(() => {})
    const { s, user } = show('/runs/run-1', {
      'GET /api/runs/run-1': () => json(200, { ...baseRun, status: 'succeeded', result: sparkResult }),
      'GET /api/runs/run-1/export': (c) =>
        c.url.searchParams.get('format') === 'pdf'
          ? apiError(422, 'pdf export is not available for this pipeline', 'validation', 'format')
          : new Response('a,b\n', { headers: { 'Content-Disposition': 'attachment; filename="madspark-spark-run-1.csv"' } }),
    })
    const format = await screen.findByLabelText('Export format')
    await user.selectOptions(format, 'csv')
    await user.click(screen.getByRole('button', { name: 'Download' }))
    await waitFor(() => expect(click).toHaveBeenCalledTimes(1))
    expect(await created[0].text()).toBe('a,b\n')
    expect((click.mock.contexts[0] as HTMLAnchorElement).download).toBe('madspark-spark-run-1.csv')
    await user.selectOptions(format, 'pdf')
    await user.click(screen.getByRole('button', { name: 'Download' }))
    const err = (await screen.findByText('Pdf export is not available for this pipeline.')).closest('[role=alert]')!
    expect(format.getAttribute('aria-describedby')).toBe(err.id)
    expect(s.calls.filter((c) => c.url.pathname.endsWith('/export')).map((c) => c.url.searchParams.get('format'))).toEqual(['csv', 'pdf'])
    click.mockRestore()
  })

  it('shows no usage while a running run has counted no calls', async () => {
    show('/runs/run-1', {
      'GET /api/runs/run-1': () => json(200, { ...baseRun, usage: { llm_calls: 0 } }),
      'GET /api/runs/run-1/events': () => new Response(new ReadableStream({ start() {} }), { headers: { 'Content-Type': 'text/event-stream' } }),
    })
    await screen.findByRole('button', { name: 'Cancel run' })
    expect(screen.queryByText('Usage')).toBeNull()
    // The usage line ("0 LLM calls"), not the call timeline's heading.
    expect(screen.queryByText(/\d LLM calls?/)).toBeNull()
  })

  it('offers a run without a result only its JSON export', async () => {
    show('/runs/run-1', { 'GET /api/runs/run-1': () => json(200, { ...baseRun, status: 'failed', error: 'provider down' }) })
    const format = (await screen.findByLabelText('Export format')) as HTMLSelectElement
    expect([...format.options].map((o) => o.value)).toEqual(['json'])
    expect(format.value).toBe('json')
    expect(format.getAttribute('aria-describedby')).toBe('export-hint')
    expect(screen.getByText(/provider down/)).toBeTruthy()
  })

  it('says when the run does not exist', async () => {
    show('/runs/nope', {})
    expect((await screen.findByRole('alert')).textContent).toBe('There is no run with the ID nope: the link may be wrong, or the run deleted.')
    expect(screen.getByRole('heading', { level: 1 }).textContent).toBe('Run not found')
  })

  it("shows the server's reason when a run cannot be loaded", async () => {
    show('/runs/run-1', { 'GET /api/runs/run-1': () => apiError(503, 'the database is unavailable', 'unavailable') })
    const alert = await screen.findByRole('alert')
    expect(alert.querySelector('.problem-title')!.textContent).toBe('The madspark server had an internal error.')
    expect(alert.querySelector('.problem-detail')!.textContent).toContain('the database is unavailable')
  })
})

const bm = (i: number, tags: string[] = []) => ({
  id: `bm-${i}`,
  run_id: `run-${i}`,
  candidate_index: 0,
  idea_text: `idea ${i}`,
  improved_idea: `improved idea ${i}`,
  topic: 'urban farming',
  score: 6,
  improved_score: 7,
  tags,
  created_at: '2025-01-01T00:00:00Z',
})

describe('bookmarks', () => {
  it('edits a bookmark’s tags and notes in place, and says a refused tag beside its field', async () => {
    const sent: unknown[] = []
    const { user } = show('/bookmarks', {
      'GET /api/bookmarks': () => json(200, { bookmarks: [bm(1, ['old'])], total: 1, next_offset: null }),
      'PATCH /api/bookmarks/bm-1': (c) => {
        sent.push(c.body)
        const tags = (c.body as { tags: string[] }).tags
        if (tags.some((t) => t.length > 50)) return apiError(422, 'tags[1]: a tag is at most 50 characters', 'validation', 'tags[1]')
        return json(200, { ...bm(1), tags, notes: (c.body as { notes: string }).notes })
      },
    })
    const item = await screen.findByTestId('bookmark')
    await user.click(within(item).getByRole('button', { name: /^Edit tags and notes/ }))
    const tags = within(item).getByLabelText('Tags')
    expect(document.activeElement).toBe(tags)
    expect((tags as HTMLInputElement).value).toBe('old')
    await user.clear(tags)
    await user.type(tags, `new, ${'x'.repeat(51)}`)
    await user.click(within(item).getByRole('button', { name: 'Save' }))
    const err = await within(item).findByRole('alert')
    expect(err.textContent).toBe('A tag is at most 50 characters')
    expect(tags.getAttribute('aria-invalid')).toBe('true')
    await user.clear(tags)
    await user.type(tags, 'new, rooftops')
    await user.type(within(item).getByLabelText('Notes'), 'Ask the council first.')
    await user.click(within(item).getByRole('button', { name: 'Save' }))
    await waitFor(() => expect(within(item).queryByTestId('bookmark-editor')).toBeNull())
    expect(sent[1]).toEqual({ tags: ['new', 'rooftops'], notes: 'Ask the council first.' })
    expect(within(item).getByTestId('bookmark-notes').textContent).toBe('Ask the council first.')
    expect(within(item).getAllByRole('button', { name: /^Filter by tag/ }).map((b) => b.textContent)).toEqual(['#new', '#rooftops'])
    await waitFor(() => expect(document.activeElement).toBe(within(item).getByRole('button', { name: /^Edit tags and notes/ })))
  })

  it('imports a bookmarks.json file and says what it added; shows one bookmark by its ID', async () => {
    let imported: unknown
    const { user } = show('/bookmarks?id=bm-2', {
      'GET /api/bookmarks/bm-2': () => json(200, bm(2)),
      'GET /api/bookmarks': () => json(200, { bookmarks: [bm(1), bm(2)], total: 2, next_offset: null }),
      'POST /api/bookmarks/import': (c) => {
        imported = c.body
        return json(200, { imported: 1, skipped: 2 })
      },
    })
    expect(await screen.findAllByTestId('bookmark')).toHaveLength(1)
    expect(screen.getByRole('link', { name: 'Show all bookmarks' }).getAttribute('href')).toBe('/bookmarks')
    const file = new File([JSON.stringify({ b1: { id: 'b1', idea_text: 'x' } })], 'bookmarks.json', { type: 'application/json' })
    await user.upload(screen.getByLabelText('Import bookmarks.json…'), file)
    expect((await screen.findByText(/^Imported 1 bookmark/)).textContent).toBe('Imported 1 bookmark; 2 were kept already and skipped.')
    expect(imported).toEqual({ b1: { id: 'b1', idea_text: 'x' } })
  })

  it('says a file that is not JSON cannot be imported, in words', async () => {
    const { s, user } = show('/bookmarks', { 'GET /api/bookmarks': () => json(200, { bookmarks: [], total: 0, next_offset: null }) })
    await user.upload(await screen.findByLabelText('Import bookmarks.json…'), new File(['not json'], 'bookmarks.json', { type: 'application/json' }))
    expect((await screen.findByRole('alert')).textContent).toContain('The file is not JSON')
    expect(s.calls.some((c) => c.method === 'POST')).toBe(false)
  })

  it('lists, pages, searches and filters by tag', async () => {
    const { s, user } = show('/bookmarks', {
      'GET /api/bookmarks': (c) => {
        const offset = Number(c.url.searchParams.get('offset') ?? 0)
        const tags = c.url.searchParams.getAll('tag')
        const all = Array.from({ length: 25 }, (_, i) => bm(i + 1, i % 2 ? ['odd'] : ['even'])).filter((b) => tags.every((t) => b.tags.includes(t)))
        const page = all.slice(offset, offset + 20)
        return json(200, { bookmarks: page, total: all.length, next_offset: offset + 20 < all.length ? offset + 20 : null })
      },
      'GET /api/bookmarks/search': (c) => json(200, { bookmarks: [bm(7, ['odd']), bm(8, ['even'])].filter((b) => b.improved_idea.includes(c.url.searchParams.get('q') ?? '')), total: 1, next_offset: null }),
    })
    expect(await screen.findAllByTestId('bookmark')).toHaveLength(20)
    const pager = screen.getByRole('navigation', { name: 'Pages of bookmarks' })
    expect(pager.textContent).toContain('1–20 of 25')
    await user.click(within(pager).getByRole('button', { name: 'Next' }))
    await waitFor(() => expect(screen.getAllByTestId('bookmark')).toHaveLength(5))
    expect(screen.getByTestId('where').textContent).toBe('/bookmarks?offset=20')

    await user.type(screen.getByLabelText('Search'), 'idea 7')
    await user.click(screen.getByRole('button', { name: 'Search' }))
    await waitFor(() => expect(screen.getAllByTestId('bookmark').map((b) => b.querySelector('.prose')?.textContent)).toEqual(['improved idea 7']))
    expect(s.calls.at(-1)?.url.pathname).toBe('/api/bookmarks/search')
    expect(s.calls.at(-1)?.url.searchParams.get('offset')).toBe('0')

    await user.clear(screen.getByLabelText('Search'))
    await user.type(screen.getByLabelText('Tags'), 'odd')
    await user.click(screen.getByRole('button', { name: 'Search' }))
    await waitFor(() => expect(screen.getByRole('navigation', { name: 'Pages of bookmarks' }).textContent).toContain('1–12 of 12'))
    expect(s.calls.at(-1)?.url.searchParams.getAll('tag')).toEqual(['odd'])
  })

  it('deletes after confirmation', async () => {
    let gone = false
    const { s, user } = show('/bookmarks', {
      'GET /api/bookmarks': () => json(200, { bookmarks: gone ? [bm(2)] : [bm(1), bm(2)], total: gone ? 1 : 2, next_offset: null }),
      'DELETE /api/bookmarks/bm-1': () => {
        gone = true
        return new Response(null, { status: 204 })
      },
    })
    const first = within((await screen.findAllByTestId('bookmark'))[0])
    await user.click(first.getByRole('button', { name: 'Delete' }))
    expect(first.getByText('Delete this bookmark?')).toBeTruthy()
    await user.click(first.getByRole('button', { name: 'Delete' }))
    await waitFor(() => expect(screen.getAllByTestId('bookmark')).toHaveLength(1))
    expect(s.calls.filter((c) => c.method === 'DELETE')).toHaveLength(1)
  })

  it('remixes the selected bookmarks into a new run', async () => {
    const { s, user } = show('/bookmarks', {
      'GET /api/bookmarks': () => json(200, { bookmarks: [bm(1), bm(2), bm(3)], total: 3, next_offset: null }),
      'POST /api/bookmarks/remix': () => json(202, { run_id: 'run-remix', status: 'queued' }),
    })
    await screen.findAllByTestId('bookmark')
    await user.click(screen.getByRole('checkbox', { name: 'Select for remix: improved idea 1' }))
    await user.click(screen.getByRole('checkbox', { name: 'Select for remix: improved idea 3' }))
    const panel = screen.getByRole('form', { name: 'Remix 2 selected' })
    const more = within(panel).getByText('Topic and context (optional)').closest('details')!
    expect(more.open).toBe(false)
    await user.click(within(panel).getByText('Topic and context (optional)'))
    expect(more.open).toBe(true)
    await user.type(within(panel).getByLabelText('Topic'), 'farming in schools')
    await user.click(within(panel).getByRole('button', { name: 'Remix into a new run' }))
    expect(await screen.findByText('opened run run-remix')).toBeTruthy()
    expect(s.calls.find((c) => c.method === 'POST')?.body).toEqual({ bookmark_ids: ['bm-1', 'bm-3'], topic: 'farming in schools' })
  })
})

describe('remix errors', () => {
  it('unfolds the topic and context to show an error about one of them', async () => {
    const { user } = show('/bookmarks', {
      'GET /api/bookmarks': () => json(200, { bookmarks: [bm(1)], total: 1, next_offset: null }),
      'POST /api/bookmarks/remix': () => apiError(422, 'topic is too long', 'validation', 'topic'),
    })
    await user.click(await screen.findByRole('checkbox', { name: 'Select for remix: improved idea 1' }))
    await user.click(screen.getByRole('button', { name: 'Remix into a new run' }))
    const err = await screen.findByText('Topic is too long')
    expect(err.closest('details')!.open).toBe(true)
    expect(screen.getByLabelText('Topic').getAttribute('aria-describedby')).toBe(err.id)
  })
})

describe('run history', () => {
  it('filters by pipeline and status and pages', async () => {
    const { s, user } = show('/runs', {
      'GET /api/pipelines': () => json(200, { pipelines: [{ name: 'spark', params_schema: {} }, { name: 'debate', title: 'Debate', params_schema: {} }] }),
      'GET /api/runs': (c) => {
        const offset = Number(c.url.searchParams.get('offset') ?? 0)
        return json(200, {
          runs: [{ ...baseRun, run_id: `r-${offset}`, title: `run at ${offset}`, status: 'succeeded' }],
          limit: 20,
          offset,
          next_offset: offset < 20 ? offset + 20 : null,
        })
      },
    })
    expect(await screen.findByRole('link', { name: 'run at 0' })).toBeTruthy()
    await user.selectOptions(await screen.findByLabelText('Pipeline'), 'debate')
    await user.selectOptions(screen.getByLabelText('Status'), 'failed')
    await waitFor(() => {
      const q = s.calls.at(-1)!.url.searchParams
      expect([q.get('pipeline'), q.get('status'), q.get('limit'), q.get('offset')]).toEqual(['debate', 'failed', '20', '0'])
    })
    await user.click(screen.getByRole('button', { name: 'Next' }))
    expect(await screen.findByRole('link', { name: 'run at 20' })).toBeTruthy()
    expect(screen.getByTestId('where').textContent).toBe('/runs?pipeline=debate&status=failed&offset=20')
    expect((screen.getByRole('button', { name: 'Next' }) as HTMLButtonElement).disabled).toBe(true)
  })

  it('says there are no runs, with no pager, and keeps the pager past the last page', async () => {
    show('/runs', {
      'GET /api/pipelines': () => json(200, { pipelines: [] }),
      'GET /api/runs': (c) => json(200, { runs: [], limit: 20, offset: Number(c.url.searchParams.get('offset') ?? 0), next_offset: null }),
    })
    expect(await screen.findByText('No runs yet.')).toBeTruthy()
    expect(screen.queryByRole('navigation', { name: 'Pages of runs' })).toBeNull()
    cleanup()
    show('/runs?offset=40', {
      'GET /api/pipelines': () => json(200, { pipelines: [] }),
      'GET /api/runs': () => json(200, { runs: [], limit: 20, offset: 40, next_offset: null }),
    })
    const pager = await screen.findByRole('navigation', { name: 'Pages of runs' })
    expect((within(pager).getByRole('button', { name: 'Previous' }) as HTMLButtonElement).disabled).toBe(false)
  })
})

describe('the page', () => {
  it('has the navigation, names the page, and shows a mock-mode banner when the server is in mock mode', async () => {
    const { App } = await import('../App')
    const s = fakeServer({
      'GET /health/detailed': () => json(200, { status: 'ok', mode: 'mock' }),
      'GET /api/runs': () => json(200, { runs: [], limit: 20, offset: 0, next_offset: null }),
      'GET /api/pipelines': () => json(200, { pipelines: [] }),
      'GET /api/bookmarks': () => json(200, { bookmarks: [], total: 0, next_offset: null }),
    })
    render(
      <ApiProvider value={s.client()}>
        <MemoryRouter initialEntries={['/runs']}>
          <App />
        </MemoryRouter>
      </ApiProvider>,
    )
    const nav = screen.getByRole('navigation', { name: 'Main' })
    expect(within(nav).getAllByRole('link').map((a) => a.textContent)).toEqual(['New run', 'Runs', 'Batches', 'Evals', 'Chat', 'Bookmarks', 'Settings'])
    expect(within(nav).getByRole('link', { name: 'Runs' }).getAttribute('aria-current')).toBe('page')
    expect((await screen.findByRole('note')).textContent).toMatch(/Mock mode/)
    expect(document.title).toBe('Runs · madspark')
    await userEvent.setup().click(within(nav).getByRole('link', { name: 'Bookmarks' }))
    expect(await screen.findByRole('heading', { name: 'Bookmarks', level: 1 })).toBeTruthy()
    expect(document.title).toBe('Bookmarks · madspark')
    expect(document.activeElement?.id).toBe('main')
  })

  it("shows one mock banner on a mock run's page: the server's when the server is in mock mode, else the run's", async () => {
    const { App } = await import('../App')
    for (const mode of ['mock', 'live']) {
      const s = fakeServer({
        'GET /health/detailed': () => json(200, { status: 'ok', mode }),
        'GET /api/runs/run-1': () => json(200, { ...baseRun, status: 'succeeded', result: sparkResult }),
        'GET /api/runs/run-1/events': () => sse([]),
        'GET /api/pipelines': () => json(200, { pipelines: [] }),
      })
      const { unmount } = render(
        <ApiProvider value={s.client()}>
          <MemoryRouter initialEntries={['/runs/run-1']}>
            <App />
          </MemoryRouter>
        </ApiProvider>,
      )
      await screen.findByRole('heading', { name: 'urban farming', level: 1 })
      await waitFor(() => expect(s.calls.some((c) => c.url.pathname === '/health/detailed')).toBe(true))
      await waitFor(() => expect(screen.getAllByRole('note').filter((n) => /Mock mode/.test(n.textContent ?? ''))).toHaveLength(1))
      expect(screen.getByTestId('mock-banner').textContent, mode).toMatch(mode === 'mock' ? /every run returns mock data/ : /This run used mock data/)
      unmount()
    }
  })

  it('shows no banner in live mode', async () => {
    const { App } = await import('../App')
    const s = fakeServer({ 'GET /health/detailed': () => json(200, { status: 'ok', mode: 'live' }), 'GET /api/pipelines': () => json(200, { pipelines: [] }) })
    render(
      <ApiProvider value={s.client()}>
        <MemoryRouter initialEntries={['/settings']}>
          <App />
        </MemoryRouter>
      </ApiProvider>,
    )
    await waitFor(() => expect(s.calls.some((c) => c.url.pathname === '/health/detailed')).toBe(true))
    await screen.findByLabelText('API token')
    expect(screen.queryByRole('note')).toBeNull()
  })
})
