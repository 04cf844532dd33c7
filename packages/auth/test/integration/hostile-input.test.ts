import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, startTestServer, type TestServer } from '../helpers.js'

/**
 * Hostile and malformed input to every route group: wrongly typed fields, bodies that are not
 * objects, injection attempts in parameters, prototype keys. Each is refused with upstream's
 * error (or handled as plain data), never with a 500, and never changes what it should not.
 *
 * @see issue 9 (route schemas)
 */
describe('hostile input', () => {
  let server: TestServer
  let token: string

  beforeAll(async () => {
    server = await startTestServer('hostile', { AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true' })
    token = (await signUp(server, 'victim@example.com')).access_token
  })
  afterAll(async () => {
    await server.close()
  })

  const badJson = (detail: string) => ({
    code: 400,
    error_code: 'bad_json',
    msg: `Could not parse request body as JSON: ${detail}`,
  })

  describe('POST /signup', () => {
    it.each([
      [
        { email: ['a@b.co'], password: 'secret123' },
        'json: cannot unmarshal array into field email of type string',
      ],
      [
        { email: 'a@b.co', password: 123456789 },
        'json: cannot unmarshal number into field password of type string',
      ],
      [
        { email: 'a@b.co', password: 'secret123', data: 'x' },
        'json: cannot unmarshal string into field data of type object',
      ],
      [
        { gotrue_meta_security: [] },
        'json: cannot unmarshal array into field gotrue_meta_security of type object',
      ],
      [['a@b.co'], 'cannot unmarshal array into an object'],
    ])('refuses %j with bad_json', async (body, detail) => {
      const res = await server.request('POST', '/signup', { body })
      expect(res.json()).toEqual(badJson(detail))
    })

    it('stores a "__proto__" key of data as plain metadata', async () => {
      const res = await server.request('POST', '/signup', {
        body: '{"email":"proto@example.com","password":"secret123","data":{"__proto__":{"admin":true},"role":"x"}}',
      })
      expect(res.statusCode).toBe(200)
      const metadata = res.json().user.user_metadata
      expect(Object.getPrototypeOf(metadata)).toBe(Object.prototype)
      expect((metadata as { admin?: unknown }).admin).toBeUndefined()
      expect(res.json().user.role).toBe('authenticated')
    })

    it('treats an email with SQL in it as an invalid address and creates nobody', async () => {
      const count = async () =>
        (
          await server.app.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM ${server.app.db.t.users}`,
          )
        ).rows[0]?.n
      const before = await count()
      const res = await server.request('POST', '/signup', {
        body: { email: "x'; DROP TABLE users; --@example.com", password: 'secret123' },
      })
      expect(res.json()).toMatchObject({
        error_code: 'validation_failed',
        msg: 'Unable to validate email address: invalid format',
      })
      expect(await count()).toBe(before)
    })
  })

  describe('POST /token', () => {
    it('takes the first grant_type of a repeated query parameter', async () => {
      const res = await server.request('POST', '/token?grant_type=magic&grant_type=password', {
        body: { email: 'victim@example.com', password: 'password123' },
      })
      expect(res.json()).toEqual({
        code: 400,
        error_code: 'invalid_credentials',
        msg: 'unsupported_grant_type',
      })
    })

    it.each([
      ['constructor', 'unsupported_grant_type'],
      ['__proto__', 'unsupported_grant_type'],
    ])('answers grant_type=%s as an unsupported grant', async (grant, msg) => {
      const res = await server.request('POST', `/token?grant_type=${grant}`, { body: {} })
      expect(res.json()).toMatchObject({ error_code: 'invalid_credentials', msg })
    })

    it('refuses wrongly typed credentials with bad_json, in both shapes', async () => {
      const json = await server.request('POST', '/token?grant_type=password', {
        body: { email: { $ne: '' }, password: 'x' },
      })
      expect(json.json()).toEqual(
        badJson('json: cannot unmarshal object into field email of type string'),
      )
      const form = await server.app.server.inject({
        method: 'POST',
        url: '/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload:
          'grant_type=password&username=victim%40example.com&password=x&gotrue_meta_security=1',
      })
      expect(form.statusCode).toBe(400)
      expect(form.json()).toEqual({
        error: 'invalid_request',
        error_description:
          'Could not parse request body as JSON: json: cannot unmarshal string into field gotrue_meta_security of type object',
      })
    })

    it('does not find a refresh token by a LIKE pattern', async () => {
      const res = await server.request('POST', '/token?grant_type=refresh_token', {
        body: { refresh_token: '%%%%%%%%%%%%' },
      })
      expect(res.json()).toMatchObject({ error_code: 'validation_failed' })
      const long = await server.request('POST', '/token?grant_type=refresh_token', {
        body: { refresh_token: "' OR '1'='1' --x" },
      })
      expect(long.json()).toMatchObject({ error_code: 'refresh_token_not_found' })
    })
  })

  describe('GET and PUT /user, POST /logout', () => {
    it('asks for credentials before judging the body', async () => {
      const res = await server.request('PUT', '/user', { body: [1, 2] })
      expect(res.json()).toEqual({
        code: 401,
        error_code: 'no_authorization',
        msg: 'This endpoint requires a valid Bearer token',
      })
    })

    it.each([
      [{ data: [1] }, 'json: cannot unmarshal array into field data of type object'],
      [{ password: true }, 'json: cannot unmarshal boolean into field password of type string'],
      [
        { app_metadata: 'admin' },
        'json: cannot unmarshal string into field app_metadata of type object',
      ],
    ])('refuses PUT /user %j with bad_json', async (body, detail) => {
      const res = await server.request('PUT', '/user', { token, body })
      expect(res.json()).toEqual(badJson(detail))
    })

    it('refuses a token whose sub is not a UUID and one signed with "none"', async () => {
      const [header, payload] = token.split('.')
      const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload ?? ''}.`
      const res = await server.request('GET', '/user', { token: none })
      expect(res.statusCode).toBe(403)
      expect(res.json().error_code).toBe('bad_jwt')
      const tampered = `${header ?? ''}.${Buffer.from('{"sub":"1 OR 1=1","exp":9999999999}').toString('base64url')}.x`
      expect((await server.request('GET', '/user', { token: tampered })).json().error_code).toBe(
        'bad_jwt',
      )
    })

    it.each([
      ['everything', 'Unsupported logout scope "everything"'],
      ['GLOBAL', 'Unsupported logout scope "GLOBAL"'],
      ['%22%3Cscript%3E', 'Unsupported logout scope "\\"<script>"'],
    ])('refuses logout scope %s', async (scope, msg) => {
      const res = await server.request('POST', `/logout?scope=${scope}`, { token })
      expect(res.json()).toEqual({ code: 400, error_code: 'validation_failed', msg })
    })

    it('accepts any body on logout, even one that is not an object', async () => {
      const session = await signUp(server, 'logout-body@example.com')
      const res = await server.request('POST', '/logout?scope=local', {
        token: session.access_token,
        body: [1, 2, 3],
      })
      expect(res.statusCode).toBe(204)
    })
  })

  describe('admin API and /invite', () => {
    it.each([
      ['page=0', 'Bad Pagination Parameters: page'],
      ['page=-1', 'Bad Pagination Parameters: page'],
      ['page=1.5', 'Bad Pagination Parameters: page'],
      ['per_page=abc', 'Bad Pagination Parameters: per_page'],
      ['sort=email%3B%20DROP%20TABLE%20users', 'Bad Sort Parameters: email; DROP TABLE users'],
      ['sort=id%20asc', 'Bad Sort Parameters: id asc'],
      ['sort=%20%20', 'Bad Sort Parameters:   '],
    ])('refuses the list query %s', async (query, msg) => {
      const res = await server.request('GET', `/admin/users?${query}`, { token: server.serviceKey })
      expect(res.json()).toEqual({ code: 400, error_code: 'validation_failed', msg })
    })

    it('accepts sorts upstream accepts and treats filter wildcards as text', async () => {
      for (const sort of [
        'email',
        'email%20ASC',
        'last_sign_in_at%20desc',
        '%20created_at%20asc%20',
      ]) {
        const res = await server.request('GET', `/admin/users?sort=${sort}`, {
          token: server.serviceKey,
        })
        expect(res.statusCode).toBe(200)
      }
      const wildcard = await server.request('GET', '/admin/users?filter=%25', {
        token: server.serviceKey,
      })
      expect(wildcard.headers['x-total-count']).toBe('0')
    })

    it.each([
      ["' OR 1=1 --"],
      ['..%2F..%2Fetc%2Fpasswd'],
      ['00000000-0000-0000-0000-00000000000g'],
    ])('answers the user id %s with 404 validation_failed', async (id) => {
      const res = await server.request('GET', `/admin/users/${id}`, { token: server.serviceKey })
      expect(res.json()).toEqual({
        code: 404,
        error_code: 'validation_failed',
        msg: 'user_id must be an UUID',
      })
    })

    it.each([
      [
        { email: 'x@example.com', email_confirm: 'yes' },
        'json: cannot unmarshal string into field email_confirm of type bool',
      ],
      [
        { email: 'x@example.com', user_metadata: [] },
        'json: cannot unmarshal array into field user_metadata of type object',
      ],
      [
        { email: 'x@example.com', ban_duration: 24 },
        'json: cannot unmarshal number into field ban_duration of type string',
      ],
    ])('refuses to create %j with bad_json', async (body, detail) => {
      const res = await server.request('POST', '/admin/users', { token: server.serviceKey, body })
      expect(res.json()).toEqual(badJson(detail))
    })

    it('refuses an invalid delete body and deletes nothing', async () => {
      const created = await server.request('POST', '/admin/users', {
        token: server.serviceKey,
        body: { email: 'keep-me@example.com' },
      })
      const id = created.json().id
      const res = await server.request('DELETE', `/admin/users/${id}`, {
        token: server.serviceKey,
        body: { should_soft_delete: 'maybe' },
      })
      expect(res.json()).toEqual(
        badJson('json: cannot unmarshal string into field should_soft_delete of type bool'),
      )
      const read = await server.request('GET', `/admin/users/${id}`, { token: server.serviceKey })
      expect(read.json()).toMatchObject({ email: 'keep-me@example.com' })
    })

    it('judges the admin role before the body, on every admin route', async () => {
      for (const [method, url] of [
        ['GET', '/admin/users?page=x'],
        ['POST', '/admin/users'],
        ['PUT', `/admin/users/${crypto.randomUUID()}`],
        ['DELETE', '/admin/users/nope'],
        ['POST', '/invite'],
      ] as const) {
        const res = await server.request(method, url, { token, body: [1] })
        expect(res.json(), `${method} ${url}`).toEqual({
          code: 403,
          error_code: 'not_admin',
          msg: 'User not allowed',
        })
      }
    })

    it('refuses an invite whose email is not a string', async () => {
      const res = await server.request('POST', '/invite', {
        token: server.serviceKey,
        body: { email: ['a@example.com', 'b@example.com'] },
      })
      expect(res.json()).toEqual(
        badJson('json: cannot unmarshal array into field email of type string'),
      )
    })
  })

  describe('health, settings and unknown routes', () => {
    it('answers other methods and unknown paths with 404 not_found', async () => {
      for (const [method, url] of [
        ['POST', '/health'],
        ['PUT', '/settings'],
        ['GET', '/admin'],
        ['GET', '/%2e%2e/etc/passwd'],
      ] as const) {
        const res = await server.request(method, url, { body: {} })
        expect(res.json(), `${method} ${url}`).toEqual({
          code: 404,
          error_code: 'not_found',
          msg: 'Not Found',
        })
      }
    })

    it('ignores query strings and bodies on GET /health and /settings', async () => {
      expect((await server.request('GET', '/health?x=1&x=2')).statusCode).toBe(200)
      expect((await server.request('GET', '/settings?__proto__=x')).statusCode).toBe(200)
    })
  })
})
