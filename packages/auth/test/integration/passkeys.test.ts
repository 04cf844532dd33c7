/**
 * The passkey routes without a browser: the switch, the options they hand out, and every
 * refusal that needs no authenticator (the ceremonies themselves are in
 * `passkeys.browser.test.ts`).
 */
import { insertWebauthnCredential } from '#internal/models/webauthn-credential.js'
import { totpCode } from '#internal/crypto/totp.js'
import { FakeClock } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, startTestServer, type TestServer } from '../helpers.js'

const clock = new FakeClock(Date.now())
let server: TestServer
let disabled: TestServer

beforeAll(async () => {
  server = await startTestServer(
    'passkeys_api',
    {
      AUTHSVC_PASSKEY_ENABLED: 'true',
      AUTHSVC_PASSKEY_MAX_PASSKEYS_PER_USER: '2',
      AUTHSVC_WEBAUTHN_RP_ID: 'localhost',
      AUTHSVC_WEBAUTHN_RP_DISPLAY_NAME: 'Gatehouse test',
      AUTHSVC_WEBAUTHN_RP_ORIGINS: 'http://localhost:3000',
      AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true',
      AUTHSVC_MFA_WEB_AUTHN_ENROLL_ENABLED: 'true',
      AUTHSVC_MFA_WEB_AUTHN_VERIFY_ENABLED: 'true',
    },
    clock,
  )
  disabled = await startTestServer('passkeys_off')
})
afterAll(async () => {
  await server.close()
  await disabled.close()
})

/** Stores a passkey for a user as registration would (for the limits and the admin API). */
async function storePasskey(userId: string, n: number): Promise<string> {
  const created = await insertWebauthnCredential(
    server.app.db,
    {
      id: crypto.randomUUID(),
      userId,
      credentialId: new Uint8Array([n, 1, 2, 3]),
      publicKey: new Uint8Array([1]),
      attestationType: 'none',
      aaguid: '',
      signCount: 0,
      transports: ['internal'],
      backupEligible: false,
      backedUp: false,
      friendlyName: 'Passkey',
    },
    clock.now(),
  )
  return created?.id ?? ''
}

describe('passkeys off (the default)', () => {
  it('answers 404 passkey_disabled and reports passkeys_enabled false', async () => {
    const res = await disabled.request('POST', '/passkeys/authentication/options', { body: {} })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toMatchObject({
      error_code: 'passkey_disabled',
      msg: 'Passkeys are disabled',
    })
    const listed = await disabled.request('GET', '/passkeys')
    expect(listed.json()).toMatchObject({ error_code: 'passkey_disabled' })
    expect((await disabled.request('GET', '/settings')).json()).toMatchObject({
      passkeys_enabled: false,
    })
  })
})

