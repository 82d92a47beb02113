import { ApiError } from './client'
import type { Failure, FailureKind } from './types'

/**
 * A Problem is an error as a person reads it: what happened in plain
 * words, what to do about it, and the technical detail, folded beneath.
 */
export interface Problem {
  kind: FailureKind | 'server_unreachable' | 'token' | 'too_many' | 'refused' | 'not_found' | 'server_error'
  /** What happened, in one sentence. */
  title: string
  /** What to do about it. */
  advice: string
  /** The error itself, for the technical detail. */
  detail?: string
  /** The parameter at fault, as the API names it ("params.topic"). */
  field?: string
}

/** Provider names as people write them. */
const providerNames: Record<string, string> = {
  openai: 'OpenAI',
  anthropic: 'Anthropic',
  gemini: 'Gemini',
  ollama: 'Ollama',
  mock: 'the mock provider',
}

/** providerName names a provider for people; "the model provider" when unknown. */
export function providerName(p?: string): string {
  if (!p) return 'the model provider'
  return providerNames[p] ?? p
}

/** localTime is an RFC 3339 time as the reader's clock shows it: "14:05", or with the date when not today. */
export function localTime(t: string, now: Date = new Date()): string {
  const d = new Date(t)
  if (Number.isNaN(d.getTime())) return t
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' })
  return d.toDateString() === now.toDateString() ? time : `${d.toLocaleDateString()} ${time}`
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1)
}

/** opening is s as a sentence starts, capitalised, but for madspark, whose name is written in lower case. */
function opening(s: string): string {
  return /^madspark\b/.test(s) ? s : capitalize(s)
}

/** sentence ends s with a full stop, unless it ends with a mark already. */
function sentence(s: string): string {
  return /[.!?…]$/.test(s) ? s : s + '.'
}

/**
 * fieldWords names a parameter for people: "params.profile.missing_skills"
 * is "missing skills", "tags[0]" "tag 1".
 */
export function fieldWords(field: string): string {
  const tag = /^tags?\[(\d+)\]$/.exec(field)
  if (tag) return `tag ${Number(tag[1]) + 1}`
  const last = field.replace(/^params\./, '').split('.').pop() ?? field
  return last.replace(/\[(\d+)\]/g, (_, i) => ` ${Number(i) + 1}`).replace(/_/g, ' ')
}

/**
 * fieldMessage is the API's one-line message about a field as it reads
 * beside that field: without the prefixes that locate it ("params:",
 * "spark parameters:", "params.topic:", "tags[0]:"), and with the checker's
 * terms in words ("want integer, got string" is "must be a whole number").
 */
export function fieldMessage(message: string, field?: string): string {
  let m = message.trim()
  for (;;) {
    const next = m
      .replace(/^[a-z][a-z0-9_-]* parameters: /, '')
      .replace(/^params(\.[A-Za-z0-9_.[\]]+)?: /, '')
      .replace(/^tags?\[\d+\]: /, '')
    if (next === m) break
    m = next
  }
  if (field) {
    const path = field.replace(/^params\./, '')
    if (m.startsWith(path + ': ')) m = m.slice(path.length + 2)
  }
  m = m
    .replace(/\bwant (an )?integer, got (.+)$/, 'must be a whole number, not $2')
    .replace(/\bwant (a )?number, got (.+)$/, 'must be a number, not $2')
    .replace(/\bwant (an )?array, got null$/, 'must be a list')
    .replace(/\bwant (an )?array, got (.+)$/, 'must be a list, not $2')
    .replace(/\bwant (a )?string, got (.+)$/, 'must be text, not $2')
    .replace(/\bwant (a )?boolean, got (.+)$/, 'must be on or off, not $2')
    .replace(/\bmust be (-?\d+(?:\.\d+)?)\.\.(-?\d+(?:\.\d+)?), got (.+)$/, 'must be from $1 to $2, not $3')
    .replace(/\bmust be (-?\d+(?:\.\d+)?)\.\.(-?\d+(?:\.\d+)?)\b/, 'must be from $1 to $2')
    // Parameter names and values in words: num_candidates is "num candidates".
    .replace(/\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b/g, (w) => w.replace(/_/g, ' '))
  return capitalize(m)
}

/**
 * Where says where the provider that failed is: a model server on this
 * machine or its network (Ollama, llama-server, a local proxy), at an
 * address, or a vendor's API. The server says so (GET /api/provider).
 */
export interface Where {
  /** The provider the server calls, such as "openai". */
  provider?: string
  local?: boolean
  /** The host and port of a local server. */
  address?: string
}

/** A host of this machine or a private network, with its port, as an error names it. */
const localAddress =
  /(?:dial tcp |https?:\/\/|\s)((?:localhost|127(?:\.\d{1,3}){3}|\[::1\]|10(?:\.\d{1,3}){3}|192\.168(?:\.\d{1,3}){2}|172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2})(?::\d{1,5})?)\b/

