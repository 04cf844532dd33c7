/**
 * gRPC server TLS and mutual TLS on both implementations, with throw-away certificates made by
 * `openssl` at test time: calls over TLS, plaintext clients refused, client certificates checked
 * (CA and `GRPC_CLIENT_TLS_SAN`), and the certificate files reloaded for new connections while an
 * open one keeps working.
 */
import { createTestCertificates, type TestCertificates } from '@gatehouse/testing'
import * as grpc from '@grpc/grpc-js'
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildRateLimitApp } from '#internal/app.js'
import { loadSettings } from '#internal/settings/settings.js'
import type { TlsReloadResult } from '#internal/server/tls.js'
import { grpcError, startService, type Harness } from '../harness.js'
import { protoClient, type ProtoClient } from '../proto.js'

const CONFIG = `domain: tls
descriptors:
  - key: k
    rate_limit: { unit: minute, requests_per_unit: 100 }
`
const REQUEST = { domain: 'tls', descriptors: [{ entries: [{ key: 'k', value: 'v' }] }] }
const CLIENT_SAN = 'ratelimit-client'

/** Each client gets connections of its own (grpc-js would share equal channels' ones). */
const OWN_CONNECTION = { 'grpc.use_local_subchannel_pool': 1 }

let certs: TestCertificates
/** A second CA with its own server and client certificates: the rotation target, and strangers. */
let other: TestCertificates
let dir: string
const clients: ProtoClient[] = []

function tlsClient(
  address: string,
  ca: string,
  clientCert?: { cert: string; key: string },
): ProtoClient {
  const credentials = grpc.credentials.createSsl(
    Buffer.from(ca),
    clientCert === undefined ? null : Buffer.from(clientCert.key),
    clientCert === undefined ? null : Buffer.from(clientCert.cert),
  )
  // The server certificate names localhost (and 127.0.0.1, which is no TLS server name).
  const client = protoClient(address, credentials, {
    ...OWN_CONNECTION,
    'grpc.ssl_target_name_override': 'localhost',
  })
  clients.push(client)
  return client
}

function plaintextClient(address: string): ProtoClient {
  const client = protoClient(address, grpc.credentials.createInsecure(), OWN_CONNECTION)
  clients.push(client)
  return client
}

/** Replaces a file at once (a new file renamed over it, as deployment tools do). */
function replaceFile(path: string, content: string): void {
  writeFileSync(`${path}.new`, content)
  renameSync(`${path}.new`, path)
}

beforeAll(() => {
  certs = createTestCertificates({ clientSan: `DNS:${CLIENT_SAN}` })
  other = createTestCertificates({ clientSan: `DNS:${CLIENT_SAN}` })
  dir = mkdtempSync(join(tmpdir(), 'ratelimit-tls-'))
  writeFileSync(join(dir, 'client-ca.crt'), certs.ca)
})
afterAll(() => {
  for (const client of clients) client.close()
  rmSync(dir, { recursive: true, force: true })
})

describe.each(['native', 'grpc-js'])('gRPC TLS on the %s server', (implementation) => {
  let h: Harness
  let certFile: string
  let keyFile: string

  beforeAll(async () => {
    certFile = join(dir, `${implementation}-server.crt`)
    keyFile = join(dir, `${implementation}-server.key`)
    writeFileSync(certFile, certs.serverCert)
    writeFileSync(keyFile, certs.serverKey)
    h = await startService({
      files: { 'tls.yaml': CONFIG },
      env: {
        GRPC_SERVER_IMPLEMENTATION: implementation,
        GRPC_SERVER_USE_TLS: 'true',
        GRPC_SERVER_TLS_CERT: certFile,
        GRPC_SERVER_TLS_KEY: keyFile,
      },
    })
  })
  afterAll(async () => {
    await h.close()
  })

  it('answers a call over TLS', async () => {
    const response = await tlsClient(h.grpcAddress, certs.ca).shouldRateLimit(REQUEST)
    expect(response.overallCode).toBe('OK')
  })

  it('refuses a plaintext client', async () => {
    const error = await grpcError(plaintextClient(h.grpcAddress).shouldRateLimit(REQUEST))
    expect(error.code).toBe(grpc.status.UNAVAILABLE)
  })

  it('serves new certificate files to new connections while an open one keeps working', async () => {
    const open = tlsClient(h.grpcAddress, certs.ca)
    expect((await open.shouldRateLimit(REQUEST)).overallCode).toBe('OK')
    const tls = h.app.grpcTls
    if (tls === undefined) throw new Error('TLS is off')
    const reloaded = new Promise<TlsReloadResult>((resolve) => {
      const stop = tls.onReload((result) => {
        if (result.outcome === 'updated') {
          stop()
          resolve(result)
        }
      })
    })
    replaceFile(keyFile, other.serverKey)
    replaceFile(certFile, other.serverCert)
    await reloaded

    // A new connection gets the new certificate: only the new CA accepts it.
    expect((await tlsClient(h.grpcAddress, other.ca).shouldRateLimit(REQUEST)).overallCode).toBe(
      'OK',
    )
    const stale = await grpcError(tlsClient(h.grpcAddress, certs.ca).shouldRateLimit(REQUEST))
    expect(stale.code).toBe(grpc.status.UNAVAILABLE)
    // The connection opened before keeps working.
    expect((await open.shouldRateLimit(REQUEST)).overallCode).toBe('OK')
  })

  it('keeps the previous certificate when the files become unusable', async () => {
    const tls = h.app.grpcTls
    if (tls === undefined) throw new Error('TLS is off')
    const kept = new Promise<TlsReloadResult>((resolve) => {
      const stop = tls.onReload((result) => {
        if (result.outcome === 'unchanged') return // a late event of the rotation before
        stop()
        resolve(result)
      })
    })
    replaceFile(certFile, 'not a certificate\n')
    const result = await kept
    expect(result.outcome).toBe('kept')
    expect((await tlsClient(h.grpcAddress, other.ca).shouldRateLimit(REQUEST)).overallCode).toBe(
      'OK',
    )
  })
})

