import { describe, expect, it } from 'vitest'
import { parseHookSecrets, parseHookUri } from './config.js'

const SECRET = 'v1,whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'

describe('parseHookUri', () => {
  it('reads https, loopback http and pg-functions targets', () => {
    expect(parseHookUri('https://hooks.example.com/claims')).toEqual({
      kind: 'http',
      url: 'https://hooks.example.com/claims',
    })
    expect(parseHookUri('http://127.0.0.1:8080/h')).toMatchObject({ kind: 'http' })
    expect(parseHookUri('http://[::1]/h')).toMatchObject({ kind: 'http' })
    expect(parseHookUri('pg-functions://postgres/public/custom_access_token_hook')).toEqual({
      kind: 'pg-function',
      uri: 'pg-functions://postgres/public/custom_access_token_hook',
      schema: 'public',
      name: 'custom_access_token_hook',
    })
    expect(parseHookUri('')).toBeNull()
  })
})

describe('parseHookSecrets', () => {
  it('keeps the base64 keys of every secret of a rotation', () => {
    expect(parseHookSecrets(`${SECRET}|v1,whsec_${'A'.repeat(44)}|`)).toEqual([
      'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'A'.repeat(44),
    ])
  })
})
