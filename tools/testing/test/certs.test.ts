import { X509Certificate } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { createTestCertificates } from '../src/index.js'

describe('createTestCertificates', () => {
  it('issues a server and a client certificate from one CA', () => {
    const certs = createTestCertificates({ clientCN: 'client-7' })
    const ca = new X509Certificate(certs.ca)
    const server = new X509Certificate(certs.serverCert)
    const client = new X509Certificate(certs.clientCert)
    expect(server.checkIssued(ca)).toBe(true)
    expect(client.checkIssued(ca)).toBe(true)
    expect(server.checkIP('127.0.0.1')).toBe('127.0.0.1')
    expect(client.subject).toContain('CN=client-7')
    expect(certs.clientKey).toContain('PRIVATE KEY')
  })

  it('puts the subject alternative names asked for in the client certificate', () => {
    const certs = createTestCertificates({ clientSan: 'DNS:envoy.mesh.internal' })
    const client = new X509Certificate(certs.clientCert)
    expect(client.subjectAltName).toBe('DNS:envoy.mesh.internal')
    expect(new X509Certificate(createTestCertificates().clientCert).subjectAltName).toBeUndefined()
  })
})
