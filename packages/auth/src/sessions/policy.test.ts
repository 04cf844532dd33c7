import { describe, expect, it } from 'vitest'
import type { Session } from '../models/session.js'
import {
  capLowAalExpiry,
  highestPossibleAal,
  lastRefreshedAt,
  sessionTag,
  sessionValidity,
  type SessionPolicy,
} from './policy.js'

const T0 = Date.UTC(2026, 0, 1)
const H = 3_600_000

function session(over: Partial<Session> = {}): Session {
  return {
    id: '00000000-0000-4000-8000-000000000001',
    userId: '00000000-0000-4000-8000-000000000002',
    createdAt: new Date(T0),
    updatedAt: new Date(T0),
    aal: 'aal1',
    notAfter: null,
    refreshedAt: null,
    tag: null,
    ...over,
  }
}

const OFF: SessionPolicy = {
  timeboxMs: 0,
  inactivityTimeoutMs: 0,
  allowLowAalMs: 0,
  singlePerUser: false,
  tags: [],
}

describe('sessionValidity', () => {
  const policy: SessionPolicy = {
    ...OFF,
    timeboxMs: 10 * H,
    inactivityTimeoutMs: H,
    allowLowAalMs: 2 * H,
  }

  it('checks not_after, then the timebox, the inactivity and the low AAL, each strictly after', () => {
    expect(sessionValidity(session(), OFF, T0 + 1000 * H, 'aal2')).toBe('valid')
    expect(sessionValidity(session({ notAfter: new Date(T0 + 1) }), policy, T0 + 2, 'aal1')).toBe(
      'past_not_after',
    )
    const fresh = session({ refreshedAt: new Date(T0 + 10 * H) })
    expect(sessionValidity(fresh, policy, T0 + 10 * H, 'aal1')).toBe('valid')
    expect(sessionValidity(fresh, policy, T0 + 10 * H + 1, 'aal1')).toBe('past_timebox')
    expect(sessionValidity(session(), policy, T0 + H, 'aal1')).toBe('valid')
    expect(sessionValidity(session(), policy, T0 + H + 1, 'aal1')).toBe('timed_out')
    const active = session({ refreshedAt: new Date(T0 + 2 * H) })
    expect(sessionValidity(active, policy, T0 + 2 * H + 1, 'aal1')).toBe('valid')
    expect(sessionValidity(active, policy, T0 + 2 * H + 1, 'aal2')).toBe('low_aal')
    expect(sessionValidity({ ...active, aal: 'aal2' }, policy, T0 + 2 * H + 1, 'aal2')).toBe(
      'valid',
    )
  })

  it('counts inactivity from the refresh token used when the session has no refreshed_at', () => {
    expect(lastRefreshedAt(session(), new Date(T0 + H))).toBe(T0 + H)
    expect(lastRefreshedAt(session(), new Date(T0 - H))).toBe(T0)
    expect(lastRefreshedAt(session({ refreshedAt: new Date(T0 + 5) }), new Date(T0 + H))).toBe(
      T0 + 5,
    )
    expect(sessionValidity(session(), policy, T0 + 1.5 * H, 'aal1', new Date(T0 + H))).toBe('valid')
  })
})

describe('sessionTag, highestPossibleAal, capLowAalExpiry', () => {
  it('a listed tag counts as itself, another or none as the first; no tags: ""', () => {
    expect(sessionTag(session({ tag: 'mobile' }), ['web', 'mobile'])).toBe('mobile')
    expect(sessionTag(session({ tag: 'tv' }), ['web', 'mobile'])).toBe('web')
    expect(sessionTag(session(), ['web', 'mobile'])).toBe('web')
    expect(sessionTag(session({ tag: 'mobile' }), [])).toBe('')
  })

  it('aal2 only with a verified factor; low-AAL tokens end at creation plus the allowance', () => {
    expect(highestPossibleAal([{ status: 'unverified' }])).toBe('aal1')
    expect(highestPossibleAal([{ status: 'unverified' }, { status: 'verified' }])).toBe('aal2')
    const p = { ...OFF, allowLowAalMs: 600_000 }
    const exp = T0 / 1000 + 3600
    expect(capLowAalExpiry(exp, session(), p, 'aal2')).toBe(T0 / 1000 + 600)
    expect(capLowAalExpiry(exp, session(), p, 'aal1')).toBe(exp)
    expect(capLowAalExpiry(exp, session(), OFF, 'aal2')).toBe(exp)
  })
})
