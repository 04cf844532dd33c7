import { describe, expect, it } from 'vitest'
import { ConnectionError, OAuth2Error, TimeoutError } from './error.js'
import { Response } from './response.js'

const json = (body: string, status = 400) =>
  new Response({ status, headers: { 'content-type': 'application/json' }, body })

describe('OAuth2Error', () => {
  it('reads code and description from a standard error body; message is "code: description\\nbody"', () => {
    const body = '{"error":"invalid_grant","error_description":"grant request is invalid"}'
    const error = new OAuth2Error(json(body))
    expect(error).toBeInstanceOf(Error)
    expect(error.name).toBe('OAuth2Error')
    expect(error.code).toBe('invalid_grant')
    expect(error.description).toBe('grant request is invalid')
    expect(error.body).toBe(body)
    expect(error.response?.status).toBe(400)
    expect(error.message).toBe(`invalid_grant: grant request is invalid\n${body}`)
  })

  it('formats "code: " with only a code, the description alone, or just the body', () => {
    expect(new OAuth2Error(json('{"error":"x"}')).message).toBe('x: \n{"error":"x"}')
    expect(new OAuth2Error(json('{"error_description":"d"}')).message).toBe(
      'd\n{"error_description":"d"}',
    )
    const plain = new Response({
      status: 500,
      headers: { 'content-type': 'text/html' },
      body: '<h1>oops</h1>',
    })
    expect(new OAuth2Error(plain).message).toBe('<h1>oops</h1>')
    expect(new OAuth2Error(plain).code).toBeUndefined()
  })

  it('survives an invalid JSON body', () => {
    const error = new OAuth2Error(json('{nope'))
    expect(error.code).toBeUndefined()
    expect(error.message).toBe('{nope')
  })

  it('can be built from fields, with the JSON of the fields as body', () => {
    const error = new OAuth2Error({
      error: 'no_refresh_token',
      error_description: 'A refresh_token is not available',
    })
    expect(error.code).toBe('no_refresh_token')
    expect(error.response).toBeUndefined()
    expect(error.message).toBe(
      'no_refresh_token: A refresh_token is not available\n{"error":"no_refresh_token","error_description":"A refresh_token is not available"}',
    )
  })

  it('takes overrides and a cause', () => {
    const cause = new Error('inner')
    const error = new OAuth2Error(json('{}'), {
      code: 'unhandled_status',
      message: 'custom',
      cause,
    })
    expect(error.message).toBe('custom')
    expect(error.code).toBe('unhandled_status')
    expect(error.cause).toBe(cause)
  })
})

describe('transport errors', () => {
  it('keep the message and cause and have stable codes', () => {
    const cause = new Error('connect ECONNREFUSED')
    const c = new ConnectionError('connect ECONNREFUSED', { cause })
    expect(c.code).toBe('ERR_OAUTH2_CONNECTION')
    expect(c.cause).toBe(cause)
    expect(new TimeoutError('slow').code).toBe('ERR_OAUTH2_TIMEOUT')
    expect(new TimeoutError('slow')).not.toBeInstanceOf(ConnectionError)
  })
})
