import { describe, expect, it } from 'vitest'
import type { StackState } from './state.js'
import { statusTable } from './status.js'

const state: StackState = {
  pid: 1,
  startedAt: '2026-01-01T00:00:00.000Z',
  ready: true,
  endpoints: [
    { label: 'Supabase URL', value: 'http://127.0.0.1:54321', note: 'createClient' },
    { label: 'rate limit HTTP', value: 'http://127.0.0.1:8080/json' },
  ],
  checks: [
    { name: 'auth', url: 'http://127.0.0.1:9999/health' },
    { name: 'ratelimit', url: 'http://127.0.0.1:8080/healthcheck' },
  ],
  keys: { anon: 'a.b.c', serviceRole: 'd.e.f' },
}

describe('statusTable', () => {
  it('aligns the URLs, then the keys, with the health when asked', () => {
    expect(statusTable(state, new Map([['auth', true]]))).toEqual([
      '  services          auth up, ratelimit DOWN',
      '  Supabase URL      http://127.0.0.1:54321      createClient',
      '  rate limit HTTP   http://127.0.0.1:8080/json',
      '  anon key          a.b.c',
      '  service_role key  d.e.f                       admin: never in a browser',
    ])
  })

  it("says why there are no keys once ready with the user's own JWT secret", () => {
    const { keys: _keys, ...withoutKeys } = state
    expect(statusTable(withoutKeys).at(-1)).toBe(
      '  keys             not printed: the JWT secret (or JWT_KEYS) is your own',
    )
    expect(statusTable({ ...withoutKeys, ready: false })).toHaveLength(2)
  })
})