/** localAddressIn returns the local address an error names, if any ("127.0.0.1:11434"). */
export function localAddressIn(detail: string | undefined): string | undefined {
  return detail ? localAddress.exec(detail)?.[1] : undefined
}

/**
 * whoFailed names the provider of a failure for people: a local model
 * server by its address ("the model server at 127.0.0.1:11434"), never as
 * a vendor it merely speaks the protocol of; a vendor's API by its name.
 */
function whoFailed(f: Failure | undefined, detail: string | undefined, where: Where | undefined): { who: string; local: boolean } {
  const named = localAddressIn(detail)
  const sameProvider = !f?.provider || !where?.provider || f.provider === where.provider
  const local = !!named || (!!where?.local && sameProvider && where.provider !== 'mock')
  if (!local) return { who: providerName(f?.provider), local }
  const address = named ?? where?.address
  return { who: address ? `the model server at ${address}` : 'the local model server', local }
}

/**
 * problemOf says what a run's or an answer's failure means for the person
 * who meets it, shared by every page. The server's words come first: a
 * failure it sends says what happened (message) and what to do (advice)
 * from package failure, the one mapping from errors to words, which
 * knows whether the provider is a server on this machine and names its
 * address only to a reader on the server's machine. The page keeps its
 * own words for a failure without them, for a refused setting (said
 * beside its field), and for advice that names a command-line flag (the
 * page has its own control). where says whether the provider is a local
 * server, which changes what to check: its process and log, not the
 * network or a vendor's status page.
 */
