import { describe, expect, it } from 'vitest'
import { argError } from '../test/support/expect.js'
import { Client } from './client.js'
import { configure, currentConfiguration, debugEnabled } from './config.js'

describe('configure', () => {
  it('returns the previous settings, extends the filtered keys and is snapshotted by clients', () => {
    const before = new Client('id', 's')
    const previous = configure({
      filteredDebugKeys: ['client_assertion', 'x-tenant-key'],
      filteredLabel: 'X',
    })
    try {
      expect(previous.filteredLabel).toBe('[FILTERED]')
      expect(currentConfiguration().filteredDebugKeys).toEqual([
        'access_token',
        'refresh_token',
        'id_token',
        'client_secret',
        'assertion',
        'code_verifier',
        'token',
        'password',
        'code',
        'client_assertion',
        'device_code',
        'subject_token',
        'actor_token',
        'x-tenant-key',
      ])
      expect(before.config.filteredLabel).toBe('[FILTERED]')
      expect(new Client('id', 's').config.filteredLabel).toBe('X')
    } finally {
      configure(previous)
    }
    expect(currentConfiguration()).toEqual(previous)
  })

  it('rejects settings of the wrong type', () => {
    expect(() => configure(null as never)).toThrow(argError('ERR_INVALID_ARG_TYPE', '"settings"'))
    expect(() => configure({ filteredLabel: 1 as never })).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"settings.filteredLabel"'),
    )
    expect(() => configure({ silenceNoTokensWarning: 'yes' as never })).toThrow(TypeError)
    expect(() => configure({ filteredDebugKeys: [1] as never })).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"settings.filteredDebugKeys"'),
    )
  })

  it('enables debug logging only for OAUTH_DEBUG=true (any case)', () => {
    expect(debugEnabled({ OAUTH_DEBUG: 'true' })).toBe(true)
    expect(debugEnabled({ OAUTH_DEBUG: 'True' })).toBe(true)
    expect(debugEnabled({ OAUTH_DEBUG: '1' })).toBe(false)
    expect(debugEnabled({})).toBe(false)
    expect(debugEnabled(undefined)).toBe(false)
  })
})
