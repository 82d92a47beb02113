import { describe, expect, it } from 'vitest'
import { ApiError } from './client'
import { fieldMessage, fieldWords, localAddressIn, localTime, problemOf, problemOfError, retryWords } from './problems'
import type { FailureKind } from './types'

describe('problems in plain words', () => {
  it('says what each kind of failure means and what to do, with the error as the detail', () => {
    const kinds: FailureKind[] = [
      'provider_error',
      'rate_limited',
      'provider_paused',
      'auth',
      'provider_refused',
      'network',
      'timeout',
      'search_unavailable',
      'params',
      'reply_unusable',
      'interrupted',
      'cancelled',
      'unknown',
    ]
    const titles = new Set<string>()
    for (const kind of kinds) {
      const p = problemOf({ kind, provider: 'anthropic', detail: `the ${kind} error` })
      expect(p.kind).toBe(kind)
      expect(p.detail).toBe(`the ${kind} error`)
      expect(p.title.length, kind).toBeGreaterThan(10)
      expect(p.advice.length, kind).toBeGreaterThan(5)
      // No Go error chain in the words.
      expect(p.title + p.advice, kind).not.toMatch(/HTTP \d|gave up|stage |: want /)
      titles.add(p.title)
    }
    expect(titles.size).toBe(kinds.length)
    expect(problemOf({ kind: 'provider_error', provider: 'openai', detail: 'x' }).title).toBe('OpenAI had a server error and did not answer, even after several tries.')
    expect(problemOf({ kind: 'search_unavailable', detail: 'x' }).advice).toContain('No literature search')
    expect(problemOf(undefined, 'a raw error').detail).toBe('a raw error')
  })

  it('says when a paused provider is tried again, on the reader’s clock', () => {
    const at = '2026-11-26T03:59:39Z'
    const p = problemOf({ kind: 'provider_paused', provider: 'openai', retry_at: at, detail: 'circuit breaker open …' })
    expect(p.advice).toBe(`It tries again at ${localTime(at)}. Try again after that.`)
    expect(p.advice).not.toContain('2026-11-26T')
    expect(localTime(at, new Date(at))).toBe(new Date(at).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' }))
  })

  it('names the field at fault, says what is allowed, and offers to edit and run again', () => {
    const p = problemOf({ kind: 'params', field: 'profile.missing_skills', detail: 'proposal parameters: profile.missing_skills: want array, got null' })
    expect(p.title).toBe('A setting was not accepted: missing skills.')
    expect(p.advice).toBe('Must be a list. Edit it and run again; your other values are kept.')
  })

  it('words the API’s field messages without what locates them', () => {
    expect(fieldMessage('params: temperatures: improve must be 0..2', 'params.temperatures')).toBe('Improve must be from 0 to 2')
    expect(fieldMessage('tags[0]: a tag is at most 40 characters', 'tags[0]')).toBe('A tag is at most 40 characters')
    expect(fieldMessage('spark parameters: num_candidates: want integer, got string', 'params.num_candidates')).toBe('Must be a whole number, not string')
    expect(fieldMessage('num_candidates must be 1..20, got 25', 'params.num_candidates')).toBe('Num candidates must be from 1 to 20, not 25')
    expect(fieldWords('tags[2]')).toBe('tag 3')
    expect(fieldWords('params.profile.total_timeline')).toBe('total timeline')
  })

  it('says what an error of the madspark server means', () => {
    expect(problemOfError(new ApiError(0, 'cannot reach the server: Failed to fetch', 'network')).title).toBe('The madspark server cannot be reached.')
    expect(problemOfError(new ApiError(401, 'unauthorized', 'unauthorized')).advice).toContain('Settings')
    expect(problemOfError(new ApiError(429, 'slow down', 'rate_limited', { retryAfter: 3 })).advice).toBe('Try again in 3 seconds.')
    const v = problemOfError(new ApiError(422, 'params.topic: topic must not be empty', 'validation', { field: 'params.topic' }))
    expect([v.title, v.field]).toEqual(['Topic must not be empty.', 'params.topic'])
    expect(problemOfError(new ApiError(500, 'internal error; the server log says more', 'internal')).title).toBe('The madspark server had an internal error.')
    const f = problemOfError(new ApiError(502, 'stage x: openai: HTTP 429: busy', 'internal', { failure: { kind: 'rate_limited', provider: 'openai', detail: 'stage x: openai: HTTP 429: busy' } }), undefined)
    expect(f.kind).toBe('rate_limited')
    expect(problemOfError(new Error('x'), { kind: 'rate_limited', detail: 'd' }).kind).toBe('rate_limited')
  })

  it('names a local model server by its address, never as the vendor it imitates, and says to check it rather than the network', () => {
    const where = { provider: 'openai', local: true, address: '127.0.0.1:11434' }
    const refused = problemOf({ kind: 'network', provider: 'openai', detail: 'stage generate: dial tcp 127.0.0.1:11434: connect: connection refused' })
    expect(refused.title).toBe('madspark could not connect to the model server at 127.0.0.1:11434.')
    expect(refused.advice).toMatch(/running and listening/)
    expect(refused.title + refused.advice).not.toMatch(/OpenAI|network|internet/)
    const down = problemOf({ kind: 'provider_error', provider: 'openai', status: 500, detail: 'openai: HTTP 500: oops' }, undefined, where)
    expect(down.title).toBe('The model server at 127.0.0.1:11434 had a server error and did not answer, even after several tries.')
    expect(down.advice).toMatch(/log/)
    expect(down.advice).not.toMatch(/status page|OpenAI/)
    expect(problemOf({ kind: 'provider_paused', provider: 'openai', detail: 'x' }, undefined, where).title).toBe(
      'madspark paused its calls to the model server at 127.0.0.1:11434 after it failed several times in a row.',
    )
    // A vendor's API is named, and its status page is where to look.
    const vendor = problemOf({ kind: 'provider_error', provider: 'openai', detail: 'openai: HTTP 500' }, undefined, { provider: 'openai', local: false })
    expect(vendor.advice).toContain('OpenAI’s status page')
    expect(problemOf({ kind: 'network', provider: 'anthropic', detail: 'dial tcp: lookup api.anthropic.com: no such host' }).advice).toMatch(/internet connection/)
    // Another provider than the local one (a debate's proposer) is named as itself.
    expect(problemOf({ kind: 'provider_error', provider: 'anthropic', detail: 'anthropic: HTTP 529' }, undefined, where).title).toMatch(/^Anthropic had a server error/)
    // The mock is no model server.
    expect(problemOf({ kind: 'timeout', provider: 'mock', detail: 'x' }, undefined, { provider: 'mock', local: true }).title).toBe('It took longer than allowed and was stopped.')
    expect(localAddressIn('Post "http://localhost:8080/v1/chat/completions": EOF')).toBe('localhost:8080')
    expect(localAddressIn('dial tcp 192.168.1.20:8000: i/o timeout')).toBe('192.168.1.20:8000')
    expect(localAddressIn('dial tcp 8.8.8.8:443: i/o timeout')).toBeUndefined()
  })

  it('says a retry as it happens: why, when and which attempt of how many', () => {
    expect(retryWords({ kind: 'provider_error', provider: 'openai', detail: 'openai: HTTP 500' }, 2000, 3)).toBe('OpenAI had a server error; trying again in 2 s (attempt 3).')
    expect(retryWords({ kind: 'rate_limited', provider: 'openai', detail: 'x' }, 1000, 2, { provider: 'openai', local: true, address: '127.0.0.1:8080' }, 4)).toBe(
      'The model server at 127.0.0.1:8080 is limiting how many requests it takes; trying again in 1 s (attempt 2 of 4).',
    )
    expect(retryWords(undefined, 400, 2)).toBe('A call to the model provider failed; trying again in 1 s (attempt 2).')
  })

  it('says a refused connection to a local server as its refusal, never the network or a vendor', () => {
    const refused = {
      kind: 'network' as const,
      provider: 'openai',
      message: 'cannot reach madspark’s model server: connection refused',
      advice: 'is the server running?',
      detail: 'openai: connection refused at 127.0.0.1:8080',
    }
    const words = retryWords(refused, 2000, 2, { provider: 'openai', local: true, address: '127.0.0.1:8080' }, 4)
    expect(words).toBe('The model server at 127.0.0.1:8080 refused the connection; trying again in 2 s (attempt 2 of 4).')
    expect(words).not.toMatch(/OpenAI|network/)
    // A provider elsewhere that cannot be reached is the network's doing.
    expect(retryWords({ kind: 'network', provider: 'openai', detail: 'openai: no such host api.openai.com' }, 1000, 3, undefined, 4)).toBe(
      'madspark could not reach OpenAI; trying again in 1 s (attempt 3 of 4).',
    )
  })

  it('shows the server’s words for a failure when it gives them, its own otherwise', () => {
    const where = { provider: 'openai', local: true, address: '127.0.0.1:8080' }
    // A refused connection to a server on this machine.
    let p = problemOf(
      { kind: 'network', provider: 'openai', message: 'cannot reach the provider at http://127.0.0.1:8080/v1: connection refused', advice: 'is the server running?', detail: 'x' },
      undefined,
      where,
    )
    expect(p.title).toBe('Cannot reach the provider at http://127.0.0.1:8080/v1: connection refused.')
    expect(p.advice).toBe('Is the server running?')
    // Paused calls, with the time the server names.
    p = problemOf({ kind: 'provider_paused', message: 'madspark paused its calls to madspark’s model server after it failed several times in a row', advice: 'it tries again at 14:05:00; try after that', detail: 'x' })
    expect(p.title).toBe('madspark paused its calls to madspark’s model server after it failed several times in a row.')
    expect(p.advice).toBe('It tries again at 14:05:00; try after that.')
    // An interrupted run.
    p = problemOf({ kind: 'interrupted', message: 'the run was interrupted at stage evaluate', advice: 'resume it to finish it; its finished steps are not paid again', detail: 'interrupted at stage evaluate' })
    expect(p.title).toBe('The run was interrupted at stage evaluate.')
    expect(p.advice).toBe('Resume it to finish it; its finished steps are not paid again.')
    // A kind the page has no words of its own for.
    p = problemOf({ kind: 'database', message: 'the database is busy: another process is writing to it', advice: 'try again in a moment', detail: 'database is locked' })
    expect(p.title).toBe('The database is busy: another process is writing to it.')
    // Advice for the command line gives way to the page's own.
    p = problemOf({ kind: 'search_unavailable', message: 'the literature search reached none of its sources', advice: 'check the network connection, or run without the literature search (--no-search)', detail: 'x' })
    expect(p.advice).toMatch(/No literature search/)
    // A refused setting is said beside its field, in the page's words.
    p = problemOf({ kind: 'params', field: 'params.topic', message: 'a setting was not accepted: topic: required', advice: 'correct it and run again', detail: 'spark parameters: topic: required' })
    expect(p.title).toBe('A setting was not accepted: topic.')
    // Without the server's words, the page's own.
    expect(problemOf({ kind: 'auth', provider: 'openai', detail: 'openai: HTTP 401' }).title).toBe('OpenAI refused the API key.')
  })
})
