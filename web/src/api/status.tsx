import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react'
import type { Client } from './client'
import { localTime, providerName, type Where } from './problems'
import type { ProviderStatus } from './types'

/**
 * Status is what the page knows of the server and of the model provider
 * it calls: whether the server answers, and whether the provider's calls
 * are paused (the circuit breaker) and until when.
 */
export interface Status {
  /** up: the server answered the last request; down: a request could not reach it; unknown: not asked yet. */
  server: 'up' | 'down' | 'unknown'
  /** When the server was first found down (ms since the epoch), while it is. */
  downSince?: number
  /** The provider and the state of its calls, once known. */
  provider?: ProviderStatus
  /** refresh asks the server again now, after something that may have changed it (a failed run or answer). */
  refresh(): void
}

const StatusContext = createContext<Status>({ server: 'unknown', refresh: () => {} })

/** useStatus returns what the page knows of the server and the provider. */
export function useStatus(): Status {
  return useContext(StatusContext)
}

/** StatusValue provides a fixed status, for tests. */
export const StatusValue = StatusContext.Provider

export interface StatusOptions {
  /** How often the provider is asked while the server answers, in ms. */
  every?: number
  /** How often the server is tried while it does not answer, in ms. */
  downEvery?: number
}

/**
 * StatusProvider follows the server and the provider for the views below
 * it. Every request the client makes tells it whether the server answers;
 * while it does not, the server is tried every couple of seconds, so that
 * the page knows as soon as it is back. The provider's status is asked
 * every 15 s, when the server comes back, when a view asks (after a
 * failure), and when a pause ends.
 */
export function StatusProvider({ client, children, every = 15_000, downEvery = 2_000 }: { client: Client; children: ReactNode } & StatusOptions) {
  const [server, setServer] = useState<Status['server']>('unknown')
  const [downSince, setDownSince] = useState<number>()
  const [provider, setProvider] = useState<ProviderStatus>()
  const [asks, setAsks] = useState(0)
  const down = useRef(false)

  useEffect(
    () =>
      client.onReach((reached) => {
        if (reached) {
          if (down.current) setAsks((n) => n + 1) // back: ask the provider at once
          down.current = false
          setServer('up')
          setDownSince(undefined)
        } else {
          if (!down.current) {
            // Just lost: the server is tried again every downEvery from now.
            setDownSince(Date.now())
            setAsks((n) => n + 1)
          }
          down.current = true
          setServer('down')
        }
      }),
    [client],
  )

  // The provider, now and every so often; the server, often, while it is down.
  useEffect(() => {
    const ac = new AbortController()
    let timer: ReturnType<typeof setTimeout> | undefined
    const ask = () => {
      client.provider(ac.signal).then(
        (p) => {
          setProvider(p)
          // A pause that ends is asked about again as it ends.
          const until = p.state === 'paused' && p.retry_at ? Date.parse(p.retry_at) - Date.now() : Infinity
          timer = setTimeout(ask, Math.max(250, Math.min(every, until + 250)))
        },
        () => {
          if (!ac.signal.aborted) timer = setTimeout(ask, down.current ? downEvery : every)
        },
      )
    }
    ask()
    return () => {
      ac.abort()
      if (timer) clearTimeout(timer)
    }
  }, [client, every, downEvery, asks])

  const refresh = useCallback(() => setAsks((n) => n + 1), [])
  const value = useMemo(() => ({ server, downSince, provider, refresh }), [server, downSince, provider, refresh])
  return <StatusContext.Provider value={value}>{children}</StatusContext.Provider>
}

/**
 * pausedUntil is when the provider's paused calls are tried again, while
 * that is still to come; undefined when they are not paused.
 */
export function pausedUntil(p: ProviderStatus | undefined, now: number = Date.now()): Date | undefined {
  if (!p || p.state !== 'paused' || !p.retry_at) return undefined
  const t = Date.parse(p.retry_at)
  return Number.isNaN(t) || t <= now ? undefined : new Date(t)
}

/**
 * useNow returns the current time, rendered again when the time until
 * passes (and no more often), so that what waits for a time (a Resume
 * held back until a pause ends) is enabled as it comes.
 */
export function useNow(until?: Date): number {
  const [, tick] = useState(0)
  const at = until?.getTime()
  useEffect(() => {
    if (at === undefined) return
    const left = at - Date.now()
    if (left <= 0) return
    const t = setTimeout(() => tick((n) => n + 1), left + 50)
    return () => clearTimeout(t)
  }, [at])
  return Date.now()
}

/** whereOf says where the provider is, for the words of its failures. */
export function whereOf(p: ProviderStatus | undefined): Where | undefined {
  return p && { provider: p.provider, local: p.local, address: p.address }
}

/** providerWho names the provider for people: a local server by its address, a vendor by its name. */
export function providerWho(p: ProviderStatus): string {
  if (p.local && p.provider !== 'mock') return p.address ? `the model server at ${p.address}` : 'the local model server'
  return providerName(p.provider)
}

/**
 * StartWarning says, where work is started (a run, an eval, a batch, a
 * question), why it would not work now: the server not answering, or the
 * provider's calls paused until a time. Nothing when all is well.
 */
export function StartWarning({ what = 'A run started now' }: { what?: string }) {
  const { server, provider } = useStatus()
  const paused = pausedUntil(provider)
  useNow(paused)
  if (server === 'down') {
    return (
      <p className="warning" role="status" data-testid="start-warning">
        The madspark server is not answering: nothing can be started until it is back.
      </p>
    )
  }
  if (!paused || !provider) return null
  return (
    <p className="warning" role="status" data-testid="start-warning">
      Calls to {providerWho(provider)} are paused until {localTime(paused.toISOString())}: {what.charAt(0).toLowerCase() + what.slice(1)} would fail at once.
      Wait until then.
    </p>
  )
}
