import { act, render, screen, waitFor } from '@testing-library/react'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { fakeServer, json } from '../test/fake'
import { StartWarning, StatusProvider, pausedUntil, providerWho, useStatus } from './status'
import type { ProviderStatus } from './types'

const ok: ProviderStatus = { mode: 'live', provider: 'openai', model: 'gpt-4o-mini', local: false, state: 'ok', failures: 0, retry_at: null }

function Show() {
  const s = useStatus()
  return (
    <>
      <output data-testid="server">{s.server}</output>
      <output data-testid="provider">{s.provider?.state ?? ''}</output>
      <StartWarning />
    </>
  )
}

afterEach(() => vi.useRealTimers())

describe('the status of the server and the provider', () => {
  it('knows the server is down from any request that cannot reach it, tries it again often, and knows when it is back', async () => {
    let up = true
    const s = fakeServer({
      'GET /api/provider': () => {
        if (!up) throw new TypeError('Failed to fetch')
        return json(200, ok)
      },
      'GET /api/runs': () => {
        throw new TypeError('Failed to fetch')
      },
    })
    const client = s.client()
    render(
      <StatusProvider client={client} every={60_000} downEvery={20}>
        <Show />
      </StatusProvider>,
    )
    await waitFor(() => expect(screen.getByTestId('server').textContent).toBe('up'))
    expect(screen.getByTestId('provider').textContent).toBe('ok')
    up = false
    await act(async () => {
      await client.runs().catch(() => {})
    })
    expect(screen.getByTestId('server').textContent).toBe('down')
    expect(screen.getByTestId('start-warning').textContent).toBe('The madspark server is not answering: nothing can be started until it is back.')
    // The next try finds it back, by itself.
    const before = s.calls.filter((c) => c.url.pathname === '/api/provider').length
    up = true
    await waitFor(() => expect(screen.getByTestId('server').textContent).toBe('up'))
    expect(s.calls.filter((c) => c.url.pathname === '/api/provider').length).toBeGreaterThan(before)
    expect(screen.queryByTestId('start-warning')).toBeNull()
  })

  it('says a paused provider before work starts, until the pause ends', async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true })
    const at = new Date(Date.now() + 3000).toISOString()
    let state: ProviderStatus = { ...ok, state: 'paused', failures: 5, retry_at: at, failure: { kind: 'provider_error', detail: 'x' } }
    const s = fakeServer({ 'GET /api/provider': () => json(200, state) })
    render(
      <StatusProvider client={s.client()} every={60_000}>
        <Show />
      </StatusProvider>,
    )
    expect((await screen.findByTestId('start-warning')).textContent).toMatch(/^Calls to OpenAI are paused until .+: a run started now would fail at once\. Wait until then\.$/)
    state = { ...ok, state: 'trial', failures: 5 }
    await act(async () => {
      vi.advanceTimersByTime(3500)
    })
    await waitFor(() => expect(screen.queryByTestId('start-warning')).toBeNull())
    // The provider was asked again as the pause ended.
    await waitFor(() => expect(screen.getByTestId('provider').textContent).toBe('trial'))
  })

  it('names the provider, and knows when a pause is over', () => {
    expect(providerWho(ok)).toBe('OpenAI')
    expect(providerWho({ ...ok, local: true, address: '127.0.0.1:11434' })).toBe('the model server at 127.0.0.1:11434')
    expect(providerWho({ ...ok, provider: 'mock', local: true })).toBe('the mock provider')
    const now = Date.parse('2026-01-01T12:00:00Z')
    expect(pausedUntil({ ...ok, state: 'paused', retry_at: '2026-01-01T12:00:10Z' }, now)?.toISOString()).toBe('2026-01-01T12:00:10.000Z')
    expect(pausedUntil({ ...ok, state: 'paused', retry_at: '2026-01-01T11:59:59Z' }, now)).toBeUndefined()
    expect(pausedUntil({ ...ok, state: 'trial', retry_at: null }, now)).toBeUndefined()
  })
})
