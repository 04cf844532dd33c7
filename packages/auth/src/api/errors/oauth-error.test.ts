import { describe, expect, it } from 'vitest'
import { HttpError } from './http-error.js'
import { toOAuthError } from './oauth-error.js'

describe('toOAuthError', () => {
  it('maps credential and token failures to invalid_grant (RFC 6749 §5.2)', () => {
    expect(
      toOAuthError(new HttpError(400, 'invalid_credentials', 'Invalid login credentials')),
    ).toEqual({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'Invalid login credentials' },
    })
    expect(toOAuthError(new HttpError(400, 'refresh_token_already_used', 'x')).body.error).toBe(
      'invalid_grant',
    )
  })

  it('maps unknown grants, validation and server failures', () => {
    expect(
      toOAuthError(new HttpError(400, 'invalid_credentials', 'unsupported_grant_type')).body,
    ).toEqual({
      error: 'unsupported_grant_type',
    })
    expect(
      toOAuthError(new HttpError(400, 'validation_failed', 'missing email or phone')).body,
    ).toEqual({
      error: 'invalid_request',
      error_description: 'missing email or phone',
    })
    expect(toOAuthError(new HttpError(500, 'unexpected_failure', 'boom'))).toEqual({
      status: 500,
      body: { error: 'server_error', error_description: 'boom' },
    })
    expect(toOAuthError(new HttpError(429, 'over_request_rate_limit', 'slow down')).status).toBe(
      429,
    )
  })
})
