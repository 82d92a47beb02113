import { render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { MemoryRouter, Route, Routes, useParams } from 'react-router'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ApiProvider } from '../api/context'
import type { JSONSchema, PipelineInfo } from '../api/types'
import { commandKey, isApple, isSubmitKey } from '../components/keys'
import { chartColors } from '../results/ScoreCharts'
import { fakeServer, json } from '../test/fake'
import { chaosServerDefaults, chaosServerSchema, proposalServerDefaults, proposalServerSchema, sparkServerDefaults, sparkServerSchema } from '../test/server-schemas'
import { NewRun } from '../views/NewRun'
import { fieldsOf, flatten, initialValues, toParams, validate } from './schema'

// The forms of the pipelines as the server describes them.
const pipelines: PipelineInfo[] = [
  { name: 'spark', title: 'Spark', params_schema: sparkServerSchema, defaults: sparkServerDefaults },
  { name: 'chaos', title: 'Chaos', params_schema: chaosServerSchema, defaults: chaosServerDefaults },
  { name: 'proposal', title: 'Research proposal', params_schema: proposalServerSchema, defaults: proposalServerDefaults },
]

function RunPage() {
  return <p>run page {useParams().id}</p>
}

function setup(pipeline: string) {
  const s = fakeServer({
    'GET /api/pipelines': () => json(200, { pipelines }),
    'GET /api/temperature-presets': () => json(200, { presets: {} }),
    'POST /api/runs': () => json(202, { run_id: 'run-7', status: 'queued' }),
  })
  render(
    <ApiProvider value={s.client()}>
      <MemoryRouter initialEntries={[`/?pipeline=${pipeline}`]}>
        <Routes>
          <Route path="/" element={<NewRun />} />
          <Route path="/runs/:id" element={<RunPage />} />
        </Routes>
      </MemoryRouter>
    </ApiProvider>,
  )
  return { s, user: userEvent.setup() }
}

const posts = (s: ReturnType<typeof fakeServer>) => s.calls.filter((c) => c.method === 'POST')

afterEach(() => vi.unstubAllGlobals())

describe("the server's schemas", () => {
  it.each(pipelines.map((p) => [p.name, p] as const))('%s: the labels are titles, and a fresh form holds the defaults', (_, p) => {
    const fields = fieldsOf(p.params_schema)
    for (const f of flatten(fields)) {
      // The label is the schema's title, not the parameter's name.
      const prop = f.path.split('.').reduce<JSONSchema | undefined>((s, k) => s?.properties?.[k], p.params_schema)
      expect(prop?.title, f.path).toBeTruthy()
      expect(f.label, f.path).toBe(prop?.title)
      expect(f.description, f.path).toBeTruthy()
    }
    const values = initialValues(fields, p.params_schema, p.defaults)
    // Sent as they are, the initial values are the server's defaults:
    // every value sent is the default, and what is left out is empty.
    const sent = toParams(fields, values)
    for (const [k, v] of Object.entries(sent)) expect(v, k).toEqual(p.defaults?.[k])
    for (const [k, v] of Object.entries(p.defaults ?? {})) {
      if (!(k in sent)) expect(v === '' || p.params_schema.properties?.[k]?.readOnly, k).toBeTruthy()
    }
    // Only the required fields are left to fill.
    expect(Object.keys(validate(fields, values)).sort()).toEqual(
      flatten(fields)
        .filter((f) => f.required)
        .map((f) => f.path)
        .sort(),
    )
  })
})

describe('the proposal form', () => {
  it('marks what the server requires, starts from its defaults, and checks the required fields before sending', async () => {
    const { s, user } = setup('proposal')
    const program = await screen.findByLabelText(/^Academic program/)
    expect(program.getAttribute('aria-required')).toBe('true')
    expect(screen.getByText(/are required/).textContent).toBe('Fields marked * are required.')
    const hours = screen.getByLabelText(/^Hours a week/) as HTMLInputElement
    const length = screen.getByLabelText(/^Length/) as HTMLInputElement
    const unit = screen.getByLabelText(/^Unit/) as HTMLSelectElement
    for (const el of [hours, length, unit]) expect(el.getAttribute('aria-required')).toBe('true')
    expect(within(hours.closest('.field') as HTMLElement).getByText('*')).toBeTruthy()
    expect([hours.value, length.value, unit.value]).toEqual(['', '', ''])
    expect((screen.getByLabelText('Refinement rounds') as HTMLInputElement).value).toBe('3')
    expect((screen.getByLabelText('Results per query') as HTMLInputElement).value).toBe('5')
    expect(screen.queryByLabelText(/Profile source/)).toBeNull()
    expect(screen.getByLabelText('Additional context').getAttribute('aria-required')).toBeNull()

    await user.click(screen.getByRole('button', { name: 'Start run' }))
    expect(await screen.findByText('Academic program is required')).toBeTruthy()
    expect(screen.getByText('Hours a week is required')).toBeTruthy()
    expect(screen.getByText('Unit is required')).toBeTruthy()
    await waitFor(() => expect(document.activeElement).toBe(program))
    expect(posts(s)).toHaveLength(0)

    await user.type(program, 'MSc Computer Science')
    await user.type(screen.getByLabelText(/^Field of study/), 'Computer science')
    await user.type(screen.getByLabelText(/^Research area/), 'Energy use of caches')
    await user.type(hours, '10')
    await user.type(length, '6')
    await user.selectOptions(unit, 'months')
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    expect(await screen.findByText('run page run-7')).toBeTruthy()
    expect(posts(s)[0].body).toEqual({
      pipeline: 'proposal',
      params: {
        profile: {
          academic_program: 'MSc Computer Science',
          field_of_study: 'Computer science',
          research_area: 'Energy use of caches',
          weekly_hours: 10,
          total_timeline: { value: 6, unit: 'months' },
        },
        max_refinements: 3,
        no_search: false,
        results_per_query: 5,
      },
    })
  })
})

