import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Client, ConnectionError } from '@gatehouse/oauth2'
import { createTestCertificates, type TestCertificates } from '@gatehouse/testing'
import { FakeServer } from '../support/fake-server.js'

describe('tls_client_auth (RFC 8705) against an HTTPS server that requires a client certificate', () => {
  let certs: TestCertificates
  let server: FakeServer

  beforeAll(async () => {
    certs = createTestCertificates({ clientCN: 'client-1' })
    server = await FakeServer.start({
      cert: certs.serverCert,
      key: certs.serverKey,
      ca: certs.ca,
      requestCert: true,
      rejectUnauthorized: true,
    })
  })

  afterAll(async () => {
    await server.close()
    server.assertDone()
  })

  it('authenticates with the certificate and sends only client_id', async () => {
    server.on('POST', '/oauth/token', (req) => ({
      body: { access_token: `for-${req.peerCN ?? 'nobody'}`, token_type: 'Bearer' },
    }))
    const client = new Client('client-1', 'unused-secret', {
      site: server.url,
      authScheme: 'tls_client_auth',
      connectionOpts: { tls: { cert: certs.clientCert, key: certs.clientKey, ca: certs.ca } },
    })
    try {
      const token = await client.clientCredentials.getToken({ scope: 'api' })
      expect(token.token).toBe('for-client-1')
      expect(server.last().form).toEqual({
        client_id: 'client-1',
        grant_type: 'client_credentials',
        scope: 'api',
      })
      expect(server.last().headers.authorization).toBeUndefined()
    } finally {
      await client.close()
    }
  })

  it('fails with ConnectionError without a client certificate', async () => {
    const client = new Client('client-1', undefined, {
      site: server.url,
      authScheme: 'tls_client_auth',
      connectionOpts: { tls: { ca: certs.ca } },
    })
    try {
      await expect(client.clientCredentials.getToken()).rejects.toBeInstanceOf(ConnectionError)
    } finally {
      await client.close()
    }
  })
})
