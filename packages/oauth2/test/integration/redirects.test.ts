import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AccessToken, Client, OAuth2Error } from '@gatehouse/oauth2'
import { createTestCertificates, type TestCertificates } from '@gatehouse/testing'
import { FakeServer } from '../support/fake-server.js'

describe('redirects from an HTTPS server', () => {
  let certs: TestCertificates
  let secure: FakeServer
  let plain: FakeServer

  beforeAll(async () => {
    certs = createTestCertificates()
    secure = await FakeServer.start({ cert: certs.serverCert, key: certs.serverKey })
    plain = await FakeServer.start()
  })

  afterAll(async () => {
    await Promise.all([secure.close(), plain.close()])
    secure.assertDone()
    // `plain` has no expectations: any request that reached it fails here.
    plain.assertDone()
  })

  it('never follows https: to http:, even for a GET without credentials', async () => {
    secure.on('GET', '/a', { status: 302, headers: { location: `${plain.url}/b` } }, 2)
    const client = new Client('id', 's', {
      site: secure.url,
      connectionOpts: { tls: { ca: certs.ca } },
    })
    try {
      const error = await new AccessToken(client, 'AT').get('/a').catch((e: unknown) => e)
      expect(error).toBeInstanceOf(OAuth2Error)
      expect(error).toMatchObject({ code: 'redirect_not_followed', response: { status: 302 } })
      expect((error as OAuth2Error).description).toContain('https')
      const response = await client.request('get', '/a', { raiseErrors: false })
      expect(response.status).toBe(302)
      expect(response.error?.code).toBe('redirect_not_followed')
    } finally {
      await client.close()
    }
  })
})