export function problemOf(f: Failure | undefined, fallback?: string, where?: Where): Problem {
  const own = ownWords(f, fallback, where)
  if (!f?.message || f.kind === 'params') return own
  const advice = f.advice && !/(^|[\s(])--[a-z]/.test(f.advice) ? sentence(opening(f.advice)) : own.advice
  return { ...own, title: sentence(opening(f.message)), advice }
}

/** ownWords is the page's own words for a failure, from its kind. */
function ownWords(f: Failure | undefined, fallback?: string, where?: Where): Problem {
  const detail = f?.detail ?? fallback
  const { who, local } = whoFailed(f, detail, where)
  const Who = capitalize(who)
  switch (f?.kind) {
    case 'provider_error':
      return {
        kind: f.kind,
        title: `${Who} had a server error and did not answer, even after several tries.`,
        advice: local
          ? 'Its log says why (a model too large for the memory it has is a common cause); try again once it answers.'
          : `This is usually brief: try again in a minute. If it keeps happening, check ${who}’s status page.`,
        detail,
      }
    case 'rate_limited':
      return {
        kind: f.kind,
        title: `${Who} is limiting how many requests it takes.`,
        advice: local
          ? 'Wait a moment and try again. Fewer runs at once (MADSPARK_PROVIDER_CONCURRENCY) keeps it from being overloaded.'
          : 'Wait a minute and try again. Fewer runs at once (MADSPARK_PROVIDER_CONCURRENCY) or a higher plan with the provider avoids it.',
        detail,
      }
    case 'provider_paused': {
      const when = f.retry_at ? localTime(f.retry_at) : undefined
      return {
        kind: f.kind,
        title: `madspark paused its calls to ${who} after it failed several times in a row.`,
        advice: when ? `It tries again at ${when}. Try again after that.` : 'It tries again in a minute. Try again after that.',
        detail,
      }
    }
    case 'auth':
      return {
        kind: f.kind,
        title: `${Who} refused the API key.`,
        advice: 'Check the key the server was started with (such as OPENAI_API_KEY) and that it may use this model, then restart the server.',
        detail,
      }
    case 'provider_refused':
      return {
        kind: f.kind,
        title: `${Who} refused the request.`,
        advice: 'Check the model name the server uses (MADSPARK_MODEL); a very long input may also be too large for it.',
        detail,
      }
    case 'network':
      return local
        ? {
            kind: f.kind,
            title: `madspark could not connect to ${who}.`,
            advice: 'Check that the model server is running and listening at that address (start it again if it stopped), then try again.',
            detail,
          }
        : {
            kind: f.kind,
            title: `madspark could not reach ${who}.`,
            advice: 'Check the internet connection of the machine madspark runs on (and its proxy, if it uses one), then try again.',
            detail,
          }
    case 'timeout':
      return {
        kind: f.kind,
        title: local ? `${Who} took longer than allowed, and the call was stopped.` : 'It took longer than allowed and was stopped.',
        advice: local
          ? 'Try again. A smaller model, or a smaller run (fewer ideas, iterations or rounds), finishes sooner on this machine.'
          : 'Try again. A smaller run (fewer ideas, iterations or rounds) finishes sooner.',
        detail,
      }
    case 'search_unavailable':
      return {
        kind: f.kind,
        title: 'The literature search could not reach any of its sources.',
        advice: 'Check the network connection, or turn on “No literature search” and run again.',
        detail,
      }
    case 'params':
      return {
        kind: f.kind,
        title: f.field ? `A setting was not accepted: ${fieldWords(f.field)}.` : 'A setting was not accepted.',
        advice: `${sentence(fieldMessage(f.detail, f.field))} Edit it and run again; your other values are kept.`,
        detail,
        field: f.field,
      }
    case 'reply_unusable':
      return {
        kind: f.kind,
        title: 'The model’s reply could not be used, even after it was asked again.',
        advice: 'Resume the run to ask once more; its finished steps are not paid again. A larger model or a lower temperature helps.',
        detail,
      }
    case 'interrupted':
      return {
        kind: f.kind,
        title: 'The run was interrupted: the process working it stopped before it finished.',
        advice: 'Resume it to finish it; its finished steps are not paid again.',
        detail,
      }
    case 'cancelled':
      return { kind: f.kind, title: 'It was cancelled.', advice: 'What had finished is kept.', detail }
  }
  return {
    kind: 'unknown',
    title: 'Something went wrong.',
    advice: 'Try again. The technical detail below says what failed; the server log says more.',
    detail,
  }
}

/**
 * problemOfError says what an error of a request to the madspark server
 * means: the server out of reach, a token needed, too many requests, a
 * value refused, or a failure the server classified.
 */
export function problemOfError(err: unknown, failure?: Failure, where?: Where): Problem {
  failure ??= err instanceof ApiError ? err.failure : undefined
  if (failure) return problemOf(failure, err instanceof Error ? err.message : String(err), where)
  if (!(err instanceof ApiError)) {
    const detail = err instanceof Error ? err.message : String(err)
    return { kind: 'unknown', title: 'Something went wrong in this page.', advice: 'Reload the page and try again.', detail }
  }
  const detail = err.message
  switch (true) {
    case err.type === 'network' || err.status === 0:
      return {
        kind: 'server_unreachable',
        title: 'The madspark server cannot be reached.',
        advice: 'Check that it is still running (madspark serve), then try again.',
        detail,
      }
    case err.status === 401:
      return {
        kind: 'token',
        title: 'The server needs its API token.',
        advice: 'Enter the token the server was started with (MADSPARK_API_TOKEN) in Settings.',
        detail,
      }
    case err.status === 429:
      return {
        kind: 'too_many',
        title: 'The server is taking no more requests for a moment.',
        advice: err.retryAfter !== undefined ? `Try again in ${err.retryAfter} ${err.retryAfter === 1 ? 'second' : 'seconds'}.` : 'Try again in a few seconds.',
        detail,
      }
    case err.status === 404:
      return { kind: 'not_found', title: 'That is not there any more.', advice: 'It may have been deleted; go back and reload the list.', detail }
    case err.status === 400 || err.status === 413 || err.status === 422:
      return {
        kind: 'refused',
        title: sentence(fieldMessage(err.message, err.field)),
        advice: 'Correct it and try again.',
        detail,
        field: err.field,
      }
    case err.status === 409:
      return { kind: 'refused', title: sentence(capitalize(err.message)), advice: 'Reload the page to see where things stand.', detail }
    case err.status >= 500:
      return {
        kind: 'server_error',
        title: 'The madspark server had an internal error.',
        advice: 'Try again; the server’s log says what went wrong.',
        detail,
      }
  }
  return { kind: 'unknown', title: sentence(capitalize(err.message)), advice: 'Try again.', detail }
}

/**
 * retryWords says that a call is being tried again, as it happens: why
 * it failed, when it is tried again and which attempt that is, of how
 * many when maxAttempts is known. "The model server at 127.0.0.1:8080
 * refused the connection; trying again in 2 s (attempt 2 of 4)." It serves
 * an answer's retries in chat and a run's on its page alike.
 */
export function retryWords(f: Failure | undefined, delayMs: number, attempt: number, where?: Where, maxAttempts?: number): string {
  const { who } = whoFailed(f, f?.detail, where)
  const Who = capitalize(who)
  const refused = /connection refused/.test(`${f?.detail ?? ''} ${f?.message ?? ''}`)
  const why =
    f?.kind === 'provider_error'
      ? `${Who} had a server error`
      : f?.kind === 'rate_limited'
        ? `${Who} is limiting how many requests it takes`
        : f?.kind === 'network' && refused
          ? `${Who} refused the connection`
          : f?.kind === 'network'
            ? `madspark could not reach ${who}`
            : f?.kind === 'timeout'
              ? `${Who} took too long to answer`
              : `A call to ${who} failed`
  const secs = Math.max(1, Math.round(delayMs / 1000))
  const of = maxAttempts && maxAttempts >= attempt ? ` of ${maxAttempts}` : ''
  return `${why}; trying again in ${secs} s (attempt ${attempt}${of}).`
}
