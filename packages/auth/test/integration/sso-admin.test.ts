import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'
import { samlPrivateKeySetting, startTestIdp, type TestIdp } from '../support/saml-idp.js'

let server: TestServer
let off: TestServer
let idp: TestIdp
let other: TestIdp

beforeAll(async () => {
  server = await startTestServer('sso_admin', {
    AUTHSVC_SAML_ENABLED: 'true',
    AUTHSVC_SAML_PRIVATE_KEY: samlPrivateKeySetting(),
  })
  off = await startTestServer('sso_admin_off')
  idp = await startTestIdp('https://idp-one.test/metadata')
  other = await startTestIdp('https://idp-two.test/metadata')
}, 60_000)

afterAll(async () => {
  await idp.close()
  await other.close()
  await server.close()
  await off.close()
})

type Provider = {
  id: string
  resource_id?: string
  disabled: boolean | null
  saml: {
    entity_id: string
    metadata_xml?: string
    metadata_url?: string
    attribute_mapping: unknown
    name_id_format?: string
  }
  domains: { domain: string }[]
}

function admin(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) {
  return server.request(method, url, { token: server.serviceKey, body })
}

describe('/admin/sso/providers', () => {
  let created: Provider

  it('creates a SAML provider from metadata_xml (201), with domains, mapping and resource_id', async () => {
    const res = await admin('POST', '/admin/sso/providers', {
      type: 'saml',
      metadata_xml: idp.metadataXml(),
      domains: ['One.Example', 'one.example', 'two.example'],
      attribute_mapping: { keys: { email: { name: 'mail' } } },
      name_id_format: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      resource_id: 'acme',
    })
    expect(res.statusCode).toBe(201)
    created = res.json() as unknown as Provider
    expect(created.saml.entity_id).toBe(idp.entityId)
    expect(created.saml.metadata_xml).toBe(idp.metadataXml())
    expect(created.saml.attribute_mapping).toEqual({ keys: { email: { name: 'mail' } } })
    expect(created.saml.name_id_format).toBe(
      'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    )
    expect(created.domains.map((d) => d.domain).sort()).toEqual(['one.example', 'two.example'])
    expect(created.resource_id).toBe('acme')
    expect(created.disabled).toBeNull()
  })

  it('reads it by id and by resource_<id>; lists without the metadata XML', async () => {
    const byId = await admin('GET', `/admin/sso/providers/${created.id}`)
    expect((byId.json() as unknown as Provider).saml.entity_id).toBe(idp.entityId)
    const byResource = await admin('GET', '/admin/sso/providers/resource_acme')
    expect((byResource.json() as unknown as Provider).id).toBe(created.id)
    const list = await admin('GET', '/admin/sso/providers?resource_id_prefix=ac')
    const items = (list.json() as unknown as { items: Provider[] }).items
    expect(items.map((p) => p.id)).toEqual([created.id])
    expect(items[0]?.saml.metadata_xml).toBeUndefined()
    const none = await admin('GET', '/admin/sso/providers?resource_id=nope')
    expect((none.json() as unknown as { items: Provider[] }).items).toEqual([])
  })

  it('refuses a second provider of the same entity ID, and a taken domain', async () => {
    const again = await admin('POST', '/admin/sso/providers', {
      type: 'saml',
      metadata_xml: idp.metadataXml(),
    })
    expect(again.statusCode).toBe(422)
    expect(again.json().error_code).toBe('saml_idp_already_exists')
    expect(again.json().msg).toBe(
      `SAML Identity Provider with this EntityID (${idp.entityId}) already exists`,
    )
    const taken = await admin('POST', '/admin/sso/providers', {
      type: 'saml',
      metadata_xml: other.metadataXml(),
      domains: ['TWO.example'],
    })
    expect(taken.statusCode).toBe(400)
    expect(taken.json().error_code).toBe('sso_domain_already_exists')
  })

  it('validates the body as upstream', async () => {
    const cases: [unknown, string, string][] = [
      [
        { type: 'oidc', metadata_xml: 'x' },
        'validation_failed',
        "Only 'saml' supported for SSO provider type",
      ],
      [{ type: 'saml' }, 'validation_failed', 'Either metadata_xml or metadata_url must be set'],
      [
        { type: 'saml', metadata_xml: 'x', metadata_url: 'https://a.test' },
        'validation_failed',
        'Only one of metadata_xml or metadata_url needs to be set',
      ],
      [
        { type: 'saml', metadata_url: 'http://a.test/m' },
        'validation_failed',
        'metadata_url is not a HTTPS URL',
      ],
      [
        { type: 'saml', metadata_url: 'not a url' },
        'validation_failed',
        'metadata_url is not a valid URL',
      ],
      [
        { type: 'saml', metadata_xml: '<nope' },
        'validation_failed',
        'SAML Metadata XML is not valid XML',
      ],
      [
        {
          type: 'saml',
          metadata_xml:
            '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="x"/>',
        },
        'validation_failed',
        'SAML Metadata does not contain any IDPSSODescriptor',
      ],
      [
        { type: 'saml', metadata_xml: other.metadataXml(), name_id_format: 'weird' },
        'validation_failed',
        'name_id_format must be unspecified or one of urn:oasis:names:tc:SAML:2.0:nameid-format:persistent, urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress, urn:oasis:names:tc:SAML:2.0:nameid-format:transient, urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
      ],
      [
        { type: 'saml', metadata_xml: other.metadataXml(), domains: ['not a domain'] },
        'validation_failed',
        "Domain 'not a domain' is not a valid domain name",
      ],
      [
        {
          type: 'saml',
          metadata_xml: other.metadataXml(),
          attribute_mapping: { keys: { a: { names: 'x' } } },
        },
        'validation_failed',
        'attribute_mapping.keys.a.names must be an array of strings',
      ],
    ]
    for (const [body, code, msg] of cases) {
      const res = await admin('POST', '/admin/sso/providers', body)
      expect(res.statusCode, JSON.stringify(body)).toBe(400)
      expect(res.json().error_code).toBe(code)
      expect(res.json().msg).toBe(msg)
    }
    const badType = await admin('POST', '/admin/sso/providers', { type: 'saml', domains: 'a.test' })
    expect(badType.json().error_code).toBe('bad_json')
  })

  it('refuses a metadata_url on a non-public address unless SECURITY_ALLOW_PRIVATE_URLS', async () => {
    for (const url of [
      'https://127.0.0.1:1/metadata',
      'https://[::1]/m',
      'https://169.254.169.254/m',
      'https://localhost/m',
    ]) {
      const res = await admin('POST', '/admin/sso/providers', { type: 'saml', metadata_url: url })
      expect(res.statusCode, url).toBe(400)
      expect(res.json().error_code).toBe('saml_metadata_fetch_failed')
      expect(res.json().msg).toMatch(/non-public address .*SECURITY_ALLOW_PRIVATE_URLS/)
    }
  })

  it('updates domains, mapping, name_id_format, disabled; refuses another entity ID', async () => {
    const res = await admin('PUT', `/admin/sso/providers/${created.id}`, {
      domains: ['three.example'],
      attribute_mapping: { keys: { name: { names: ['cn'], default: 'x' } } },
      disabled: true,
    })
    expect(res.statusCode).toBe(200)
    const updated = res.json() as unknown as Provider
    expect(updated.domains).toEqual([{ domain: 'three.example' }])
    expect(updated.saml.attribute_mapping).toEqual({
      keys: { name: { names: ['cn'], default: 'x' } },
    })
    expect(updated.saml.name_id_format).toBeUndefined()
    expect(updated.disabled).toBe(true)
    const sso = await server.request('POST', '/sso', { body: { domain: 'three.example' } })
    expect(sso.statusCode).toBe(404)
    expect(sso.json().error_code).toBe('sso_provider_disabled')
    const mismatch = await admin('PUT', `/admin/sso/providers/${created.id}`, {
      metadata_xml: other.metadataXml(),
    })
    expect(mismatch.statusCode).toBe(400)
    expect(mismatch.json().error_code).toBe('saml_entity_id_mismatch')
  })

  it('deletes it; then 404 sso_provider_not_found (also for malformed ids)', async () => {
    const res = await admin('DELETE', `/admin/sso/providers/${created.id}`)
    expect(res.statusCode).toBe(200)
    expect((res.json() as unknown as Provider).id).toBe(created.id)
    for (const id of [created.id, 'not-a-uuid', 'resource_acme']) {
      const gone = await admin('GET', `/admin/sso/providers/${id}`)
      expect(gone.statusCode).toBe(404)
      expect(gone.json().error_code).toBe('sso_provider_not_found')
      expect(gone.json().msg).toBe('SSO Identity Provider not found')
    }
  })

  it('needs an admin token, and SAML_ENABLED (404 saml_provider_disabled)', async () => {
    const anonymous = await server.request('GET', '/admin/sso/providers')
    expect(anonymous.statusCode).toBe(401)
    for (const [method, url] of [
      ['GET', '/admin/sso/providers'],
      ['POST', '/sso'],
      ['GET', '/sso/saml/metadata'],
      ['POST', '/sso/saml/acs'],
    ] as const) {
      const res = await off.request(method, url, {
        token: off.serviceKey,
        body: method === 'POST' ? {} : undefined,
      })
      expect(res.statusCode, url).toBe(404)
      expect(res.json().error_code).toBe('saml_provider_disabled')
      expect(res.json().msg).toBe('SAML 2.0 is disabled')
    }
    expect((await off.request('GET', '/settings')).json().saml_enabled).toBe(false)
  })
})
