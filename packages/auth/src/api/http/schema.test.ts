import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadSettings } from '../../conf/settings.js'
import { cryptoRandom } from '../../random.js'
import { createServer } from '../../server.js'
import { UUID_PATTERN } from '../../services/shared/validation.js'
import { parseQueryString } from './body.js'
import {
  Body,
  BoolField,
  ObjectField,
  OptionalBody,
  OptionalParam,
  Param,
  Params,
  PointerStringField,
  Query,
  StringField,
  schemaError,
} from './schema.js'

const settings = loadSettings({
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'postgres://localhost/unused',
})

const ThingBody = Body({
  name: StringField(),
  on: BoolField(),
  meta: ObjectField(),
  secret: PointerStringField(),
})
const ThingQuery = Query({
  mode: OptionalParam({ enum: ['', 'a', 'b'], errorMessage: 'Unsupported mode %q' }),
  sort: OptionalParam({ pattern: '^(|x)$', errorMessage: 'Bad Sort Parameters: %s' }),
})
const ThingParams = Params({
  id: Param({ pattern: UUID_PATTERN, errorMessage: 'id must be an UUID' }),
})
const ID = '6f1c1a56-4a0e-4ad4-9a4b-3a0b0d9b8c01'

/** A server with the real plumbing (parser, Ajv options, error handler) and routes of the test. */
function buildTestServer(): FastifyInstance {
  const app = createServer(settings, { random: cryptoRandom })
  void app.register((scope, _options, done) => {
    const typed = scope.withTypeProvider<TypeBoxTypeProvider>()
    typed.post(
      '/things/:id',
      { schema: { params: ThingParams, body: ThingBody, querystring: ThingQuery } },
      (request) => ({ body: request.body, query: request.query, on: request.body.on }),
    )
    typed.delete('/things', { schema: { body: OptionalBody({ on: BoolField() }) } }, (request) => ({
      on: request.body?.on ?? null,
    }))
    typed.post(
      '/oauth',
      { schema: { body: ThingBody }, config: { oauthErrors: true } },
      (request) => request.body,
    )
    done()
  })
  return app
}