describe('passkey routes', () => {
  it('reports passkeys_enabled', async () => {
    expect((await server.request('GET', '/settings')).json()).toMatchObject({
      passkeys_enabled: true,
    })
  })

  it('hands out discoverable sign-in options that require user verification', async () => {
    const res = await server.request('POST', '/passkeys/authentication/options', { body: {} })
    expect(res.statusCode).toBe(200)
    const body = JSON.parse(res.body) as {
      challenge_id: string
      expires_at: number
      options: { challenge: string; rpId: string; userVerification: string; allowCredentials?: [] }
    }
    expect(body.challenge_id).toMatch(/^[0-9a-f-]{36}$/)
    expect(body.expires_at).toBe(Math.floor((clock.now() + 300_000) / 1000))
    expect(body.options).toMatchObject({ rpId: 'localhost', userVerification: 'required' })
    expect(body.options.allowCredentials ?? []).toEqual([])
    expect(Buffer.from(body.options.challenge, 'base64url')).toHaveLength(32)
  })

  it('hands out registration options for a resident key, excluding the user’s passkeys', async () => {
    const { access_token, user } = await signUp(server, 'register-options@example.com')
    const existing = await storePasskey(user.id, 1)
    expect(existing).not.toBe('')
    const res = await server.request('POST', '/passkeys/registration/options', {
      token: access_token,
      body: {},
    })
    expect(res.statusCode).toBe(200)
    const { options } = JSON.parse(res.body) as {
      options: {
        rp: { id: string; name: string }
        user: { id: string; name: string }
        authenticatorSelection: { residentKey: string; userVerification: string }
        excludeCredentials: { id: string }[]
        attestation: string
      }
    }
    expect(options.rp).toEqual({ id: 'localhost', name: 'Gatehouse test' })
    expect(options.user.name).toBe('register-options@example.com')
    expect(Buffer.from(options.user.id, 'base64url').toString()).toBe(user.id)
    expect(options.authenticatorSelection).toMatchObject({
      residentKey: 'required',
      userVerification: 'required',
    })
    expect(options.attestation).toBe('none')
    expect(options.excludeCredentials.map((c) => c.id)).toEqual([
      Buffer.from([1, 1, 2, 3]).toString('base64url'),
    ])
  })

  it('refuses registration without a session, to anonymous users, and past the limit', async () => {
    const none = await server.request('POST', '/passkeys/registration/options', { body: {} })
    expect(none.statusCode).toBe(401)

    const anonymous = await server.request('POST', '/signup', { body: {} })
    const anon = await server.request('POST', '/passkeys/registration/options', {
      token: anonymous.json().access_token,
      body: {},
    })
    expect(anon.statusCode).toBe(403)
    expect(anon.json()).toMatchObject({ error_code: 'no_authorization' })

    const { access_token, user } = await signUp(server, 'full@example.com')
    await storePasskey(user.id, 2)
    await storePasskey(user.id, 3)
    const full = await server.request('POST', '/passkeys/registration/options', {
      token: access_token,
      body: {},
    })
    expect(full.statusCode).toBe(422)
    expect(full.json()).toMatchObject({
      error_code: 'too_many_passkeys',
      msg: 'Maximum number of passkeys reached',
    })
  })

  it('needs aal2 to manage passkeys once a factor is verified', async () => {
    const { access_token, user } = await signUp(server, 'mfa-user@example.com')
    const enrolled = await server.request('POST', '/factors', {
      token: access_token,
      body: { factor_type: 'totp' },
    })
    const factor = enrolled.json() as unknown as { id: string; totp: { secret: string } }
    const challenge = await server.request('POST', `/factors/${factor.id}/challenge`, {
      token: access_token,
    })
    const verified = await server.request('POST', `/factors/${factor.id}/verify`, {
      token: access_token,
      body: {
        challenge_id: (challenge.json() as unknown as { id: string }).id,
        code: totpCode(factor.totp.secret, clock.now()),
      },
    })
    expect(verified.statusCode).toBe(200)
    const aal1 = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'mfa-user@example.com', password: 'password123' },
    })
    const token = aal1.json().access_token
    const refused = await server.request('POST', '/passkeys/registration/options', {
      token,
      body: {},
    })
    expect(refused.statusCode).toBe(403)
    expect(refused.json()).toMatchObject({
      error_code: 'insufficient_aal',
      msg: 'AAL2 session is required to manage passkeys when MFA is enabled',
    })
    const passkeyId = await storePasskey(user.id, 4)
    const del = await server.request('DELETE', `/passkeys/${passkeyId}`, { token })
    expect(del.statusCode).toBe(403)
    const allowed = await server.request('POST', '/passkeys/registration/options', {
      token: verified.json().access_token,
      body: {},
    })
    expect(allowed.statusCode).toBe(200)
  })

  it('checks a verify request’s fields and uses a challenge once', async () => {
    const verify = (body: unknown) =>
      server.request('POST', '/passkeys/authentication/verify', { body })
    const cases: [unknown, string][] = [
      [{ credential: {} }, 'challenge_id is required'],
      [{ challenge_id: crypto.randomUUID() }, 'credential is required'],
      [{ challenge_id: 'nope', credential: {} }, 'challenge_id must be a valid UUID'],
    ]
    for (const [body, msg] of cases) {
      const res = await verify(body)
      expect(res.statusCode).toBe(400)
      expect(res.json()).toMatchObject({ error_code: 'validation_failed', msg })
    }
    const unknown = await verify({ challenge_id: crypto.randomUUID(), credential: {} })
    expect(unknown.json()).toMatchObject({ error_code: 'webauthn_challenge_not_found' })
    const typed = await verify({ challenge_id: 'x', credential: 'not an object' })
    expect(typed.statusCode).toBe(400)
    expect(typed.json()).toMatchObject({ error_code: 'bad_json' })

    const options = await server.request('POST', '/passkeys/authentication/options', { body: {} })
    const challenge_id = (JSON.parse(options.body) as { challenge_id: string }).challenge_id
    const malformed = await verify({ challenge_id, credential: { id: 'x' } })
    expect(malformed.statusCode).toBe(400)
    expect(malformed.json()).toMatchObject({
      error_code: 'webauthn_verification_failed',
      msg: 'Invalid credential response',
    })
    const again = await verify({ challenge_id, credential: { id: 'x' } })
    expect(again.json()).toMatchObject({
      error_code: 'webauthn_challenge_not_found',
      msg: 'Challenge not found or already used',
    })
  })

  it('binds a registration challenge to its user', async () => {
    const alice = await signUp(server, 'alice-passkey@example.com')
    const bob = await signUp(server, 'bob-passkey@example.com')
    const options = await server.request('POST', '/passkeys/registration/options', {
      token: alice.access_token,
      body: {},
    })
    const challenge_id = (JSON.parse(options.body) as { challenge_id: string }).challenge_id
    const stolen = await server.request('POST', '/passkeys/registration/verify', {
      token: bob.access_token,
      body: { challenge_id, credential: { id: 'x' } },
    })
    expect(stolen.statusCode).toBe(400)
    expect(stolen.json()).toMatchObject({ error_code: 'webauthn_challenge_not_found' })
  })

  it('renames and deletes only the caller’s passkeys, with upstream’s refusals', async () => {
    const owner = await signUp(server, 'owner-passkey@example.com')
    const other = await signUp(server, 'other-passkey@example.com')
    const id = await storePasskey(owner.user.id, 5)
    const patch = (passkeyId: string, body: unknown, token = owner.access_token) =>
      server.app.server.inject({
        method: 'PATCH',
        url: `/passkeys/${passkeyId}`,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      })
    expect((await patch('not-a-uuid', { friendly_name: 'x' })).statusCode).toBe(404)
    const empty = await patch(id, { friendly_name: '' })
    expect(empty.statusCode).toBe(400)
    expect(empty.json()).toMatchObject({ msg: 'friendly_name is required' })
    const long = await patch(id, { friendly_name: 'x'.repeat(121) })
    expect(long.json()).toMatchObject({ msg: 'friendly_name must be 120 characters or less' })
    const foreign = await patch(id, { friendly_name: 'mine now' }, other.access_token)
    expect(foreign.statusCode).toBe(404)
    expect(foreign.json()).toMatchObject({
      error_code: 'validation_failed',
      msg: 'Passkey not found',
    })
    const renamed = await patch(id, { friendly_name: 'Work key' })
    expect(renamed.json()).toMatchObject({ id, friendly_name: 'Work key' })

    const stolen = await server.request('DELETE', `/passkeys/${id}`, { token: other.access_token })
    expect(stolen.statusCode).toBe(404)
    const deleted = await server.request('DELETE', `/passkeys/${id}`, { token: owner.access_token })
    expect(deleted.statusCode).toBe(204)
    expect(deleted.body).toBe('')
    const listed = await server.request('GET', '/passkeys', { token: owner.access_token })
    expect(JSON.parse(listed.body)).toEqual([])
  })

  it('lets an admin list and delete a user’s passkeys', async () => {
    const { user } = await signUp(server, 'admin-listed@example.com')
    const id = await storePasskey(user.id, 6)
    const admin = { token: server.serviceKey }
    const listed = await server.request('GET', `/admin/users/${user.id}/passkeys`, admin)
    expect(JSON.parse(listed.body)).toEqual([
      { id, friendly_name: 'Passkey', created_at: expect.any(String) as string },
    ])
    const missing = await server.request(
      'GET',
      `/admin/users/${crypto.randomUUID()}/passkeys`,
      admin,
    )
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toMatchObject({ error_code: 'user_not_found' })
    const wrong = await server.request(
      'DELETE',
      `/admin/users/${user.id}/passkeys/${crypto.randomUUID()}`,
      admin,
    )
    expect(wrong.statusCode).toBe(404)
    const deleted = await server.request('DELETE', `/admin/users/${user.id}/passkeys/${id}`, admin)
    expect(deleted.statusCode).toBe(204)
    const user403 = await server.request('GET', `/admin/users/${user.id}/passkeys`, {
      token: (await signUp(server, 'not-admin@example.com')).access_token,
    })
    expect(user403.statusCode).toBe(403)
  })
})

