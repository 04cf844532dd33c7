import { inflateRawSync } from 'node:zlib'
import { FakeClock } from '@gatehouse/testing'
import type { GoTrueClient } from '@supabase/auth-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { findSsoProviderById, type SsoProvider } from '#internal/models/sso.js'
import {
  SAML_METADATA_REFRESH_MS,
  isSamlMetadataStale,
  parseIdpMetadata,
  parseXsDuration,
} from '#internal/services/shared/saml.js'
import { currentMetadata } from '#internal/services/sso.js'
import { signUp, startTestServer, type TestServer } from '../helpers.js'
import { authJsClient, memoryStorage } from '../support/auth-js.js'
import { hookEnv, startFakeHook, type FakeHook } from '../support/fake-hook.js'
import {
  encryptAssertion,
  formFields,
  samlPrivateKeySetting,
  startTestIdp,
  testKey,
  type TestIdp,
  type TestKey,
} from '../support/saml-idp.js'

const SITE = 'http://localhost:3000'
const ACS = 'http://127.0.0.1:9999/sso/saml/acs'
const SP_ENTITY = 'http://127.0.0.1:9999/sso/saml/metadata'

let server: TestServer
let afterUserCreated: FakeHook
let idp: TestIdp
let stranger: TestKey
let providerId: string
const clock = new FakeClock(Date.now())

beforeAll(async () => {
  afterUserCreated = await startFakeHook(clock)
  server = await startTestServer(
    'sso_saml',
    {
      ...hookEnv('AFTER_USER_CREATED', afterUserCreated.url),
      AUTHSVC_SAML_ENABLED: 'true',
      AUTHSVC_SAML_PRIVATE_KEY: samlPrivateKeySetting(),
      AUTHSVC_URI_ALLOW_LIST: `${SITE}/**`,
    },
    clock,
  )
  await server.listen()
  idp = await startTestIdp()
  stranger = await testKey('stranger')
  const metadata = await fetch(`${server.url}/sso/saml/metadata`)
  const xml = await metadata.text()
  idp.spCertificate = /X509Certificate>([^<]+)</.exec(xml)?.[1]?.replace(/\s+/g, '')
  const created = await server.request('POST', '/admin/sso/providers', {
    token: server.serviceKey,
    body: {
      type: 'saml',
      metadata_xml: idp.metadataXml(),
      domains: ['example.com'],
      attribute_mapping: {
        keys: {
          email: { name: 'email' },
          name: { names: ['displayName', 'cn'], default: 'Nobody' },
          groups: { name: 'groups', array: true },
        },
      },
    },
  })
  expect(created.statusCode).toBe(201)
  providerId = created.json().id
}, 60_000)

afterAll(async () => {
  await idp.close()
  await server.close()
  await afterUserCreated.close()
})

/** An auth-js client with in-memory storage (the PKCE verifier is kept there). */
function client(flowType: 'implicit' | 'pkce'): GoTrueClient {
  return authJsClient(server.url, {
    flowType,
    persistSession: flowType === 'pkce',
    storage: memoryStorage(),
  })
}

/** Posts a form to the ACS as the browser would; the redirect it answers. */
async function postAcs(
  fields: { SAMLResponse: string; RelayState: string },
  target: TestServer = server,
): Promise<URL> {
  const res = await fetch(`${target.url}/sso/saml/acs`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  })
  expect([302, 303]).toContain(res.status)
  return new URL(res.headers.get('location') ?? '')
}

/** Follows the IdP URL (the IdP signs the user in) and posts its form to the ACS. */
async function throughIdp(
  url: string,
): Promise<{ landing: URL; fields: ReturnType<typeof formFields> }> {
  const page = await fetch(url)
  const html = await page.text()
  expect(page.status, html).toBe(200)
  const fields = formFields(html)
  expect(fields.action).toBe(ACS)
  return { landing: await postAcs(fields), fields }
}

/** A sign-in started at `/sso`: its relay state and the AuthnRequest's ID. */
async function started(
  target: TestServer = server,
): Promise<{ relayState: string; requestId: string }> {
  const res = await target.request('POST', '/sso', {
    body: { domain: 'example.com', skip_http_redirect: true },
  })
  expect(res.statusCode).toBe(200)
  const url = new URL(res.json().url as string)
  const request = inflateRawSync(
    Buffer.from(url.searchParams.get('SAMLRequest') ?? '', 'base64'),
  ).toString('utf8')
  return {
    relayState: url.searchParams.get('RelayState') ?? '',
    requestId: /\sID="([^"]+)"/.exec(request)?.[1] ?? '',
  }
}

