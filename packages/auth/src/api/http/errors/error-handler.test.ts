import { describe, expect, it } from 'vitest'
import {
  BadRequestError,
  ConflictError,
  InternalServerError,
  PayloadTooLargeError,
  RequestTimeoutError,
  ServiceUnavailableError,
  UserNotFoundError,
} from '../../../errors.js'
import { DatabaseUnavailableError } from '../../../storage/db.js'
import { toAuthError } from './error-handler.js'

describe('toAuthError', () => {
  it('keeps an AuthError as it is', () => {
    const error = new UserNotFoundError()
    expect(toAuthError(error)).toBe(error)
  })

  it("maps Fastify's body errors to upstream's", () => {
    const tooLarge = toAuthError(
      Object.assign(new Error('too large'), {
        code: 'FST_ERR_CTP_BODY_TOO_LARGE',
        statusCode: 413,
      }),
    )
    expect(tooLarge).toBeInstanceOf(PayloadTooLargeError)
    expect(tooLarge).toMatchObject({
      code: 'request_entity_too_large',
      message: 'Request body too large (max 1048576 bytes)',
    })
    const length = toAuthError(
      Object.assign(new Error('bad length'), {
        code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH',
        statusCode: 400,
      }),
    )
    expect(length).toBeInstanceOf(BadRequestError)
    expect(length.code).toBe('bad_json')
  })

  it('maps an unavailable database to 503 database_unavailable, keeping the cause', () => {
    const lost = new Error('Connection terminated unexpectedly')
    for (const error of [new DatabaseUnavailableError(lost), lost]) {
      const mapped = toAuthError(error)
      expect(mapped).toBeInstanceOf(ServiceUnavailableError)
      expect(mapped).toMatchObject({
        code: 'database_unavailable',
        message: 'The database is unavailable; retry in a moment.',
        cause: error,
      })
    }
  })

  it("maps a statement cut by the transaction's statement_timeout to 504 request_timeout", () => {
    const error = toAuthError(Object.assign(new Error('canceling statement'), { code: '57014' }))
    expect(error).toBeInstanceOf(RequestTimeoutError)
    expect(error.code).toBe('request_timeout')
  })

  it("maps PostgreSQL's lock timeout to 409 conflict", () => {
    const error = toAuthError(Object.assign(new Error('lock timeout'), { code: '55P03' }))
    expect(error).toBeInstanceOf(ConflictError)
    expect(error.code).toBe('conflict')
  })

  it('keeps the status family of other client errors and hides the cause of the rest', () => {
    const client = toAuthError(Object.assign(new Error('bad url'), { statusCode: 400 }))
    expect(client).toBeInstanceOf(BadRequestError)
    expect(client).toMatchObject({ code: 'validation_failed', message: 'bad url' })
    const cause = new TypeError('x is undefined')
    const server = toAuthError(cause)
    expect(server).toBeInstanceOf(InternalServerError)
    expect(server).toMatchObject({
      code: 'unexpected_failure',
      message: 'Unexpected failure, please check server logs for more information',
      cause,
    })
  })
})
