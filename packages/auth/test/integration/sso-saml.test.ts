import { inflateRawSync } from 'node:zlib'
import { FakeClock } from '@gatehouse/testing'
import type { GoTrueClient } from '@supabase/auth-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signUp, startTestServer, type TestServer } from '../helpers.js'
import { authJsClient, memoryStorage } from '../support/auth-js.js'
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
let idp: TestIdp
let stranger: TestKey
let providerId: string
const clock = new FakeClock(Date.now())

beforeAll(async () => {
  server = await startTestServer(
    'sso_saml',
    {
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
})
