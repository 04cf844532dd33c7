import { describe, expect, it } from 'vitest'
import { PasswordHashingBusyError } from '../../../crypto/password-hasher.js'
import { JwtKeyError } from '../../../crypto/jwt.js'
import {
  RequestRateLimitError,
  ServiceUnavailableError,
  AuthError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  InternalServerError,
  NotFoundError,
  PayloadTooLargeError,
  RequestTimeoutError,
  TooManyRequestsError,
  UnauthorizedError,
  UnprocessableEntityError,
  UnsupportedGrantTypeError,
  UserNotFoundError,
  WeakPasswordError,
} from '../../../errors.js'
import { WIRE_ERRORS, wireErrorOf } from './wire.js'

describe('WIRE_ERRORS', () => {
  it.each<[AuthError, number]>([
    [new BadRequestError('validation_failed', 'x'), 400],
    [new UnauthorizedError('no_authorization', 'x'), 401],
    [new ForbiddenError('bad_jwt', 'x'), 403],
    [new NotFoundError('not_found', 'x'), 404],
    [new ConflictError('conflict', 'x'), 409],
    [new PayloadTooLargeError('request_entity_too_large', 'x'), 413],
    [new UnprocessableEntityError('email_exists', 'x'), 422],
    [new TooManyRequestsError('over_request_rate_limit', 'x'), 429],
    [new InternalServerError('unexpected_failure', 'x'), 500],
    [new RequestTimeoutError(), 504],
  ])('answers %o with %i', (error, status) => {
    expect(wireErrorOf(error)).toEqual({ status, headers: {}, extra: {} })
  })

  it('lets subclasses inherit the row of their nearest mapped parent', () => {
    expect(wireErrorOf(new UserNotFoundError()).status).toBe(404)
    expect(wireErrorOf(new UnsupportedGrantTypeError()).status).toBe(400)
    expect(wireErrorOf(new JwtKeyError('bad key')).status).toBe(500)
    class Unlisted extends AuthError {}
    expect(wireErrorOf(new Unlisted('unknown', 'x')).status).toBe(500)
  })

  it('adds the extra fields and headers of the row', () => {
    expect(wireErrorOf(new WeakPasswordError('too short', ['length']))).toEqual({
      status: 422,
      headers: {},
      extra: { weak_password: { reasons: ['length'] } },
    })
    expect(wireErrorOf(new PasswordHashingBusyError())).toEqual({
      status: 429,
      headers: { 'retry-after': '1' },
      extra: {},
    })
  })

  it('answers a rate-limited request with its Retry-After, an unreachable dependency with 503', () => {
    expect(wireErrorOf(new RequestRateLimitError(2.2))).toEqual({
      status: 429,
      headers: { 'retry-after': '3' },
      extra: {},
    })
    expect(new RequestRateLimitError(0).retryAfterSeconds).toBe(1)
    expect(wireErrorOf(new ServiceUnavailableError('unexpected_failure', 'x')).status).toBe(503)
  })

  it('maps each class once', () => {
    const classes = WIRE_ERRORS.map((row) => row.error)
    expect(new Set(classes).size).toBe(classes.length)
  })
})

describe('AuthError', () => {
  it('carries the GoTrue code, the public message, the private cause and its class name', () => {
    const cause = new Error('connection refused')
    const error = new InternalServerError('unexpected_failure', 'Error sending email', { cause })
    expect(error).toBeInstanceOf(AuthError)
    expect(error).toMatchObject({
      name: 'InternalServerError',
      code: 'unexpected_failure',
      message: 'Error sending email',
      cause,
    })
    expect(new UserNotFoundError()).toMatchObject({
      name: 'UserNotFoundError',
      code: 'user_not_found',
      message: 'User not found',
    })
  })
})
