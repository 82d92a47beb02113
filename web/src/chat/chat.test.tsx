import { render, screen, waitFor } from '@testing-library/react'
import userEvent from '@testing-library/user-event'
import { MemoryRouter } from 'react-router'
import { describe, expect, it } from 'vitest'
import { ApiProvider } from '../api/context'
import { fakeServer, json, sse } from '../test/fake'
import { ask } from './api'
import { HowMade } from './HowMade'
import { isSendKey } from './Chat'

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

  it('reports a failed answer', async () => {
    const s = fakeServer({
      'POST /api/conversations/c1/regenerate': () => sse([{ event: 'question', data: { seq: 1 } }, { event: 'error', data: { error: { message: 'provider down', type: 'internal' } } }]),
    })
    await expect(ask(s.client(), 'c1', {}, { onQuestion: () => {}, onDelta: () => {}, onAnswer: () => {} }, new AbortController().signal)).rejects.toThrow('provider down')
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