describe.each(['native', 'grpc-js'])('gRPC mutual TLS on the %s server', (implementation) => {
  let h: Harness
  let strict: Harness

  beforeAll(async () => {
    const certFile = join(dir, `mtls-${implementation}-server.crt`)
    const keyFile = join(dir, `mtls-${implementation}-server.key`)
    writeFileSync(certFile, certs.serverCert)
    writeFileSync(keyFile, certs.serverKey)
    const env = {
      GRPC_SERVER_IMPLEMENTATION: implementation,
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: certFile,
      GRPC_SERVER_TLS_KEY: keyFile,
      GRPC_CLIENT_TLS_CACERT: join(dir, 'client-ca.crt'),
    }
    ;[h, strict] = await Promise.all([
      startService({
        files: { 'tls.yaml': CONFIG },
        env: { ...env, GRPC_CLIENT_TLS_SAN: CLIENT_SAN },
      }),
      startService({
        files: { 'tls.yaml': CONFIG },
        env: { ...env, GRPC_CLIENT_TLS_SAN: 'someone-else' },
      }),
    ])
  })
  afterAll(async () => {
    await Promise.all([h.close(), strict.close()])
  })

  it('answers a client whose certificate the CA issued with the SAN', async () => {
    const client = tlsClient(h.grpcAddress, certs.ca, {
      cert: certs.clientCert,
      key: certs.clientKey,
    })
    expect((await client.shouldRateLimit(REQUEST)).overallCode).toBe('OK')
  })

  it('refuses a client without a certificate', async () => {
    const error = await grpcError(tlsClient(h.grpcAddress, certs.ca).shouldRateLimit(REQUEST))
    expect(error.code).toBe(grpc.status.UNAVAILABLE)
  })

  it('refuses a client certificate of another CA', async () => {
    const client = tlsClient(h.grpcAddress, certs.ca, {
      cert: other.clientCert,
      key: other.clientKey,
    })
    const error = await grpcError(client.shouldRateLimit(REQUEST))
    expect(error.code).toBe(grpc.status.UNAVAILABLE)
  })

  it('refuses a client certificate without the GRPC_CLIENT_TLS_SAN name', async () => {
    const client = tlsClient(strict.grpcAddress, certs.ca, {
      cert: certs.clientCert,
      key: certs.clientKey,
    })
    const error = await grpcError(client.shouldRateLimit(REQUEST))
    expect(error.code).toBe(grpc.status.UNAUTHENTICATED)
    expect(error.details).toBe(
      'client certificate does not carry the subject alternative name DNS:someone-else (GRPC_CLIENT_TLS_SAN)',
    )
  })
})

describe('gRPC TLS files at start', () => {
  it('refuses to build the service when a file cannot be read, naming the variable', () => {
    const settings = loadSettings({
      BACKEND_TYPE: 'memory',
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: join(dir, 'missing.crt'),
      GRPC_SERVER_TLS_KEY: join(dir, 'client-ca.crt'),
    })
    expect(() => buildRateLimitApp(settings)).toThrow(
      `invalid settings:\n  GRPC_SERVER_TLS_CERT: cannot read ${join(dir, 'missing.crt')}: ENOENT: no such file or directory, open '${join(dir, 'missing.crt')}'`,
    )
  })

  it('refuses a key that does not match the certificate', () => {
    const keyFile = join(dir, 'wrong.key')
    const certFile = join(dir, 'right.crt')
    writeFileSync(keyFile, other.serverKey)
    writeFileSync(certFile, certs.serverCert)
    const settings = loadSettings({
      BACKEND_TYPE: 'memory',
      GRPC_SERVER_USE_TLS: 'true',
      GRPC_SERVER_TLS_CERT: certFile,
      GRPC_SERVER_TLS_KEY: keyFile,
    })
    expect(() => buildRateLimitApp(settings)).toThrow(
      /GRPC_SERVER_TLS_CERT: .* do not make a valid TLS configuration: .*key values mismatch/,
    )
  })
})
