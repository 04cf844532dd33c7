import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { createTestCertificates } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  AdminUrlFetchError,
  fetchAdminUrl,
  isNonPublicAddress,
} from '#internal/security/admin-url-fetch.js'

const certs = createTestCertificates()
let server: Server
let base: string
/** Requests the server holds without answering (the timeout case), released in afterAll. */
const held: (() => void)[] = []

beforeAll(async () => {
  server = createServer({ cert: certs.serverCert, key: certs.serverKey }, (req, res) => {
    if (req.url === '/ok') res.writeHead(200).end('<EntityDescriptor/>')
    else if (req.url === '/big') res.writeHead(200).end('x'.repeat(5000))
    else if (req.url === '/hang') held.push(() => res.end())
    else res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `https://localhost:${String((server.address() as AddressInfo).port)}`
})

afterAll(async () => {
  for (const release of held) release()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const options = { allowPrivate: true, timeoutMs: 2000, maxBytes: 1000, ca: certs.ca }

describe('fetchAdminUrl', () => {
  it('classifies addresses', () => {
    for (const a of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fd00::1',
      'fe80::1',
      '::ffff:127.0.0.1',
      '224.0.0.1',
    ]) {
      expect(isNonPublicAddress(a), a).toBe(true)
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(isNonPublicAddress(a), a).toBe(false)
    }
  })

  it('fetches with SECURITY_ALLOW_PRIVATE_URLS; refuses the same host without it (the resolved address)', async () => {
    await expect(fetchAdminUrl(`${base}/ok`, options)).resolves.toBe('<EntityDescriptor/>')
    await expect(fetchAdminUrl(`${base}/ok`, { ...options, allowPrivate: false })).rejects.toThrow(
      /resolves to a non-public address \((127\.0\.0\.1|::1)\)/,
    )
  })

  it('refuses a status other than 200, a body over the cap, plain HTTP, and past the deadline', async () => {
    await expect(fetchAdminUrl(`${base}/missing`, options)).rejects.toThrow(/HTTP 404/)
    await expect(fetchAdminUrl(`${base}/big`, options)).rejects.toThrow(/more than 1000 bytes/)
    await expect(fetchAdminUrl('http://example.com/m', options)).rejects.toThrow(/not a HTTPS URL/)
    // The time itself is the subject: the server holds the request past the 200 ms deadline.
    const late = fetchAdminUrl(`${base}/hang`, { ...options, timeoutMs: 200 })
    await expect(late).rejects.toBeInstanceOf(AdminUrlFetchError)
    await expect(late).rejects.toThrow(/timed out/)
  })
})