describe('WebAuthn factors', () => {
  it('are refused while MFA_WEB_AUTHN_ENROLL_ENABLED is off', async () => {
    const { access_token } = await signUp(disabled, 'no-webauthn@example.com')
    const res = await disabled.request('POST', '/factors', {
      token: access_token,
      body: { factor_type: 'webauthn' },
    })
    expect(res.statusCode).toBe(422)
    expect(res.json()).toMatchObject({
      error_code: 'mfa_webauthn_enroll_not_enabled',
      msg: 'MFA enroll is disabled for WebAuthn',
    })
  })

  it('challenge with creation options, and count wrong answers as wrong codes', async () => {
    const { access_token, user } = await signUp(server, 'webauthn-factor@example.com')
    const enrolled = await server.request('POST', '/factors', {
      token: access_token,
      body: { factor_type: 'webauthn', friendly_name: 'Key' },
    })
    expect(enrolled.statusCode).toBe(200)
    const factor = JSON.parse(enrolled.body) as Record<string, unknown>
    expect(factor).toEqual({
      id: expect.any(String) as string,
      type: 'webauthn',
      friendly_name: 'Key',
    })
    const challenged = await server.request('POST', `/factors/${String(factor.id)}/challenge`, {
      token: access_token,
      body: { webauthn: { rpId: 'evil.example', rpOrigins: ['https://evil.example'] } },
    })
    expect(challenged.statusCode).toBe(200)
    const challenge = JSON.parse(challenged.body) as {
      id: string
      type: string
      webauthn: { type: string; credential_options: { publicKey: Record<string, unknown> } }
    }
    expect(challenge.type).toBe('webauthn')
    expect(challenge.webauthn.type).toBe('create')
    // The server's relying party, whatever the client asked for.
    expect(challenge.webauthn.credential_options.publicKey.rp).toEqual({
      id: 'localhost',
      name: 'Gatehouse test',
    })
    expect(challenge.webauthn.credential_options.publicKey.user).toMatchObject({
      name: 'webauthn-factor@example.com',
      id: Buffer.from(user.id).toString('base64url'),
    })

    const verify = (body: unknown) =>
      server.request('POST', `/factors/${String(factor.id)}/verify`, {
        token: access_token,
        body: { challenge_id: challenge.id, ...(body as object) },
      })
    const fields: [unknown, string][] = [
      [{}, 'WebAuthn config required'],
      [{ webauthn: { type: 'get' } }, 'WebAuthn type must be create or request'],
      [{ webauthn: { type: 'create' } }, 'credential_response required'],
    ]
    for (const [body, msg] of fields) {
      const res = await verify(body)
      expect(res.statusCode).toBe(400)
      expect(res.json()).toMatchObject({ error_code: 'validation_failed', msg })
    }
    for (const type of ['request', 'create']) {
      const wrong = await verify({ webauthn: { type, credential_response: { id: 'x' } } })
      expect(wrong.statusCode).toBe(422)
      expect(wrong.json()).toMatchObject({
        error_code: 'mfa_verification_failed',
        msg: 'Invalid WebAuthn credential_response',
      })
    }
    const { rows } = await server.app.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${server.app.db.t.failedAttempts}`,
    )
    expect(Number(rows[0]?.n)).toBeGreaterThan(0)
  })
})
