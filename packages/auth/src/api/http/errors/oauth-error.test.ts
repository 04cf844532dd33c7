import { describe, expect, it } from 'vitest'
import {
  BadRequestError,
  InternalServerError,
  TooManyRequestsError,
  UnsupportedGrantTypeError,
} from '../../../errors.js'
import { toOAuthError } from './oauth-error.js'

describe('toOAuthError', () => {
  it('maps credential and token failures to invalid_grant (RFC 6749 §5.2)', () => {
    expect(
      toOAuthError(new BadRequestError('invalid_credentials', 'Invalid login credentials')),
    ).toEqual({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'Invalid login credentials' },
    })
    expect(toOAuthError(new BadRequestError('refresh_token_already_used', 'x')).body.error).toBe(
      'invalid_grant',
    )
  })

  it('maps unknown grants, validation and server failures', () => {
    expect(toOAuthError(new UnsupportedGrantTypeError()).body).toEqual({
      error: 'unsupported_grant_type',
    })
    expect(
      toOAuthError(new BadRequestError('validation_failed', 'missing email or phone')).body,
    ).toEqual({
      error: 'invalid_request',
      error_description: 'missing email or phone',
    })
    expect(toOAuthError(new InternalServerError('unexpected_failure', 'boom'))).toEqual({
      status: 500,
      body: { error: 'server_error', error_description: 'boom' },
    })
    expect(
      toOAuthError(new TooManyRequestsError('over_request_rate_limit', 'slow down')).status,
    ).toBe(429)
  })

  it('decides by class, not by message text', () => {
    expect(
      toOAuthError(new BadRequestError('invalid_credentials', 'unsupported_grant_type')).body,
    ).toEqual({ error: 'invalid_grant', error_description: 'unsupported_grant_type' })
  })
})
