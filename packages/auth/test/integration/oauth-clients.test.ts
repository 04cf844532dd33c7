import { GoTrueAdminApi } from '@supabase/auth-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '@gatehouse/auth'
import { startTestServer, type TestServer } from '../helpers.js'

/** The OAuth server's client registry, through auth-js `admin.oauth.*` and raw requests. */
describe('OAuth clients (admin API and dynamic registration)', () => {
  let server: TestServer
  let admin: GoTrueAdminApi

  beforeAll(async () => {
    server = await startTestServer(
      'oauth_clients',
      {
        AUTHSVC_OAUTH_SERVER_ENABLED: 'true',
        AUTHSVC_OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION: 'true',
        AUTHSVC_RATE_LIMIT_HEADER: 'x-client',
        AUTHSVC_RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER: '1',
      },
      systemClock,
    )
    await server.listen()
    admin = new GoTrueAdminApi({
      url: server.url,
      headers: { Authorization: `Bearer ${server.serviceKey}` },
    })
  })
  afterAll(async () => {
    await server.close()
  })

  it('creates, lists, reads, updates, regenerates and deletes a confidential client', async () => {
    const created = await admin.oauth.createClient({
      client_name: 'Notes',
      redirect_uris: ['https://notes.example/callback'],
      client_uri: 'https://notes.example',
    })
    expect(created.error).toBeNull()
    const client = created.data!
    expect(client).toMatchObject({
      client_name: 'Notes',
      client_type: 'confidential',
      token_endpoint_auth_method: 'client_secret_basic',
      registration_type: 'manual',
      redirect_uris: ['https://notes.example/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      client_uri: 'https://notes.example',
    })
    expect(client.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/)

    // The secret is stored hashed, never as given.
    const { rows } = await server.app.db.query<{ client_secret_hash: string }>(
      `SELECT client_secret_hash FROM oauth_clients WHERE id = $1`,
      [client.client_id],
    )
    expect(rows[0]!.client_secret_hash).not.toBe(client.client_secret)
    expect(rows[0]!.client_secret_hash).toHaveLength(43)

    const listed = await admin.oauth.listClients()
    expect(listed.error).toBeNull()
    expect(listed.data.clients.map((c) => c.client_id)).toContain(client.client_id)
    expect(listed.data.clients.every((c) => c.client_secret === undefined)).toBe(true)

    const read = await admin.oauth.getClient(client.client_id)
    expect(read.data).toMatchObject({ client_id: client.client_id, client_name: 'Notes' })
    expect(read.data!.client_secret).toBeUndefined()

    const updated = await admin.oauth.updateClient(client.client_id, {
      client_name: 'Notes 2',
      redirect_uris: ['https://notes.example/cb', 'http://127.0.0.1/cb'],
      token_endpoint_auth_method: 'client_secret_post',
    })
    expect(updated.error).toBeNull()
    expect(updated.data).toMatchObject({
      client_name: 'Notes 2',
      redirect_uris: ['https://notes.example/cb', 'http://127.0.0.1/cb'],
      token_endpoint_auth_method: 'client_secret_post',
    })

    const regenerated = await admin.oauth.regenerateClientSecret(client.client_id)
    expect(regenerated.error).toBeNull()
    expect(regenerated.data!.client_secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(regenerated.data!.client_secret).not.toBe(client.client_secret)

    const deleted = await admin.oauth.deleteClient(client.client_id)
    expect(deleted.error).toBeNull()
    const gone = await admin.oauth.getClient(client.client_id)
    expect(gone.error).toMatchObject({ status: 404, code: 'oauth_client_not_found' })
    const again = await admin.oauth.deleteClient(client.client_id)
    expect(again.error).toMatchObject({ status: 404, code: 'oauth_client_not_found' })
  })

  it('creates a public client without a secret, and refuses to regenerate one', async () => {
    const created = await admin.oauth.createClient({
      client_name: 'CLI',
      redirect_uris: ['http://localhost/callback', 'com.example.app://callback'],
      token_endpoint_auth_method: 'none',
    })
    expect(created.error).toBeNull()
    expect(created.data).toMatchObject({
      client_type: 'public',
      token_endpoint_auth_method: 'none',
    })
    expect(created.data!.client_secret).toBeUndefined()
    const regenerated = await admin.oauth.regenerateClientSecret(created.data!.client_id)
    expect(regenerated.error).toMatchObject({
      status: 400,
      code: 'validation_failed',
      message: 'Cannot regenerate secret for public client',
    })
    const update = await admin.oauth.updateClient(created.data!.client_id, {
      token_endpoint_auth_method: 'client_secret_basic',
    })
    expect(update.error).toMatchObject({ status: 400, code: 'validation_failed' })
    expect(update.error!.message).toContain("is not valid for client_type 'public'")
  })

  it.each([
    [{}, 'redirect_uris is required'],
    [{ redirect_uris: ['http://evil.example/cb'] }, 'HTTP scheme only allowed for localhost'],
    [{ redirect_uris: ['javascript://x/alert(1)'] }, "scheme 'javascript' is not allowed"],
    [{ redirect_uris: ['https://a.example/cb#frag'] }, 'fragment not allowed'],
    [{ redirect_uris: ['/relative'] }, 'invalid URL format'],
    [
      { redirect_uris: Array.from({ length: 11 }, (_, i) => `https://a.example/${String(i)}`) },
      'cannot exceed 10',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], grant_types: ['password'] },
      'grant_types must only contain',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], client_type: 'other' },
      "client_type must be 'public' or 'confidential'",
    ],
    [
      {
        redirect_uris: ['https://a.example/cb'],
        client_type: 'public',
        token_endpoint_auth_method: 'client_secret_post',
      },
      'is inconsistent with token_endpoint_auth_method',
    ],
    [
      { redirect_uris: ['https://a.example/cb'], logo_uri: 'not a url' },
      'logo_uri must be a valid URL',
    ],
  ])('refuses a registration %j', async (body, message) => {
    const res = await server.request('POST', '/admin/oauth/clients', {
      token: server.serviceKey,
      body,
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().error_code).toBe('validation_failed')
    expect(res.json().msg).toContain(message)
  })

  it('answers wrong JSON types, bad ids and empty updates with what to fix', async () => {
    const typed = await server.request('POST', '/admin/oauth/clients', {
      token: server.serviceKey,
      body: { redirect_uris: 'https://a.example/cb' },
    })
    expect(typed.statusCode).toBe(400)
    expect(typed.json()).toMatchObject({ error_code: 'bad_json' })
    expect(typed.json().msg).toContain('redirect_uris must be an array of strings')
    const badId = await server.request('GET', '/admin/oauth/clients/nope', {
      token: server.serviceKey,
    })
    expect(badId.statusCode).toBe(400)
    expect(badId.json().msg).toBe('invalid client_id format')
    const created = await admin.oauth.createClient({
      client_name: 'x',
      redirect_uris: ['https://x.example/cb'],
    })
    const empty = await server.request('PUT', `/admin/oauth/clients/${created.data!.client_id}`, {
      token: server.serviceKey,
      body: {},
    })
    expect(empty.statusCode).toBe(400)
    expect(empty.json().msg).toBe('No fields provided for update')
  })

  it('is for admins only', async () => {
    const res = await server.request('GET', '/admin/oauth/clients', {})
    expect(res.statusCode).toBe(401)
  })

  it('registers a client dynamically (RFC 7591), rate limited per client', async () => {
    const res = await fetch(`${server.url}/oauth/clients/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-client': 'dcr-1' },
      body: JSON.stringify({
        client_name: 'Agent',
        redirect_uris: ['http://127.0.0.1:7777/callback'],
        token_endpoint_auth_method: 'none',
      }),
    })
    expect(res.status).toBe(201)
    const body = (await res.json()) as Record<string, unknown>
    expect(body).toMatchObject({ registration_type: 'dynamic', client_type: 'public' })
    expect(body.client_secret).toBeUndefined()
    // Burst 30, then 1 per 5 minutes.
    const statuses: number[] = []
    for (let i = 0; i < 30; i++) {
      const r = await fetch(`${server.url}/oauth/clients/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-client': 'dcr-2' },
        body: JSON.stringify({ redirect_uris: ['https://x.example/cb'] }),
      })
      statuses.push(r.status)
    }
    const over = await fetch(`${server.url}/oauth/clients/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-client': 'dcr-2' },
      body: JSON.stringify({ redirect_uris: ['https://x.example/cb'] }),
    })
    expect(statuses.every((s) => s === 201)).toBe(true)
    expect(over.status).toBe(429)
    expect(((await over.json()) as { error_code: string }).error_code).toBe(
      'over_request_rate_limit',
    )
  })
})

describe('OAuth server switched off', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer('oauth_off', {})
  })
  afterAll(async () => {
    await server.close()
  })

  it('answers 404 feature_disabled, and 403 for registration while not allowed', async () => {
    const res = await server.request('GET', '/admin/oauth/clients', { token: server.serviceKey })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toMatchObject({
      error_code: 'feature_disabled',
      msg: 'OAuth server is disabled',
    })
    const register = await server.request('POST', '/oauth/clients/register', {
      body: { redirect_uris: ['https://x.example/cb'] },
    })
    expect(register.statusCode).toBe(404)
  })
})

describe('OAuth server without dynamic registration', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer('oauth_nodcr', { AUTHSVC_OAUTH_SERVER_ENABLED: 'true' })
  })
  afterAll(async () => {
    await server.close()
  })

  it('refuses registration with 403 oauth_dynamic_client_registration_disabled', async () => {
    const res = await server.request('POST', '/oauth/clients/register', {
      body: { redirect_uris: ['https://x.example/cb'] },
    })
    expect(res.statusCode).toBe(403)
    expect(res.json()).toMatchObject({
      error_code: 'oauth_dynamic_client_registration_disabled',
      msg: 'Dynamic client registration is not enabled',
    })
  })
})
