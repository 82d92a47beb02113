import { render, screen, waitFor, within } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { MemoryRouter, Route, Routes } from 'react-router'
import { describe, expect, it } from 'vitest'
import { ApiProvider } from '../api/context'
import { apiError, fakeServer, json, sse } from '../test/fake'
import { ask } from './api'
import { HowMade } from './HowMade'
import { Chat, isSendKey, turnsOf } from './Chat'

describe('the chat', () => {
  it('sends on Enter, and adds a line on Shift+Enter', () => {
    const ev = (key: string, shiftKey = false, isComposing = false) => ({ key, shiftKey, nativeEvent: { isComposing } as never })
    expect(isSendKey(ev('Enter'))).toBe(true)
    expect(isSendKey(ev('Enter', true))).toBe(false)
    expect(isSendKey(ev('Enter', false, true))).toBe(false)
    expect(isSendKey(ev('a'))).toBe(false)
  })

  it('streams an answer piece by piece, then gives the kept answer', async () => {
    const s = fakeServer({
      'POST /api/conversations/c1/messages': () =>
        sse(
          [
            { event: 'question', data: { seq: 1, role: 'user', content: 'hi', created_at: '' } },
            { event: 'delta', data: { text: 'Hel' } },
            { event: 'delta', data: { text: 'lo' } },
            { event: 'answer', data: { seq: 2, role: 'assistant', content: 'Hello', run_id: 'r1', created_at: '' } },
          ],
          { split: true },
        ),
    })
    const pieces: string[] = []
    let answer = ''
    await ask(s.client(), 'c1', { content: 'hi' }, { onQuestion: () => {}, onDelta: (t) => pieces.push(t), onAnswer: (a) => (answer = a.run_id ?? '') }, new AbortController().signal)
    expect(pieces).toEqual(['Hel', 'lo'])
    expect(answer).toBe('r1')
    expect(s.calls[0].body).toEqual({ content: 'hi' })
  })

  it('reports a failed answer with its kind', async () => {
    const s = fakeServer({
      'POST /api/conversations/c1/regenerate': () =>
        sse([{ event: 'question', data: { seq: 1 } }, { event: 'error', data: { error: { message: 'provider down', type: 'internal' }, failure: { kind: 'network', detail: 'provider down' } } }]),
    })
    const err = await ask(s.client(), 'c1', {}, { onQuestion: () => {}, onDelta: () => {}, onAnswer: () => {} }, new AbortController().signal).catch((e) => e)
    expect(err.message).toBe('provider down')
    expect(err.failure.kind).toBe('network')
  })

  it('says how an answer was made, rounded for people, from its run', async () => {
    const s = fakeServer({
      'GET /api/runs/r1': () =>
        json(200, {
          run_id: 'r1',
          pipeline: 'debate',
          status: 'succeeded',
          usage: { llm_calls: 1, input_tokens: 1200, output_tokens: 34, cost_usd: 0.000412 },
          result: {
            path: 'complex',
            rounds: 1,
            route: { level: 'complex', confidence: 0.9199999999999999 },
            handoffs: [{ from_role: 'drafter', round: 1, context_summary: 'Start plainly.', key_points: ['one'], confidence_score: 0.8149999 }],
            ranking: [{ role: 'critic', points: 1 }],
            sources: [{ title: 'Docs', url: 'https://go.dev/doc' }, { title: 'Bad', url: 'javascript:alert(1)' }],
          },
        }),
    })
    render(
      <ApiProvider value={s.client()}>
        <MemoryRouter>
          <HowMade runId="r1" />
        </MemoryRouter>
      </ApiProvider>,
    )
    await userEvent.setup().click(screen.getByText('How this answer was made'))
    const body = await screen.findByTestId('how-made')
    const text = body.textContent ?? ''
    expect(text).toContain('judged complex, 92% confident')
    expect(text).toContain('81% confident')
    expect(text).toContain('1 LLM call')
    expect(text).not.toContain('1 LLM calls')
    expect(text).toContain('1,234 tokens')
    expect(text).toContain('$0.0004')
    expect(text).toContain('critic (1 point)')
    expect(screen.getByRole('link', { name: 'Docs' }).getAttribute('href')).toBe('https://go.dev/doc')
    await waitFor(() => expect(screen.queryByRole('link', { name: 'Bad' })).toBeNull())
  })
})

