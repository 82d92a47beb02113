import { render, screen, waitFor } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { MemoryRouter, Route, Routes, useParams } from 'react-router'
import { describe, expect, it } from 'vitest'
import { ApiProvider } from '../api/context'
import type { PipelineInfo } from '../api/types'
import { apiError, fakeServer, json, type Route as FakeRoute } from '../test/fake'
import { NewRun } from '../views/NewRun'
import { registrySparkSchema, sparkSchema } from '../test/fixtures'

const pipelines: PipelineInfo[] = [
  { name: 'chaos', title: 'Chaos', description: 'a creativity workflow', params_schema: { type: 'object', required: ['prompt'], properties: { prompt: { type: 'string' }, iterations: { type: 'integer', minimum: 1, maximum: 10 } } }, defaults: { iterations: 1 } },
  { name: 'spark2', title: 'Spark (registry schema)', params_schema: registrySparkSchema },
  { name: 'spark', title: 'Spark', description: 'ideas, critiqued and improved', params_schema: sparkSchema, defaults: { num_candidates: 5, num_top_candidates: 3 } },
]

function RunPage() {
  const { id } = useParams()
  return <p>run page {id}</p>
}

function setup(runs: FakeRoute = () => json(202, { run_id: 'run-42', status: 'queued' }), at = '/', more: Record<string, FakeRoute> = {}, broken: unknown[] = []) {
  const s = fakeServer({
    'GET /api/pipelines': () => json(200, { pipelines, broken }),
    'GET /api/temperature-presets': () =>
      json(200, { presets: { balanced: { idea_generation: 0.9, evaluation: 0.3 }, wild: { idea_generation: 1.5, evaluation: 0.5, advocacy: 0.7, skepticism: 0.7 } }, default: 'balanced' }),
    'POST /api/runs': runs,
    ...more,
  })
  render(
    <ApiProvider value={s.client()}>
      <MemoryRouter initialEntries={[at]}>
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

describe('the run form', () => {
  it("lists the pipeline files the server could not serve, with each one's error, and still offers the others", async () => {
    setup(undefined, '/', {}, [
      { file: 'bad.yml', error: 'bad.yml:3: unknown agent "x" in steps', problems: ['bad.yml:3: unknown agent "x" in steps'] },
      { file: 'linked.yaml', error: 'linked.yaml:1: cannot be read: leads out of its directory (through a symbolic link)' },
    ])
    const notice = await screen.findByRole('status', { name: 'Pipeline files not served' })
    expect(notice.textContent).toContain('2 pipeline files were not served')
    expect(notice.textContent).toContain('bad.yml: bad.yml:3: unknown agent "x" in steps')
    expect(notice.textContent).toContain('linked.yaml: linked.yaml:1: cannot be read: leads out of its directory')
    expect((screen.getByLabelText('Pipeline') as HTMLSelectElement).options.length).toBe(pipelines.length)
  })

  it('shows no notice when every pipeline file is served', async () => {
    setup()
    await screen.findByLabelText('Pipeline')
    expect(screen.queryByRole('status', { name: 'Pipeline files not served' })).toBeNull()
  })

  it('fills in the values of the run it edits (Edit and run again)', async () => {
    const { s, user } = setup(undefined, '/?pipeline=spark&from=run-3', {
      'GET /api/runs/run-3': () =>
        json(200, { run_id: 'run-3', pipeline: 'spark', status: 'failed', tags: ['food'], params: { topic: 'urban farming', context: 'cheap', num_candidates: 7, num_top_candidates: 2 } }),
    })
    expect(((await screen.findByDisplayValue('urban farming')) as HTMLInputElement).id).toBe('run-form-topic')
    expect((screen.getByLabelText('Context') as HTMLTextAreaElement).value).toBe('cheap')
    expect((screen.getByLabelText('Ideas generated') as HTMLInputElement).value).toBe('7')
    expect((screen.getByLabelText('Run tags') as HTMLInputElement).value).toBe('food')
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    await screen.findByText('run page run-42')
    expect((posts(s)[0].body as { params: Record<string, unknown> }).params).toMatchObject({ topic: 'urban farming', context: 'cheap', num_candidates: 7, num_top_candidates: 2 })
  })

  it('is generated from the schema, with a label on every control', async () => {
    setup()
    const topic = await screen.findByLabelText(/^Topic/)
    expect(topic.tagName).toBe('INPUT')
    expect((screen.getByLabelText('Pipeline') as HTMLSelectElement).value).toBe('spark')
    const n = screen.getByLabelText('Ideas generated') as HTMLInputElement
    expect([n.type, n.min, n.max, n.step, n.value]).toEqual(['number', '1', '20', '1', '5'])
    expect(screen.getByLabelText('Context').tagName).toBe('TEXTAREA')
    expect((screen.getByRole('switch', { name: 'Enhanced reasoning' }) as HTMLInputElement).checked).toBe(false)
    const preset = screen.getByLabelText('Temperature preset') as HTMLSelectElement
    expect(preset.value).toBe('balanced')
    expect([...preset.options].map((o) => o.value)).toEqual(['', 'balanced', 'wild'])
    expect(screen.getByText('idea generation 0.9 · evaluation 0.3')).toBeTruthy()
    expect((screen.getByLabelText('Output format') as HTMLSelectElement).options).toHaveLength(4)
    // Every form control has an accessible name.
    for (const el of document.querySelectorAll('input, select, textarea, button')) {
      const id = el.getAttribute('id')
      const labelled = (id && document.querySelector(`label[for="${id}"]`)) || el.getAttribute('aria-label') || (el.tagName === 'BUTTON' && el.textContent)
      expect(labelled, `control ${el.outerHTML}`).toBeTruthy()
    }
  })

  it('refuses values outside the schema, with the error under the control, before any request', async () => {
    const { s, user } = setup()
    await user.type(await screen.findByLabelText(/^Topic/), 'urban farming')
    const n = screen.getByLabelText('Ideas generated')
    await user.clear(n)
    await user.type(n, '25')
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    const err = await screen.findByText('Ideas generated must be at most 20')
    expect(n.getAttribute('aria-invalid')).toBe('true')
    expect(n.getAttribute('aria-describedby')).toContain(err.id)
    await waitFor(() => expect(document.activeElement).toBe(n))
    expect(posts(s)).toHaveLength(0)

    // Fixing it clears the error as the person types.
    await user.clear(n)
    await user.type(n, '7')
    expect(screen.queryByText('Ideas generated must be at most 20')).toBeNull()
  })

  it('requires the topic', async () => {
    const { s, user } = setup()
    await screen.findByLabelText(/^Topic/)
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    expect(await screen.findByText('Topic is required')).toBeTruthy()
    expect(posts(s)).toHaveLength(0)
  })

  it('submits with Ctrl+Enter and opens the run', async () => {
    const { s, user } = setup()
    await user.type(await screen.findByLabelText(/^Topic/), 'urban farming')
    await user.click(screen.getByRole('switch', { name: 'Enhanced reasoning' }))
    await user.type(screen.getByLabelText('Run tags'), 'food, cities')
    await user.keyboard('{Control>}{Enter}{/Control}')
    expect(await screen.findByText('run page run-42')).toBeTruthy()
    expect(posts(s)[0].body).toEqual({
      pipeline: 'spark',
      params: { topic: 'urban farming', num_candidates: 5, num_top_candidates: 3, temperature_preset: 'balanced', enhanced_reasoning: true, novelty_threshold: 0.8 },
      tags: ['food', 'cities'],
    })
  })

  it("shows the API's validation error under the field it names", async () => {
    const { user } = setup(() => apiError(422, 'num_top_candidates (5) must not exceed num_candidates (4)', 'validation', 'params.num_top_candidates'))
    await user.type(await screen.findByLabelText(/^Topic/), 'urban farming')
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    const err = await screen.findByText('Num top candidates (5) must not exceed num candidates (4)')
    const k = screen.getByLabelText('Num top candidates')
    expect(k.getAttribute('aria-describedby')).toContain(err.id)
    expect(err.getAttribute('role')).toBe('alert')
  })

  it('shows an error that names no field of the form beside the button', async () => {
    const { user } = setup(() => apiError(429, 'too many requests', 'rate_limited'))
    await user.type(await screen.findByLabelText(/^Topic/), 'urban farming')
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    const err = (await screen.findByText('The server is taking no more requests for a moment.')).closest('[role=alert]')!
    expect(err.textContent).toContain('too many requests')
    const button = screen.getByRole('button', { name: 'Start run' })
    expect(button.getAttribute('aria-describedby')).toBe(err.id)
    // The error is at the foot of the form: the button it describes takes the focus.
    await waitFor(() => expect(document.activeElement).toBe(button))
  })

  it("shows an error the API gives a group under the group's field its message names", async () => {
    const { user } = setup(() => apiError(422, 'params: temperatures: improve must be 0..2', 'validation', 'params.temperatures'))
    await user.selectOptions(await screen.findByLabelText('Pipeline'), 'spark2')
    await user.type(await screen.findByLabelText(/^Topic/), 'x')
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    const err = await screen.findByText('Improve must be from 0 to 2')
    const improve = screen.getByLabelText(/^Improve/)
    expect(improve.getAttribute('aria-describedby')).toContain(err.id)
    await waitFor(() => expect(document.activeElement).toBe(improve))
  })

  it("switches to another pipeline's form and keeps what was typed in each", async () => {
    const { s, user } = setup()
    await user.type(await screen.findByLabelText(/^Topic/), 'kept')
    await user.selectOptions(screen.getByLabelText('Pipeline'), 'chaos')
    expect(await screen.findByText('a creativity workflow')).toBeTruthy()
    expect(screen.queryByLabelText(/^Topic/)).toBeNull()
    expect((screen.getByLabelText('Iterations') as HTMLInputElement).value).toBe('1')
    await user.type(screen.getByLabelText(/^Prompt/), 'food waste')
    await user.selectOptions(screen.getByLabelText('Pipeline'), 'spark')
    expect(((await screen.findByLabelText(/^Topic/)) as HTMLInputElement).value).toBe('kept')
    await user.selectOptions(screen.getByLabelText('Pipeline'), 'chaos')
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    await screen.findByText('run page run-42')
    expect(posts(s)[0].body).toEqual({ pipeline: 'chaos', params: { prompt: 'food waste', iterations: 1 } })
  })

  it('sets the temperatures from a preset, and shows custom values as custom', async () => {
    const { s, user } = setup(() => apiError(422, 'spark parameters: num_top_candidates (5) must not exceed num_candidates (4)', 'validation'))
    await user.selectOptions(await screen.findByLabelText('Pipeline'), 'spark2')
    const preset = (await screen.findByLabelText('Temperature preset')) as HTMLSelectElement
    const generate = screen.getByLabelText(/^Generate/) as HTMLInputElement
    expect([preset.value, generate.value]).toEqual(['', '0.9'])
    await user.selectOptions(preset, 'wild')
    expect(generate.value).toBe('1.5')
    expect((screen.getByLabelText(/^Improve/) as HTMLInputElement).value).toBe('1.5')
    expect((screen.getByLabelText(/^Evaluate/) as HTMLInputElement).value).toBe('0.5')
    expect(preset.value).toBe('wild')
    await user.clear(generate)
    await user.type(generate, '1.4')
    expect(preset.value).toBe('')
    // A message that names a field but no field property lands under that field.
    await user.type(screen.getByLabelText(/^Topic/), 'x')
    await user.click(screen.getByRole('button', { name: 'Start run' }))
    const err = await screen.findByText(/must not exceed/)
    expect(screen.getByLabelText('Num top candidates').getAttribute('aria-describedby')).toContain(err.id)
    expect((posts(s)[0].body as { params: { temperatures: unknown } }).params.temperatures).toEqual({ generate: 1.4, evaluate: 0.5, advocate: 0.7, skeptic: 0.7, improve: 1.5 })
  })
})