const b64 = (xml: string) => Buffer.from(xml).toString('base64')

describe('SAML single sign-on', () => {
  it('/settings says saml_enabled', async () => {
    const res = await server.request('GET', '/settings')
    expect(res.json().saml_enabled).toBe(true)
  })

  it('serves its metadata: entity ID, ACS, signing certificate; ?download=true as a file', async () => {
    const res = await fetch(`${server.url}/sso/saml/metadata?download=true`)
    expect(res.headers.get('content-type')).toMatch(/application\/xml/)
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="metadata.xml"')
    const xml = await res.text()
    expect(xml).toContain(`entityID="${SP_ENTITY}"`)
    expect(xml).toContain(`Location="${ACS}"`)
    expect(idp.spCertificate).toMatch(/^MII/)
  })

  it('auth-js signInWithSSO({ domain }) → IdP → ACS: a session in the fragment, an SSO user', async () => {
    idp.user = {
      nameId: 'alice-persistent-id',
      attributes: { email: ['Alice@Example.com'], displayName: ['Alice'], groups: ['a', 'b'] },
    }
    const auth = client('implicit')
    const { data, error } = await auth.signInWithSSO({
      domain: 'example.com',
      options: { redirectTo: `${SITE}/welcome` },
    })
    expect(error).toBeNull()
    expect(idp.lastRequest).toBeUndefined()
    const { landing } = await throughIdp(data?.url ?? '')
    // The IdP verified the AuthnRequest's signature with the certificate of our metadata.
    expect(idp.lastRequest).toContain(`AssertionConsumerServiceURL="${ACS}"`)
    expect(landing.origin + landing.pathname).toBe(`${SITE}/welcome`)
    const fragment = new URLSearchParams(landing.hash.slice(1))
    expect(fragment.get('token_type')).toBe('bearer')
    const accessToken = fragment.get('access_token') ?? ''
    const user = await auth.getUser(accessToken)
    expect(user.error).toBeNull()
    expect(user.data.user?.email).toBe('alice@example.com')
    expect(user.data.user?.app_metadata.provider).toBe(`sso:${providerId}`)
    const { rows } = await server.app.db.query<{ is_sso_user: boolean }>(
      `SELECT is_sso_user FROM ${server.app.db.t.users} WHERE id = $1`,
      [user.data.user?.id],
    )
    expect(rows[0]?.is_sso_user).toBe(true)
    const identity = user.data.user?.identities?.[0]
    expect(identity?.provider).toBe(`sso:${providerId}`)
    expect(identity?.identity_data?.sub).toBe('alice-persistent-id')
    expect(identity?.identity_data?.name).toBe('Alice')
    expect(identity?.identity_data?.custom_claims).toEqual({ groups: ['a', 'b'] })
    const amr = JSON.parse(
      Buffer.from(accessToken.split('.')[1] ?? '', 'base64url').toString(),
    ) as {
      amr: { method: string }[]
    }
    expect(amr.amr[0]?.method).toBe('sso/saml')
    // The SSO user a sign-in creates is told to HOOK_AFTER_USER_CREATED, as upstream's ACS does.
    const created = afterUserCreated.payloads.filter(
      (p) => (p.user as { id?: string } | undefined)?.id === user.data.user?.id,
    )
    expect(created).toHaveLength(1)
    expect((created[0]?.user as { email?: string }).email).toBe('alice@example.com')
  })

  it('the same IdP user signs in again as the same user (default claim when no attribute)', async () => {
    idp.user = { nameId: 'alice-persistent-id', attributes: { email: ['alice@example.com'] } }
    const auth = client('implicit')
    const { data } = await auth.signInWithSSO({ providerId })
    const { landing } = await throughIdp(data?.url ?? '')
    expect(landing.origin).toBe(SITE)
    const token = new URLSearchParams(landing.hash.slice(1)).get('access_token') ?? ''
    const user = await auth.getUser(token)
    expect(user.data.user?.identities).toHaveLength(1)
    expect(user.data.user?.identities?.[0]?.identity_data?.name).toBe('Nobody')
    // Signing in again creates nobody.
    const told = afterUserCreated.payloads.filter(
      (p) => (p.user as { id?: string } | undefined)?.id === user.data.user?.id,
    )
    expect(told).toHaveLength(1)
  })

  it('PKCE: ?code= at redirect_to, exchanged by auth-js for a session', async () => {
    idp.user = { nameId: 'bob-id', attributes: { email: ['bob@example.com'] } }
    const auth = client('pkce')
    const { data, error } = await auth.signInWithSSO({
      domain: 'example.com',
      options: { redirectTo: `${SITE}/pkce` },
    })
    expect(error).toBeNull()
    const { landing } = await throughIdp(data?.url ?? '')
    expect(landing.pathname).toBe('/pkce')
    const code = landing.searchParams.get('code') ?? ''
    expect(code).not.toBe('')
    const exchanged = await auth.exchangeCodeForSession(code)
    expect(exchanged.error).toBeNull()
    expect(exchanged.data.user?.email).toBe('bob@example.com')
  })

  it('an SSO user is its own account beside a password user with the same email', async () => {
    const local = await signUp(server, 'dana@example.com')
    idp.user = { nameId: 'dana-id', attributes: { email: ['dana@example.com'] } }
    const auth = client('implicit')
    const { data } = await auth.signInWithSSO({ domain: 'example.com' })
    const { landing } = await throughIdp(data?.url ?? '')
    const token = new URLSearchParams(landing.hash.slice(1)).get('access_token') ?? ''
    const sso = await auth.getUser(token)
    expect(sso.data.user?.email).toBe('dana@example.com')
    expect(sso.data.user?.id).not.toBe(local.user.id)
    const password = await auth.signInWithPassword({
      email: 'dana@example.com',
      password: 'password123',
    })
    expect(password.data.user?.id).toBe(local.user.id)
  })

  it('POST /sso without skip_http_redirect answers 303 to the IdP', async () => {
    const res = await server.request('POST', '/sso', { body: { domain: 'EXAMPLE.com' } })
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toMatch(new RegExp(`^${idp.url}/sso\\?SAMLRequest=`))
  })

  it('POST /sso refuses unknown domains and providers and bad bodies', async () => {
    const cases: [unknown, number, string, string][] = [
      [
        { domain: 'nope.test' },
        404,
        'sso_provider_not_found',
        'No SSO provider assigned for this domain',
      ],
      [
        { provider_id: '00000000-0000-4000-8000-000000000000' },
        404,
        'sso_provider_not_found',
        'No such SSO provider',
      ],
      [{}, 400, 'validation_failed', 'A provider_id or domain needs to be provided'],
      [
        { domain: 'example.com', provider_id: providerId },
        400,
        'validation_failed',
        'Only one of provider_id or domain supported',
      ],
      [
        { domain: 'example.com', code_challenge: 'x'.repeat(43) },
        400,
        'validation_failed',
        'PKCE flow requires code_challenge_method and code_challenge',
      ],
    ]
    for (const [body, status, code, msg] of cases) {
      const res = await server.request('POST', '/sso', { body })
      expect(res.statusCode, JSON.stringify(body)).toBe(status)
      expect(res.json().error_code).toBe(code)
      expect(res.json().msg).toBe(msg)
    }
  })

  describe('hostile assertions: each a 303 to SITE_URL with the error, never a session', () => {
    async function refused(
      build: (s: { relayState: string; requestId: string }) => string,
      code = 'validation_failed',
    ): Promise<URL> {
      const s = await started()
      const landing = await postAcs({ SAMLResponse: b64(build(s)), RelayState: s.relayState })
      expect(landing.origin).toBe(SITE)
      expect(landing.hash).toBe('')
      expect(landing.searchParams.get('error_code')).toBe(code)
      expect(landing.searchParams.get('error')).toBe('invalid_request')
      return landing
    }
    const base = (s: { requestId: string }) => ({
      acs: ACS,
      audience: SP_ENTITY,
      inResponseTo: s.requestId,
      nameId: 'mallory',
      attributes: { email: ['mallory@example.com'] },
    })

    it('the control: a well-formed response signs in', async () => {
      const s = await started()
      const landing = await postAcs({
        SAMLResponse: b64(idp.response(base(s))),
        RelayState: s.relayState,
      })
      expect(new URLSearchParams(landing.hash.slice(1)).get('access_token')).toBeTruthy()
    })

    it('unsigned', async () => {
      await refused((s) => idp.response({ ...base(s), signWith: null }))
    })

    it('signed by another key', async () => {
      await refused((s) => idp.response({ ...base(s), signWith: stranger }))
    })

    it('tampered after signing', async () => {
      await refused((s) => idp.response(base(s)).replace('>mallory<', '>admin<'))
    })

    it('wrapped: an unsigned assertion beside the signed one moved out of place', async () => {
      await refused((s) => {
        const signed = idp.response({ ...base(s), nameId: 'victim' })
        const assertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(signed)?.[0] ?? ''
        const evil = idp.response({ ...base(s), signWith: null, nameId: 'admin' })
        const evilAssertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(evil)?.[0] ?? ''
        return signed.replace(
          assertion,
          `<samlp:Extensions>${assertion}</samlp:Extensions>${evilAssertion}`,
        )
      })
    })

    it('two assertions', async () => {
      await refused((s) => {
        const signed = idp.response(base(s))
        const assertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(signed)?.[0] ?? ''
        return signed.replace(assertion, assertion + assertion)
      })
    })

    it('wrong audience', async () => {
      const landing = await refused((s) =>
        idp.response({ ...base(s), audience: 'https://other-sp.test' }),
      )
      expect(landing.searchParams.get('error_description')).toMatch(/audience/i)
    })

    it('wrong destination', async () => {
      const landing = await refused((s) =>
        idp.response({ ...base(s), destination: 'https://other-sp.test/acs' }),
      )
      expect(landing.searchParams.get('error_description')).toMatch(/Destination/)
    })

    it('wrong recipient', async () => {
      const landing = await refused((s) =>
        idp.response({ ...base(s), recipient: 'https://other-sp.test/acs' }),
      )
      expect(landing.searchParams.get('error_description')).toMatch(/Recipient/)
    })

    it('wrong issuer', async () => {
      await refused((s) => idp.response({ ...base(s), issuer: 'https://evil-idp.test' }))
    })

    it('expired, and not yet valid (beyond the clock skew)', async () => {
      await refused((s) =>
        idp.response({
          ...base(s),
          notBefore: Date.now() - 3_600_000,
          notOnOrAfter: Date.now() - 600_000,
        }),
      )
      await refused((s) =>
        idp.response({
          ...base(s),
          notBefore: Date.now() + 600_000,
          notOnOrAfter: Date.now() + 900_000,
        }),
      )
    })

    it('unknown InResponseTo', async () => {
      await refused((s) => idp.response({ ...base(s), inResponseTo: '_not-our-request' }))
    })

    it('replayed: again with its relay state, and with a fresh relay state', async () => {
      const s = await started()
      const response = b64(idp.response(base(s)))
      const first = await postAcs({ SAMLResponse: response, RelayState: s.relayState })
      expect(first.hash).toContain('access_token=')
      const again = await postAcs({ SAMLResponse: response, RelayState: s.relayState })
      expect(again.searchParams.get('error_code')).toBe('saml_relay_state_not_found')
      const fresh = await started()
      const replay = await postAcs({ SAMLResponse: response, RelayState: fresh.relayState })
      expect(replay.searchParams.get('error_code')).toBe('validation_failed')
      expect(replay.hash).toBe('')
    })

    it('an expired relay state', async () => {
      const s = await started()
      const before = clock.now()
      clock.advance(121_000)
      try {
        const landing = await postAcs({
          SAMLResponse: b64(idp.response(base(s))),
          RelayState: s.relayState,
        })
        expect(landing.searchParams.get('error_code')).toBe('saml_relay_state_expired')
      } finally {
        clock.set(before)
      }
    })

    it('IdP-initiated (no relay state), garbage, a missing SAMLResponse, a DOCTYPE', async () => {
      const noRelay = await postAcs({ SAMLResponse: b64('<x/>'), RelayState: '' })
      expect(noRelay.searchParams.get('error_code')).toBe('validation_failed')
      await refused(() => 'not xml at all <<<')
      await refused(
        () =>
          '<!DOCTYPE x [<!ENTITY a "b">]><samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol"/>',
      )
      const s = await started()
      const missing = await postAcs({ SAMLResponse: '', RelayState: s.relayState })
      expect(missing.searchParams.get('error_description')).toBe('SAMLResponse is missing')
    })
  })

  describe('encrypted assertions (SAML_ALLOW_ENCRYPTED_ASSERTIONS, SAML_PRIVATE_KEY_NEXT)', () => {
    let encrypting: TestServer
    let certs: { signing: string[]; encryption: string[] }

    beforeAll(async () => {
      encrypting = await startTestServer(
        'sso_saml_enc',
        {
          AUTHSVC_SAML_ENABLED: 'true',
          AUTHSVC_SAML_PRIVATE_KEY: samlPrivateKeySetting(),
          AUTHSVC_SAML_PRIVATE_KEY_NEXT: samlPrivateKeySetting(),
          AUTHSVC_SAML_ALLOW_ENCRYPTED_ASSERTIONS: 'true',
        },
        clock,
      )
      await encrypting.listen()
      const created = await encrypting.request('POST', '/admin/sso/providers', {
        token: encrypting.serviceKey,
        body: { type: 'saml', metadata_xml: idp.metadataXml(), domains: ['example.com'] },
      })
      expect(created.statusCode).toBe(201)
      const xml = await (await fetch(`${encrypting.url}/sso/saml/metadata`)).text()
      const of = (use: string) =>
        [
          ...xml.matchAll(
            new RegExp(`<KeyDescriptor use="${use}">[\\s\\S]*?X509Certificate>([^<]+)<`, 'g'),
          ),
        ].map((m) => (m[1] ?? '').replace(/\s+/g, ''))
      certs = { signing: of('signing'), encryption: of('encryption') }
    }, 60_000)

    afterAll(async () => {
      await encrypting.close()
    })

    it('announces the encryption certificate and both signing certificates', () => {
      expect(certs.encryption).toHaveLength(1)
      expect(certs.signing).toHaveLength(2)
      expect(certs.signing[0]).toBe(certs.encryption[0])
    })

    it('signs in with an assertion encrypted for the current key, and for the next key', async () => {
      for (const cert of [certs.signing[0] ?? '', certs.signing[1] ?? '']) {
        const s = await started(encrypting)
        const response = idp.response({
          acs: ACS,
          audience: SP_ENTITY,
          inResponseTo: s.requestId,
          nameId: 'carol',
          attributes: { email: ['carol@example.com'] },
        })
        const landing = await postAcs(
          { SAMLResponse: b64(await encryptAssertion(response, cert)), RelayState: s.relayState },
          encrypting,
        )
        expect(new URLSearchParams(landing.hash.slice(1)).get('access_token')).toBeTruthy()
      }
    })

    it('refuses an encrypted assertion where SAML_ALLOW_ENCRYPTED_ASSERTIONS is off', async () => {
      const s = await started()
      const response = idp.response({
        acs: ACS,
        audience: SP_ENTITY,
        inResponseTo: s.requestId,
        nameId: 'carol',
        attributes: { email: ['carol@example.com'] },
      })
      const landing = await postAcs({
        SAMLResponse: b64(await encryptAssertion(response, idp.spCertificate ?? '')),
        RelayState: s.relayState,
      })
      expect(landing.searchParams.get('error_code')).toBe('validation_failed')
      expect(landing.hash).toBe('')
    })
  })

  describe('IdP-initiated (unsolicited) responses', () => {
    const DISABLED_IDP = 'https://idp-disabled.test/metadata'

    beforeAll(async () => {
      const created = await server.request('POST', '/admin/sso/providers', {
        token: server.serviceKey,
        body: {
          type: 'saml',
          metadata_xml: idp.metadataXml().replace(idp.entityId, DISABLED_IDP),
          disabled: true,
        },
      })
      expect(created.statusCode).toBe(201)
    })

    const unsolicitedFor = (nameId: string, extra: Record<string, unknown> = {}) =>
      b64(
        idp.response({
          acs: ACS,
          audience: SP_ENTITY,
          inResponseTo: undefined,
          nameId,
          attributes: { email: [`${nameId}@example.com`] },
          ...extra,
        }),
      )

    it('signs in without a relay state (lands at SITE_URL), and at an allowed relay state URL', async () => {
      const bare = await postAcs({ SAMLResponse: unsolicitedFor('ida'), RelayState: '' })
      expect(bare.origin + bare.pathname).toBe(`${SITE}/`)
      const token = new URLSearchParams(bare.hash.slice(1)).get('access_token') ?? ''
      const me = await server.request('GET', '/user', { token })
      expect(me.statusCode).toBe(200)
      expect(me.json().email).toBe('ida@example.com')
      expect(me.json().app_metadata.provider).toBe(`sso:${providerId}`)
      const there = await postAcs({
        SAMLResponse: unsolicitedFor('ida'),
        RelayState: `${SITE}/from-idp`,
      })
      expect(there.origin + there.pathname).toBe(`${SITE}/from-idp`)
      expect(there.hash).toContain('access_token=')
    })

    it('a relay state URL outside URI_ALLOW_LIST lands at SITE_URL instead', async () => {
      const landing = await postAcs({
        SAMLResponse: unsolicitedFor('ida'),
        RelayState: 'https://evil.test/steal',
      })
      expect(landing.origin).toBe(SITE)
      expect(landing.hash).toContain('access_token=')
    })

    it('refuses a replay of the same assertion, and a solicited response posted without its relay state', async () => {
      const response = unsolicitedFor('ivan')
      const first = await postAcs({ SAMLResponse: response, RelayState: '' })
      expect(first.hash).toContain('access_token=')
      const again = await postAcs({ SAMLResponse: response, RelayState: `${SITE}/x` })
      expect(again.hash).toBe('')
      expect(again.searchParams.get('error_code')).toBe('validation_failed')
      expect(again.searchParams.get('error_description')).toMatch(/already used/)
      const s = await started()
      const solicited = idp.response({
        acs: ACS,
        audience: SP_ENTITY,
        inResponseTo: s.requestId,
        nameId: 'ivan',
        attributes: { email: ['ivan@example.com'] },
      })
      const stolen = await postAcs({ SAMLResponse: b64(solicited), RelayState: '' })
      expect(stolen.hash).toBe('')
      expect(stolen.searchParams.get('error_code')).toBe('validation_failed')
    })

    it('refuses a disabled provider, an unknown issuer, a relay state neither UUID nor URL', async () => {
      const disabled = await postAcs({
        SAMLResponse: unsolicitedFor('dora', { issuer: DISABLED_IDP }),
        RelayState: '',
      })
      expect(disabled.searchParams.get('error_code')).toBe('sso_provider_disabled')
      expect(disabled.hash).toBe('')
      const unknown = await postAcs({
        SAMLResponse: unsolicitedFor('dora', { issuer: 'https://nobody.test/metadata' }),
        RelayState: '',
      })
      expect(unknown.searchParams.get('error_code')).toBe('saml_idp_not_found')
      const odd = await postAcs({ SAMLResponse: unsolicitedFor('dora'), RelayState: 'not a url' })
      expect(odd.searchParams.get('error_description')).toBe(
        'SAML RelayState is not a valid UUID or URL',
      )
      const notBase64 = await postAcs({ SAMLResponse: '<samlp:Response/>', RelayState: '' })
      expect(notBase64.searchParams.get('error_description')).toBe(
        'SAMLResponse is not a valid Base64 string',
      )
    })

    it('keeps every other check: signature, audience, recipient, time window', async () => {
      for (const extra of [
        { signWith: stranger },
        { signWith: null },
        { audience: 'https://other-sp.test' },
        { recipient: 'https://other-sp.test/acs' },
        { destination: 'https://other-sp.test/acs' },
        { notBefore: Date.now() - 3_600_000, notOnOrAfter: Date.now() - 600_000 },
      ]) {
        const landing = await postAcs({
          SAMLResponse: unsolicitedFor('eve', extra),
          RelayState: '',
        })
        expect(landing.searchParams.get('error_code'), JSON.stringify(extra)).toBe(
          'validation_failed',
        )
        expect(landing.hash).toBe('')
      }
    })
  })

  describe('times by the injected clock', () => {
    it('refuses an assertion valid by the real clock but expired by the injected one', async () => {
      const before = clock.now()
      clock.advance(600_000)
      try {
        const s = await started()
        const landing = await postAcs({
          SAMLResponse: b64(
            idp.response({
              acs: ACS,
              audience: SP_ENTITY,
              inResponseTo: s.requestId,
              nameId: 'tim',
              attributes: { email: ['tim@example.com'] },
            }),
          ),
          RelayState: s.relayState,
        })
        expect(landing.hash).toBe('')
        expect(landing.searchParams.get('error_code')).toBe('validation_failed')
        expect(landing.searchParams.get('error_description')).toMatch(/too old|expired/)
      } finally {
        clock.set(before)
      }
    })

    it('accepts an assertion valid by the injected clock though expired by the real one', async () => {
      const before = clock.now()
      clock.set(before - 7 * 86_400_000)
      try {
        const s = await started()
        const landing = await postAcs({
          SAMLResponse: b64(
            idp.response({
              acs: ACS,
              audience: SP_ENTITY,
              inResponseTo: s.requestId,
              nameId: 'tim',
              attributes: { email: ['tim@example.com'] },
              issueInstant: clock.now(),
              notBefore: clock.now() - 60_000,
              notOnOrAfter: clock.now() + 300_000,
            }),
          ),
          RelayState: s.relayState,
        })
        expect(landing.searchParams.get('error_description')).toBeNull()
        expect(landing.hash).toContain('access_token=')
      } finally {
        clock.set(before)
      }
    })

    it('AuthnStatement/@SessionNotOnOrAfter is the session not_after: no refresh after it', async () => {
      const notAfter = clock.now() + 3_600_000
      const landing = await postAcs({
        SAMLResponse: b64(
          idp.response({
            acs: ACS,
            audience: SP_ENTITY,
            inResponseTo: undefined,
            nameId: 'nora',
            attributes: { email: ['nora@example.com'] },
            sessionNotOnOrAfter: notAfter,
          }),
        ),
        RelayState: '',
      })
      const fragment = new URLSearchParams(landing.hash.slice(1))
      const claims = JSON.parse(
        Buffer.from(
          (fragment.get('access_token') ?? '').split('.')[1] ?? '',
          'base64url',
        ).toString(),
      ) as { session_id: string }
      const { rows } = await server.app.db.query<{ not_after: Date | null }>(
        `SELECT not_after FROM ${server.app.db.t.sessions} WHERE id = $1`,
        [claims.session_id],
      )
      expect(rows[0]?.not_after?.getTime()).toBe(notAfter)
      const refresh = (token: string) =>
        server.request('POST', '/token?grant_type=refresh_token', {
          body: { refresh_token: token },
        })
      const early = await refresh(fragment.get('refresh_token') ?? '')
      expect(early.statusCode).toBe(200)
      const before = clock.now()
      clock.advance(3_600_001)
      try {
        const late = await refresh(early.json().refresh_token)
        expect(late.statusCode).toBe(400)
        expect(late.json().error_code).toBe('session_expired')
      } finally {
        clock.set(before)
      }
    })
  })

  describe('metadata_url: metadata fetched again when stale', () => {
    const URL_IDP = 'https://idp-by-url.test/metadata'
    const HOUR = 3_600_000
    const warnings: string[] = []
    const log = {
      warn: (_details: Record<string, unknown>, message: string) => warnings.push(message),
    }
    let urlProviderId: string

    /** A provider registered by metadata_url (set in the database: the fetch needs HTTPS). */
    async function urlProvider(metadataXml: string): Promise<SsoProvider> {
      await server.app.db.query(
        `UPDATE ${server.app.db.t.samlProviders}
         SET metadata_xml = $2, metadata_url = 'https://127.0.0.1:1/metadata', updated_at = $3
         WHERE sso_provider_id = $1`,
        [urlProviderId, metadataXml, new Date(clock.now())],
      )
      const provider = await findSsoProviderById(server.app.db, urlProviderId)
      if (provider === undefined) throw new Error('provider missing')
      return provider
    }
    const withAttribute = (attribute: string) =>
      idp.metadataXml().replace('<md:EntityDescriptor ', `<md:EntityDescriptor ${attribute} `)

    beforeAll(async () => {
      const created = await server.request('POST', '/admin/sso/providers', {
        token: server.serviceKey,
        body: { type: 'saml', metadata_xml: idp.metadataXml().replace(idp.entityId, URL_IDP) },
      })
      expect(created.statusCode).toBe(201)
      urlProviderId = created.json().id
    })
    it('reads xs:duration and the staleness rule (validUntil, cacheDuration, else 24 hours)', async () => {
      expect(parseXsDuration('PT6H')).toBe(6 * HOUR)
      expect(parseXsDuration('P1DT30M')).toBe(24 * HOUR + 1_800_000)
      expect(parseXsDuration('P1Y')).toBe(365 * 24 * HOUR)
      for (const bad of ['', 'P', 'PT', '6H', 'P-1D', 'PT0S'])
        expect(parseXsDuration(bad)).toBeUndefined()
      const t0 = Date.UTC(2026, 0, 1)
      const plain = await parseIdpMetadata(idp.metadataXml())
      expect(isSamlMetadataStale(plain, t0, t0 + SAML_METADATA_REFRESH_MS)).toBe(false)
      expect(isSamlMetadataStale(plain, t0, t0 + SAML_METADATA_REFRESH_MS + 1)).toBe(true)
      const cached = await parseIdpMetadata(withAttribute('cacheDuration="PT1H"'))
      expect(isSamlMetadataStale(cached, t0, t0 + HOUR)).toBe(false)
      expect(isSamlMetadataStale(cached, t0, t0 + HOUR + 1)).toBe(true)
      const until = await parseIdpMetadata(
        withAttribute(`validUntil="${new Date(t0 + 48 * HOUR).toISOString()}"`),
      )
      expect(isSamlMetadataStale(until, t0, t0 + 30 * HOUR)).toBe(false)
      expect(isSamlMetadataStale(until, t0, t0 + 48 * HOUR + 1)).toBe(true)
    })

    it('fetches and stores fresh metadata once stale, keeps the stored one until then and when the fetch fails', async () => {
      const xml = withAttribute('cacheDuration="PT1H"').replace(idp.entityId, URL_IDP)
      const fresh = xml.replace('PT1H', 'PT2H')
      let fetched = 0
      const fetchOk = (url: string) => {
        fetched += 1
        expect(url).toBe('https://127.0.0.1:1/metadata')
        return Promise.resolve(fresh)
      }
      const ctx = { clock, db: server.app.db }
      const before = clock.now()
      try {
        let provider = await urlProvider(xml)
        expect((await currentMetadata(ctx, provider, fetchOk, log)).cacheDurationMs).toBe(HOUR)
        expect(fetched).toBe(0)
        clock.advance(HOUR + 1)
        expect((await currentMetadata(ctx, provider, fetchOk, log)).cacheDurationMs).toBe(2 * HOUR)
        expect(fetched).toBe(1)
        provider = (await findSsoProviderById(server.app.db, urlProviderId)) ?? provider
        expect(provider.metadataXml).toBe(fresh)
        expect(provider.samlUpdatedAt.getTime()).toBe(clock.now())
        expect(
          isSamlMetadataStale(
            await parseIdpMetadata(provider.metadataXml),
            provider.samlUpdatedAt.getTime(),
            clock.now(),
          ),
        ).toBe(false)
        // Stale again; the fetch fails, or answers garbage, or another entity: the stored one serves.
        clock.advance(2 * HOUR + 1)
        warnings.length = 0
        for (const failing of [
          () => Promise.reject(new Error('connection refused')),
          () => Promise.resolve('<not-metadata/>'),
          () => Promise.resolve(fresh.replace(URL_IDP, 'https://someone-else.test/metadata')),
        ]) {
          expect((await currentMetadata(ctx, provider, failing, log)).cacheDurationMs).toBe(
            2 * HOUR,
          )
        }
        expect(warnings).toEqual(
          Array(3).fill('SAML Metadata could not be retrieved, continuing with existing metadata'),
        )
        expect((await findSsoProviderById(server.app.db, urlProviderId))?.metadataXml).toBe(fresh)
      } finally {
        clock.set(before)
      }
    })

    it('a sign-in through a stale provider whose metadata_url cannot be fetched still succeeds', async () => {
      const before = clock.now()
      await urlProvider(idp.metadataXml().replace(idp.entityId, URL_IDP))
      clock.advance(SAML_METADATA_REFRESH_MS + 1)
      try {
        const landing = await postAcs({
          SAMLResponse: b64(
            idp.response({
              acs: ACS,
              audience: SP_ENTITY,
              inResponseTo: undefined,
              issuer: URL_IDP,
              nameId: 'uma',
              attributes: { email: ['uma@example.com'] },
              issueInstant: clock.now(),
              notBefore: clock.now() - 60_000,
              notOnOrAfter: clock.now() + 300_000,
            }),
          ),
          RelayState: '',
        })
        expect(landing.searchParams.get('error_description')).toBeNull()
        expect(landing.hash).toContain('access_token=')
      } finally {
        clock.set(before)
      }
    })
  })
})
