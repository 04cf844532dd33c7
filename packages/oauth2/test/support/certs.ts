/**
 * Throw-away X.509 certificates for mTLS tests, made with the `openssl` CLI: a CA, a server
 * certificate for 127.0.0.1 and a client certificate, all EC P-256, valid for one day.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface TestCertificates {
  ca: string
  serverCert: string
  serverKey: string
  clientCert: string
  clientKey: string
}

export function generateCertificates(clientCN = 'client-1'): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'oauth2-certs-'))
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  try {
    openssl(
      'req',
      '-x509',
      ...ec,
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-subj',
      '/CN=test-ca',
      '-days',
      '1',
    )
    const issue = (name: string, cn: string, ext: string) => {
      writeFileSync(join(dir, `${name}.ext`), ext)
      openssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`)
      openssl(
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-out',
        `${name}.crt`,
        '-days',
        '1',
        '-extfile',
        `${name}.ext`,
      )
    }
    issue('server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n')
    issue('client', clientCN, 'extendedKeyUsage=clientAuth\n')
    const read = (file: string) => readFileSync(join(dir, file), 'utf8')
    return {
      ca: read('ca.crt'),
      serverCert: read('server.crt'),
      serverKey: read('server.key'),
      clientCert: read('client.crt'),
      clientKey: read('client.key'),
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