describe('the chaos form', () => {
  it('leaves the random seed to the server', async () => {
    const { s, user } = setup('chaos')
    const seed = (await screen.findByLabelText('Random seed')) as HTMLInputElement
    expect(seed.value).toBe('')
    await user.type(screen.getByLabelText(/^Prompt/), 'a board game')
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    await screen.findByText('run page run-7')
    const params = (posts(s)[0].body as { params: Record<string, unknown> }).params
    expect(params.seed).toBeUndefined()
    expect(params.temp_a).toBe(1)
  })
})

describe('the spark form', () => {
  it('disables the novelty threshold while the novelty filter is off, and does not send it', async () => {
    const { s, user } = setup('spark')
    const threshold = (await screen.findByLabelText('Novelty threshold')) as HTMLInputElement
    expect(threshold.disabled).toBe(false)
    await user.clear(threshold)
    await user.type(threshold, '7')
    await user.tab()
    expect(await screen.findByText('Novelty threshold must be at most 1')).toBeTruthy()
    await user.click(screen.getByRole('switch', { name: 'Novelty filter' }))
    expect(threshold.disabled).toBe(true)
    expect(screen.queryByText('Novelty threshold must be at most 1')).toBeNull()
    await user.type(screen.getByLabelText(/^Topic/), 'urban farming')
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    await screen.findByText('run page run-7')
    const params = (posts(s)[0].body as { params: Record<string, unknown> }).params
    expect([params.novelty_filter, params.novelty_threshold]).toEqual([false, undefined])
  })

  it('shows ⌘ on a Mac, where ⌘+Enter submits', async () => {
    vi.stubGlobal('navigator', { ...navigator, platform: 'MacIntel', userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5)' })
    const { s, user } = setup('spark')
    await user.type(await screen.findByLabelText(/^Topic/), 'urban farming')
    expect(document.getElementById('submit-hint')?.textContent).toBe('or press ⌘+Enter')
    await user.keyboard('{Meta>}{Enter}{/Meta}')
    expect(await screen.findByText('run page run-7')).toBeTruthy()
    expect(posts(s)).toHaveLength(1)
  })

  it('shows Ctrl elsewhere', async () => {
    vi.stubGlobal('navigator', { ...navigator, platform: 'Linux x86_64', userAgent: 'Mozilla/5.0 (X11; Linux x86_64)' })
    setup('spark')
    await screen.findByLabelText(/^Topic/)
    expect(document.getElementById('submit-hint')?.textContent).toBe('or press Ctrl+Enter')
  })
})

describe('keys', () => {
  it('tells a Mac, and the keys that submit', () => {
    expect(isApple({ platform: 'MacIntel' })).toBe(true)
    expect(isApple({ userAgentData: { platform: 'macOS' } })).toBe(true)
    expect(isApple({ platform: 'iPad' })).toBe(true)
    expect(isApple({ platform: 'Win32', userAgent: 'Mozilla/5.0 (Windows NT 10.0)' })).toBe(false)
    expect([commandKey(true), commandKey(false)]).toEqual(['⌘', 'Ctrl'])
    const key = (k: Partial<KeyboardEvent>) => isSubmitKey({ key: 'Enter', ctrlKey: false, metaKey: false, isComposing: false, ...k })
    expect([key({ ctrlKey: true }), key({ metaKey: true }), key({}), key({ metaKey: true, isComposing: true }), key({ key: 'a', metaKey: true })]).toEqual([true, true, false, false, false])
  })
})

/** contrast is the WCAG contrast ratio of two #rrggbb colours. */
function contrast(a: string, b: string): number {
  const lum = (hex: string) => {
    const [r, g, bl] = [1, 3, 5].map((i) => {
      const c = parseInt(hex.slice(i, i + 2), 16) / 255
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
    })
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl
  }
  const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p)
  return (x + 0.05) / (y + 0.05)
}

describe('the score charts', () => {
  it('keep a contrast of 4.5:1 with the panel in either colour scheme', () => {
    for (const [dark, panel] of [
      [false, '#ffffff'],
      [true, '#111827'],
    ] as const) {
      for (const c of Object.values(chartColors(dark))) expect(contrast(c, panel), `${c} on ${panel}`).toBeGreaterThanOrEqual(4.5)
    }
  })
})
