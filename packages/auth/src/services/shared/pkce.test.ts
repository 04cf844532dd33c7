import { describe, expect, it } from 'vitest'
import type { BadRequestError } from '../../errors.js'
import { parsePkceChallenge } from './pkce.js'

describe('parsePkceChallenge', () => {
  const challenge = 'a'.repeat(43)

  it('is undefined without PKCE and normalises the method', () => {
    expect(parsePkceChallenge('', '')).toBeUndefined()
    expect(parsePkceChallenge(challenge, 'S256')).toEqual({
      codeChallenge: challenge,
      codeChallengeMethod: 's256',
    })
    expect(parsePkceChallenge(`${challenge}._~-`, 'Plain')?.codeChallengeMethod).toBe('plain')
  })

  it.each([
    [challenge, '', 'PKCE flow requires code_challenge_method and code_challenge'],
    ['', 's256', 'PKCE flow requires code_challenge_method and code_challenge'],
    ['a'.repeat(42), 's256', 'code challenge has to be between 43 and 128 characters'],
    ['a'.repeat(129), 's256', 'code challenge has to be between 43 and 128 characters'],
    [
      `${challenge}+`,
      's256',
      'code challenge can only contain alphanumeric characters, hyphens, periods, underscores and tildes',
    ],
    [challenge, 'S512', 'unsupported code_challenge method "S512"'],
  ])('refuses %j / %j', (codeChallenge, method, message) => {
    expect(() => parsePkceChallenge(codeChallenge, method)).toThrow(
      expect.objectContaining({ code: 'validation_failed', message }) as BadRequestError,
    )
  })
})