describe('route schemas', () => {
  let app: FastifyInstance
  beforeAll(async () => {
    app = buildTestServer()
    await app.ready()
  })
  afterAll(async () => {
    await app.close()
  })

  function post(payload: string, url = `/things/${ID}`, headers: Record<string, string> = {}) {
    return app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', ...headers },
      payload,
    })
  }

  it.each([
    ['{"name":5}', 'json: cannot unmarshal number into field name of type string'],
    ['{"name":{"a":1}}', 'json: cannot unmarshal object into field name of type string'],
    ['{"on":"yes"}', 'json: cannot unmarshal string into field on of type bool'],
    ['{"on":1}', 'json: cannot unmarshal number into field on of type bool'],
    ['{"meta":[1]}', 'json: cannot unmarshal array into field meta of type object'],
    ['{"meta":"x"}', 'json: cannot unmarshal string into field meta of type object'],
    ['[1,2]', 'cannot unmarshal array into an object'],
    ['"text"', 'cannot unmarshal string into an object'],
    ['42', 'cannot unmarshal number into an object'],
    ['true', 'cannot unmarshal boolean into an object'],
    ['', 'unexpected end of JSON input'],
  ])('answers the body %s with 400 bad_json as Go decodes it', async (payload, detail) => {
    const res = await post(payload)
    expect(res.statusCode).toBe(400)
    expect(res.json()).toEqual({
      code: 400,
      error_code: 'bad_json',
      msg: `Could not parse request body as JSON: ${detail}`,
    })
    expect(res.headers['x-sb-error-code']).toBe('bad_json')
  })

  it('uses the 2024-01-01 shape when asked', async () => {
    const res = await post('{"name":5}', `/things/${ID}`, {
      'x-supabase-api-version': '2024-01-01',
    })
    expect(res.json()).toEqual({
      code: 'bad_json',
      message:
        'Could not parse request body as JSON: json: cannot unmarshal number into field name of type string',
    })
    expect(res.headers['x-supabase-api-version']).toBe('2024-01-01')
  })

  it("never coerces types, decodes null as Go's zero value, ignores unknown fields and reads null as {}", async () => {
    const res = await post('{"name":null,"on":null,"meta":null,"extra":[1],"__proto__":{"x":1}}')
    expect(res.statusCode).toBe(200)
    const body = res.json<{ body: Record<string, unknown> }>().body
    expect(body).toMatchObject({ name: '', extra: [1] })
    expect(Object.keys(body)).not.toContain('on')
    expect(Object.keys(body)).not.toContain('meta')
    // A pointer field (`*string`) keeps absent apart from '': a new password, for one.
    expect((await post('{"secret":null}')).json()).toEqual({ body: { name: '' }, query: {} })
    expect((await post('{"secret":""}')).json()).toEqual({
      body: { name: '', secret: '' },
      query: {},
    })
    // Absent fields: a string is '' (its default), a bool or an object stays absent.
    expect((await post('{}')).json()).toEqual({ body: { name: '' }, query: {} })
    expect((await post('{"name":"n","meta":{"a":1}}')).json()).toMatchObject({
      body: { name: 'n', meta: { a: 1 } },
    })
    expect(({} as Record<string, unknown>).x).toBeUndefined()
    expect((await post('null')).statusCode).toBe(200)
    expect((await post('{"on":true}')).json()).toMatchObject({ on: true })
  })

  it('reads bool fields of form bodies from "true" and "false"', async () => {
    const res = await app.inject({
      method: 'POST',
      url: `/things/${ID}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'name=x&on=false',
    })
    expect(res.json()).toMatchObject({ body: { name: 'x', on: false }, on: false })
    const wrong = await app.inject({
      method: 'POST',
      url: `/things/${ID}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'meta=x',
    })
    expect(wrong.json()).toMatchObject({
      msg: 'Could not parse request body as JSON: json: cannot unmarshal string into field meta of type object',
    })
  })

  it('answers query-string failures with 400 validation_failed and the parameter text', async () => {
    expect((await post('{}', `/things/${ID}?mode=c`)).json()).toEqual({
      code: 400,
      error_code: 'validation_failed',
      msg: 'Unsupported mode "c"',
    })
    expect((await post('{}', `/things/${ID}?sort=y%20z`)).json()).toEqual({
      code: 400,
      error_code: 'validation_failed',
      msg: 'Bad Sort Parameters: y z',
    })
  })

  it('keeps the first value of a repeated query parameter', async () => {
    const res = await post('{}', `/things/${ID}?mode=a&mode=c`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ query: { mode: 'a' } })
  })

  it('answers path-parameter failures with 404 validation_failed', async () => {
    expect((await post('{}', '/things/not-a-uuid')).json()).toEqual({
      code: 404,
      error_code: 'validation_failed',
      msg: 'id must be an UUID',
    })
  })

  it('checks path parameters before the body', async () => {
    expect((await post('[1]', '/things/nope')).statusCode).toBe(404)
  })

  it('accepts an optional body that is missing, and judges one that is there', async () => {
    const none = await app.inject({ method: 'DELETE', url: '/things' })
    expect(none.json()).toEqual({ on: null })
    const given = await app.inject({ method: 'DELETE', url: '/things', payload: { on: true } })
    expect(given.json()).toEqual({ on: true })
    const wrong = await app.inject({ method: 'DELETE', url: '/things', payload: [1] })
    expect(wrong.json()).toMatchObject({ error_code: 'bad_json' })
  })

  it('answers form-encoded requests of an oauthErrors route in the RFC 6749 shape', async () => {
    const form = await app.inject({
      method: 'POST',
      url: '/oauth',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'meta=x',
    })
    expect(form.statusCode).toBe(400)
    expect(form.headers['cache-control']).toBe('no-store')
    expect(form.json()).toEqual({
      error: 'invalid_request',
      error_description:
        'Could not parse request body as JSON: json: cannot unmarshal string into field meta of type object',
    })
    const json = await post('{"meta":"x"}', '/oauth')
    expect(json.json()).toMatchObject({ code: 400, error_code: 'bad_json' })
  })
})

describe('schemaError', () => {
  it('falls back to the validator message for a parameter without errorMessage', () => {
    const error = schemaError('querystring', [
      { keyword: 'pattern', instancePath: '/q', data: 'x', message: 'must match pattern "^y$"' },
    ])
    expect(error).toMatchObject({
      code: 'validation_failed',
      message: 'querystring/q must match pattern "^y$"',
    })
  })
})

describe('parseQueryString', () => {
  it('keeps the first value of a repeated parameter and decodes as upstream', () => {
    expect({ ...parseQueryString('a=1&a=2&b=&c&e=x+y%21') }).toEqual({
      a: '1',
      b: '',
      c: '',
      e: 'x y!',
    })
    expect({ ...parseQueryString('') }).toEqual({})
  })
})
