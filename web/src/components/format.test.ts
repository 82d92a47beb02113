import { describe, expect, it } from 'vitest'
import { liveStatus, percent, plural, score, signed, usd } from './format'

describe('numbers for people', () => {
  it('rounds scores to one decimal', () => {
    expect(score(7.349999999)).toBe('7.3')
    expect(score(8)).toBe('8.0')
    expect(score(undefined)).toBe('–')
    expect(signed(1.25)).toBe('+1.3')
    expect(signed(-0.04)).toBe('−0.0')
  })
  it('shows confidences as whole percentages', () => {
    expect(percent(0.9199999999999999)).toBe('92%')
    expect(percent(0.005)).toBe('1%')
    expect(percent(1)).toBe('100%')
    expect(percent(0)).toBe('0%')
    expect(percent(Number.NaN)).toBe('–')
  })
  it('rounds costs to cents, or to four decimals below a cent', () => {
    expect(usd(0)).toBe('$0')
    expect(usd(0.123456)).toBe('$0.12')
    expect(usd(0.000412)).toBe('$0.0004')
  })
})

describe('plural', () => {
  it('says one thing in the singular and others in the plural', () => {
    expect(plural(1, 'LLM call')).toBe('1 LLM call')
    expect(plural(0, 'LLM call')).toBe('0 LLM calls')
    expect(plural(2, 'LLM call')).toBe('2 LLM calls')
    expect(plural(1200, 'token')).toBe('1,200 tokens')
    expect(plural(3, 'query', 'queries')).toBe('3 queries')
    expect(plural(1, 'query', 'queries')).toBe('1 query')
  })
})

describe('liveStatus', () => {
  it('follows the live progress until the record is final', () => {
    expect(liveStatus('queued', 'running', 'evaluate')).toBe('running')
    expect(liveStatus('queued', 'running', 'queued')).toBe('queued')
    expect(liveStatus('queued', 'connecting')).toBe('queued')
    expect(liveStatus('running', 'succeeded')).toBe('succeeded')
    expect(liveStatus('running', 'failed')).toBe('failed')
    expect(liveStatus('cancelled', 'running', 'evaluate')).toBe('cancelled')
  })
})
