import { describe, expect, it } from 'vitest'
import { RateLimitConfigError } from '../config/errors.js'
import { RateLimitError } from '../errors.js'
import { BackendError } from '../limiter/cache.js'
import { JsonRequestError } from '../protocol/json.js'
import { RequestLimitError } from '../protocol/limits.js'
import { WireFormatError } from '../protocol/protobuf/wire.js'
import { ShouldRateLimitError } from '../service/service.js'
import { SettingsError } from '@gatehouse/settings'
import { GRPC_STATUS, grpcStatusOf, httpErrorOf } from './status.js'

describe('the error vocabulary', () => {
  it('makes every error of the package a RateLimitError with its own name and code', () => {
    const errors = [
      [new ShouldRateLimitError('service_error', 'm'), 'ShouldRateLimitError', 'ERR_SERVICE'],
      [new ShouldRateLimitError('redis_error', 'm'), 'ShouldRateLimitError', 'ERR_BACKEND'],
      [new RequestLimitError('m'), 'RequestLimitError', 'ERR_REQUEST_TOO_LARGE'],
      [new WireFormatError('m'), 'WireFormatError', 'ERR_INVALID_WIRE_FORMAT'],
      [new JsonRequestError('ERR_INVALID_JSON', 'm'), 'JsonRequestError', 'ERR_INVALID_JSON'],
      [new BackendError('m'), 'BackendError', 'ERR_BACKEND'],
      [new RateLimitConfigError('f.yaml', 'm'), 'RateLimitConfigError', 'ERR_RATELIMIT_CONFIG'],
    ] as const
    for (const [error, name, code] of errors) {
      expect(error).toBeInstanceOf(RateLimitError)
      expect([error.name, error.code]).toEqual([name, code])
    }
  })

  it('reports bad environment variables with the SettingsError both servers share', () => {
    const error = new SettingsError(['A: m'])
    expect(error).toBeInstanceOf(SettingsError)
    expect([error.name, error.code, error.problems]).toEqual([
      'SettingsError',
      'ERR_INVALID_SETTINGS',
      ['A: m'],
    ])
    expect(grpcStatusOf(error)).toBeUndefined()
  })
})

describe('one mapping to gRPC and HTTP statuses', () => {
  it('answers service and backend errors with UNKNOWN / 400 and their message', () => {
    for (const error of [
      new ShouldRateLimitError('service_error', 'rate limit domain must not be empty'),
      new ShouldRateLimitError('redis_error', 'rate limit domain must not be empty'),
      new RequestLimitError('rate limit domain must not be empty'),
    ]) {
      expect(grpcStatusOf(error)).toEqual({
        code: GRPC_STATUS.UNKNOWN,
        details: 'rate limit domain must not be empty',
        errorCode: error.code,
      })
      expect(httpErrorOf(error)).toEqual({
        status: 400,
        body: 'Bad Request\n',
        code: error.code,
        message: 'rate limit domain must not be empty',
      })
    }
  })

  it('answers undecodable requests as Go does: INTERNAL on gRPC, 400 on HTTP', () => {
    const wire = new WireFormatError('proto: cannot parse invalid wire-format data')
    expect(grpcStatusOf(wire)).toEqual({
      code: GRPC_STATUS.INTERNAL,
      details: 'grpc: error unmarshalling request: proto: cannot parse invalid wire-format data',
      errorCode: 'ERR_INVALID_WIRE_FORMAT',
    })
    const json = new JsonRequestError('ERR_EMPTY_BODY', 'request body is empty')
    expect(httpErrorOf(json)).toMatchObject({ status: 400, code: 'ERR_EMPTY_BODY' })
  })

  it('leaves bugs and configuration errors to the last-resort answer', () => {
    for (const error of [
      new Error('boom'),
      'a string',
      new RateLimitConfigError('f.yaml', 'bad'),
      new SettingsError(['PORT: bad']),
    ]) {
      expect(grpcStatusOf(error)).toBeUndefined()
      expect(httpErrorOf(error)).toBeUndefined()
    }
  })
})
