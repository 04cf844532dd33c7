import type { PeerCertificate } from 'node:tls'
import { describe, expect, it } from 'vitest'
import { clientSanProblem } from './tls.js'

/** A client certificate as `getPeerCertificate()` describes it (only what the check reads). */
function cert(subjectaltname: string | undefined, cn = 'client'): PeerCertificate {
  return { subject: { CN: cn }, subjectaltname } as unknown as PeerCertificate
}

const REFUSED =
  'client certificate does not carry the subject alternative name DNS:envoy.mesh.internal (GRPC_CLIENT_TLS_SAN)'

describe('clientSanProblem', () => {
  it('accepts a certificate with the DNS name, or a wildcard covering it', () => {
    expect(
      clientSanProblem(cert('DNS:other, DNS:envoy.mesh.internal'), 'envoy.mesh.internal'),
    ).toBe(undefined)
    expect(clientSanProblem(cert('DNS:*.mesh.internal'), 'envoy.mesh.internal')).toBe(undefined)
  })

  it('refuses other names, IP-only names, the common name alone, and no certificate', () => {
    expect(clientSanProblem(cert('DNS:envoy.mesh.external'), 'envoy.mesh.internal')).toBe(REFUSED)
    expect(clientSanProblem(cert('IP Address:10.0.0.1'), 'envoy.mesh.internal')).toBe(REFUSED)
    expect(clientSanProblem(cert(undefined, 'envoy.mesh.internal'), 'envoy.mesh.internal')).toBe(
      REFUSED,
    )
    expect(clientSanProblem(undefined, 'envoy.mesh.internal')).toBe(REFUSED)
  })
})
