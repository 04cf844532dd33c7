import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** PEM material made by {@link createTestCertificates}. */
export interface TestCertificates {
  /** The self-signed CA certificate that issued the other two. */
  readonly ca: string
  /** Server certificate (SAN `IP:127.0.0.1`, `DNS:localhost`; extendedKeyUsage serverAuth). */
  readonly serverCert: string
  readonly serverKey: string
  /**
   * Client certificate (subject CN = `clientCN`, subjectAltName `clientSan` when given;
   * extendedKeyUsage clientAuth).
   */
  readonly clientCert: string
  readonly clientKey: string
}

/** Options of {@link createTestCertificates}. */
export interface TestCertificatesOptions {
  /** Common name of the client certificate. @default 'test-client' */
  readonly clientCN?: string
  /** subjectAltName of the client certificate, in openssl's syntax (`DNS:a,DNS:b`). @default none */
  readonly clientSan?: string
}

/**
 * Creates a throw-away CA, a server certificate for 127.0.0.1/localhost and a client certificate
 * (EC P-256, valid one day) with the `openssl` CLI, for TLS and mutual-TLS tests. Nothing is left
 * on disk.
 *
 * @throws {Error} When `openssl` is missing or fails.
 */
export function createTestCertificates(options: TestCertificatesOptions = {}): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-certs-'))
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  }
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  const days = ['-days', '1']
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
      ...days,
    )
    const issue = (name: string, cn: string, extensions: string): void => {
      writeFileSync(join(dir, `${name}.ext`), extensions)
      openssl('req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`)
      const ca = ['-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial']
      openssl(
        'x509',
        '-req',
        '-in',
        `${name}.csr`,
        ...ca,
        '-out',
        `${name}.crt`,
        ...days,
        '-extfile',
        `${name}.ext`,
      )
    }
    issue(
      'server',
      'localhost',
      'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
    )
    const clientSan = options.clientSan === undefined ? '' : `subjectAltName=${options.clientSan}\n`
    issue('client', options.clientCN ?? 'test-client', `${clientSan}extendedKeyUsage=clientAuth\n`)
    const read = (file: string): string => readFileSync(join(dir, file), 'utf8')
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