describe('the chat page', () => {
  const conv = (messages: unknown[]) => ({ id: 'c1', title: 'Q', model: 'madspark-debate', created_at: '', updated_at: '', messages })
  const failed = {
    seq: 2,
    role: 'error',
    content: 'stage direct: gave up after 4 attempts: openai: HTTP 500: server error',
    failure: { kind: 'provider_error', provider: 'openai', status: 500, detail: 'stage direct: gave up after 4 attempts: openai: HTTP 500: server error' },
    created_at: '',
  }

  function page(routes: Parameters<typeof fakeServer>[0], at = '/chat/c1') {
    const s = fakeServer({ 'GET /api/conversations': () => json(200, { conversations: [], models: ['madspark-debate'], max_message_bytes: 20, next_offset: null }), ...routes })
    render(
      <ApiProvider value={s.client()}>
        <MemoryRouter initialEntries={[at]}>
          <Routes>
            <Route path="/chat/:id?" element={<Chat />} />
          </Routes>
        </MemoryRouter>
      </ApiProvider>,
    )
    return { s, user: userEvent.setup() }
  }

  it('groups the messages by question: answers asked again, and the failure of the last attempt', () => {
    const q = (seq: number) => ({ seq, role: 'user' as const, content: `q${seq}`, created_at: '' })
    const a = (seq: number) => ({ seq, role: 'assistant' as const, content: `a${seq}`, created_at: '' })
    const e = (seq: number) => ({ seq, role: 'error' as const, content: `e${seq}`, created_at: '' })
    const turns = turnsOf([q(1), a(2), a(3), q(4), e(5), q(6), e(7), a(8)])
    expect(turns.map((t) => [t.question.seq, t.answers.map((x) => x.seq), t.failure?.seq])).toEqual([
      [1, [2, 3], undefined],
      [4, [], 5],
      [6, [8], undefined],
    ])
  })

  it('keeps a failed question, says in words what went wrong, and answers it on Retry, also after a reload', async () => {
    const { s, user } = page({
      'GET /api/conversations/c1': () => json(200, conv([{ seq: 1, role: 'user', content: 'What is a goroutine?', created_at: '' }, failed])),
      'POST /api/conversations/c1/regenerate': () =>
        sse([
          { event: 'question', data: { seq: 1, role: 'user', content: 'What is a goroutine?', created_at: '' } },
          { event: 'delta', data: { text: 'A light thread.' } },
          { event: 'answer', data: { seq: 3, role: 'assistant', content: 'A light thread.', run_id: 'r3', created_at: '' } },
        ]),
    })
    const problem = await screen.findByTestId('answer-failed')
    expect(screen.getByTestId('question').querySelector('p')!.textContent).toBe('What is a goroutine?')
    expect(problem.querySelector('.problem-title')!.textContent).toBe('OpenAI had a server error and did not answer, even after several tries.')
    expect(problem.querySelector('details')!.open).toBe(false)
    expect(problem.querySelector('details')!.textContent).toContain('HTTP 500')
    await user.click(within(problem).getByRole('button', { name: 'Retry' }))
    expect((await screen.findByTestId('answer')).textContent).toContain('A light thread.')
    expect(screen.queryByTestId('answer-failed')).toBeNull()
    expect(s.calls.some((c) => c.method === 'POST' && c.url.pathname.endsWith('/regenerate'))).toBe(true)
  })

  it('keeps the answers Regenerate replaces, one click away', async () => {
    const { user } = page({
      'GET /api/conversations/c1': () =>
        json(200, conv([{ seq: 1, role: 'user', content: 'q', created_at: '' }, { seq: 2, role: 'assistant', content: 'first answer', created_at: '' }])),
      'POST /api/conversations/c1/regenerate': () =>
        sse([
          { event: 'question', data: { seq: 1, role: 'user', content: 'q', created_at: '' } },
          { event: 'answer', data: { seq: 3, role: 'assistant', content: 'second answer', created_at: '' } },
        ]),
    })
    await user.click(await screen.findByRole('button', { name: 'Regenerate' }))
    const answer = await screen.findByText('second answer')
    const card = answer.closest('article')!
    expect(within(card).getByTestId('answer-version').textContent).toBe('2 / 2')
    await user.click(within(card).getByRole('button', { name: 'Previous answer' }))
    expect(screen.getByTestId('answer').textContent).toContain('first answer')
    expect(screen.getByTestId('answer-version').textContent).toBe('1 / 2')
  })

  it('refuses a message over the limit before sending it, and keeps the text', async () => {
    const { s, user } = page({}, '/chat')
    const input = await screen.findByLabelText('Your message')
    await user.type(input, 'x'.repeat(21))
    expect(screen.getByTestId('chat-length').textContent).toMatch(/Too long to send: 21 characters, over the limit of 20/)
    expect((screen.getByRole('button', { name: 'Send' }) as HTMLButtonElement).disabled).toBe(true)
    await user.type(input, '{Enter}')
    expect((input as HTMLTextAreaElement).value).toBe('x'.repeat(21))
    expect(s.calls.filter((c) => c.method === 'POST')).toHaveLength(0)
    await user.type(input, '{Backspace}')
    expect(screen.getByTestId('chat-length').textContent).toBe('20 / 20 characters')
  })

  it('removes a conversation made for a question the server refused, and keeps the text', async () => {
    const { s, user } = page(
      {
        'POST /api/conversations': () => json(201, conv([])),
        'POST /api/conversations/c1/messages': () => apiError(429, 'too many requests', 'rate_limited', undefined),
        'DELETE /api/conversations/c1': () => json(204, null),
      },
      '/chat',
    )
    const input = await screen.findByLabelText('Your message')
    await user.type(input, 'hello{Enter}')
    expect((await screen.findByTestId('chat-problem')).textContent).toContain('The server is taking no more requests for a moment.')
    expect((input as HTMLTextAreaElement).value).toBe('hello')
    await waitFor(() => expect(s.calls.some((c) => c.method === 'DELETE' && c.url.pathname === '/api/conversations/c1')).toBe(true))
    expect(screen.queryByTestId('question')).toBeNull()
  })

  it('keeps a stopped answer with its question: the last reply says how the turn stands', () => {
    const q = (seq: number) => ({ seq, role: 'user' as const, content: `q${seq}`, created_at: '' })
    const a = (seq: number) => ({ seq, role: 'assistant' as const, content: `a${seq}`, created_at: '' })
    const st = (seq: number) => ({ seq, role: 'stopped' as const, content: `partial ${seq}`, created_at: '' })
    const e = (seq: number) => ({ seq, role: 'error' as const, content: `e${seq}`, created_at: '' })
    const turns = turnsOf([q(1), st(2), q(3), a(4), st(5), q(6), st(7), e(8), q(9), st(10), a(11)])
    expect(turns.map((t) => [t.question.seq, t.answers.map((x) => x.seq), t.stopped?.seq, t.failure?.seq])).toEqual([
      [1, [], 2, undefined],
      [3, [4], 5, undefined],
      [6, [], undefined, 8],
      [9, [11], undefined, undefined],
    ])
  })

  it('shows a stopped answer, after a reload too, with what was written, and Regenerate', async () => {
    page({
      'GET /api/conversations/c1': () =>
        json(200, conv([{ seq: 1, role: 'user', content: 'q', created_at: '' }, { seq: 2, role: 'stopped', content: 'A goroutine is a func', created_at: '' }])),
    })
    const stopped = await screen.findByTestId('stopped')
    expect(stopped.textContent).toContain('A goroutine is a func')
    expect(stopped.textContent).toContain('Stopped before it was finished: the partial answer is kept.')
    expect(within(stopped).getByRole('button', { name: 'Regenerate' })).toBeTruthy()
    expect(screen.queryByTestId('unanswered')).toBeNull()
  })

  it('says a retry as it happens while the answer is being written', async () => {
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    const enc = new TextEncoder()
    page({
      'GET /api/conversations/c1': () => json(200, conv([])),
      'POST /api/conversations/c1/messages': () =>
        new Response(
          new ReadableStream({
            async start(c) {
              c.enqueue(enc.encode(`event: question\ndata: ${JSON.stringify({ seq: 1, role: 'user', content: 'hi', created_at: '' })}\n\n`))
              c.enqueue(enc.encode(`event: retry\ndata: ${JSON.stringify({ attempt: 2, max_attempts: 4, delay_ms: 1000, failure: { kind: 'provider_error', provider: 'openai', detail: 'openai: HTTP 500' } })}\n\n`))
              await held
              c.enqueue(enc.encode(`event: answer\ndata: ${JSON.stringify({ seq: 2, role: 'assistant', content: 'Hello', created_at: '' })}\n\n`))
              c.close()
            },
          }),
          { headers: { 'Content-Type': 'text/event-stream' } },
        ),
    })
    const user = userEvent.setup()
    await user.type(await screen.findByLabelText('Your message'), 'hi{Enter}')
    expect((await screen.findByTestId('answer-retrying')).textContent).toBe('OpenAI had a server error; trying again in 1 s (attempt 2 of 4).')
    release()
    expect((await screen.findByTestId('answer')).textContent).toContain('Hello')
    expect(screen.queryByTestId('answer-retrying')).toBeNull()
  })

  it('keeps the focus in the message box after a send the server could not take', async () => {
    const { user } = page({ 'POST /api/conversations': () => { throw new TypeError('Failed to fetch') } }, '/chat')
    const input = await screen.findByLabelText('Your message')
    await user.type(input, 'hello{Enter}')
    expect((await screen.findByTestId('chat-problem')).textContent).toContain('The madspark server cannot be reached.')
    await waitFor(() => expect(document.activeElement).toBe(input))
    expect((input as HTMLTextAreaElement).value).toBe('hello')
  })
})
