import { describe, expect, it } from 'vitest'
import { loadSettings } from '../settings/settings.js'
import { tokenMatches } from './counters-http.js'

describe('counter API token (issue 32)', () => {
  it('matches only the exact token, whatever the lengths', () => {
    expect(tokenMatches('secret-token', 'secret-token')).toBe(true)
    expect(tokenMatches('secret-toke', 'secret-token')).toBe(false)
    expect(tokenMatches('secret-token-', 'secret-token')).toBe(false)
    expect(tokenMatches('', 'secret-token')).toBe(false)
  })

  it('reads ADMIN_API_TOKEN, empty (the API off) by default', () => {
    expect(loadSettings({}).adminApiToken).toBe('')
    expect(loadSettings({ ADMIN_API_TOKEN: 't0k3n' }).adminApiToken).toBe('t0k3n')
  })
})
