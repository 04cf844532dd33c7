/**
 * CONFIG_TYPE=GRPC_XDS_SOTW against the in-repo management server (`test/xds-server.ts`): the
 * subscription (node, type, extra headers), ACK and NACK with the validation error text, updates
 * enforced without restart, the last good configuration kept through bad pushes and a restart of
 * the management server, reconnection with backoff, FORCE_START_WITHOUT_INITIAL_CONFIG both ways,
 * and TLS to the management server.
 */
import { createTestCertificates, getFreePort } from '@gatehouse/testing'
import * as grpc from '@grpc/grpc-js'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RateLimitUnit } from '../reference/ratelimit/config/ratelimit/v3/rls_conf_pb.js'
import { grpcError, startService, type Harness } from '../harness.js'
import { configResources, TestManagementServer, type RateLimitConfigInit } from '../xds-server.js'

const TYPE_URL = 'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig'

/** One domain `xds` with `per_minute` limited to `limit` a minute. */
function config(limit: number, name = 'xds-config'): RateLimitConfigInit {
  return {
    name,
    domain: 'xds',
    descriptors: [
      {
        key: 'per_minute',
        rateLimit: { unit: RateLimitUnit.MINUTE, requestsPerUnit: limit },
      },
    ],
  }
}

/** Short waits, so that reconnections happen within the test. */
const FAST_RETRY = {
  CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: '50ms',
  XDS_CLIENT_BACKOFF_INITIAL_INTERVAL: '20ms',
  XDS_CLIENT_BACKOFF_MAX_INTERVAL: '100ms',
}

/** How many calls for `value` pass before the first OVER_LIMIT (at most `max` tried). */
async function allowed(h: Harness, value: string, max = 5): Promise<number> {
  for (let i = 0; i < max; i++) {
    const response = await h.client.shouldRateLimit({
      domain: 'xds',
      descriptors: [{ entries: [{ key: 'per_minute', value }] }],
    })
    if (response.overallCode === 'OVER_LIMIT') return i
  }
  return max
}

describe('configuration from an xDS management server', () => {
  let server: TestManagementServer
  let h: Harness
  let listening = false

  beforeAll(async () => {
    server = await TestManagementServer.start()
    const started = startService({
      env: {
        CONFIG_TYPE: 'GRPC_XDS_SOTW',
        CONFIG_GRPC_XDS_SERVER_URL: server.address,
        CONFIG_GRPC_XDS_NODE_ID: 'test-node',
        CONFIG_GRPC_XDS_NODE_METADATA: 'zone=eu-1,team=edge',
        CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: 'authorization:Bearer xds-token,x-tenant:t1',
        ...FAST_RETRY,
      },
    })
    void started.then(() => {
      listening = true
    })
    // Without FORCE_START_WITHOUT_INITIAL_CONFIG the service waits for a first configuration.
    await server.nextRequest()
    expect(listening).toBe(false)
    server.push('v1', configResources([config(1)]))
    h = await started
  })
  afterAll(async () => {
    await h.close()
    await server.stop()
  })

  it('subscribes as its node to every RateLimitConfig, with the extra headers', () => {
    const first = server.requests[0]
    expect(first?.node?.id).toBe('test-node')
    expect(first?.node?.metadata).toEqual({ zone: 'eu-1', team: 'edge' })
    expect(first?.typeUrl).toBe(TYPE_URL)
    expect(first?.versionInfo).toBe('')
    expect(first?.responseNonce).toBe('')
    expect(first?.resourceNames).toEqual([])
    const metadata = server.streamMetadata[0]
    expect(metadata?.get('authorization')).toEqual(['Bearer xds-token'])
    expect(metadata?.get('x-tenant')).toEqual(['t1'])
  })

  it('ACKs the first push with its version and nonce and enforces it', async () => {
    const ack = await server.nextRequest()
    expect(ack.versionInfo).toBe('v1')
    expect(ack.responseNonce).toBe('nonce-1')
    expect(ack.errorDetail).toBeUndefined()
    expect(await allowed(h, 'a')).toBe(1)
  })

  it('enforces an update without restart', async () => {
    const nonce = server.push('v2', configResources([config(3)]))
    const ack = await server.nextRequest()
    expect([ack.versionInfo, ack.responseNonce]).toEqual(['v2', nonce])
    expect(await allowed(h, 'b')).toBe(3)
  })

  it('NACKs an invalid push with the validation error and keeps enforcing the last good one', async () => {
    const invalid = config(5, 'broken')
    invalid.domain = ''
    const nonce = server.push('v3', configResources([invalid]))
    const nack = await server.nextRequest()
    expect([nack.versionInfo, nack.responseNonce]).toEqual(['v2', nonce])
    expect(nack.errorDetail?.message).toBe('broken: config file cannot have empty domain')
    expect(await allowed(h, 'c')).toBe(3)
    expect(h.stat('ratelimit.service.config_load_error')).toBe(1)
  })

  it('NACKs the same rule errors as for files (unit, replaces)', async () => {
    const noUnit = config(5, 'no-unit')
    noUnit.descriptors = [{ key: 'k', rateLimit: { requestsPerUnit: 5 } }]
    server.push('v4', configResources([noUnit]))
    expect((await server.nextRequest()).errorDetail?.message).toBe(
      "no-unit: invalid rate limit unit 'UNKNOWN'",
    )
    const duplicate = config(5, 'second')
    server.push('v5', configResources([config(1), duplicate]))
    const nack = await server.nextRequest()
    expect(nack.versionInfo).toBe('v2')
    expect(nack.errorDetail?.message).toBe("second: duplicate domain 'xds' in config file")
  })

  it('NACKs resources it cannot decode or of another type', async () => {
    server.push('v6', [
      { $typeName: 'google.protobuf.Any', typeUrl: TYPE_URL, value: Uint8Array.of(0x0a, 0x05) },
    ])
    expect((await server.nextRequest()).errorDetail?.message).toBe(
      'xds resource 0: cannot decode RateLimitConfig: proto: cannot parse invalid wire-format data',
    )
    server.push(
      'v7',
      configResources([config(1)]),
      'type.googleapis.com/envoy.config.cluster.v3.Cluster',
    )
    expect((await server.nextRequest()).errorDetail?.message).toBe(
      `unexpected type_url "type.googleapis.com/envoy.config.cluster.v3.Cluster", subscribed to ${TYPE_URL}`,
    )
    expect(await allowed(h, 'd')).toBe(3)
  })

  it('keeps its configuration while the management server restarts, then resubscribes', async () => {
    const port = server.port
    await server.stop()
    expect(await allowed(h, 'e')).toBe(3)
    server = await TestManagementServer.start(port)
    const resubscribe = await server.nextRequest()
    expect([resubscribe.versionInfo, resubscribe.responseNonce]).toEqual(['', ''])
    expect(resubscribe.node?.id).toBe('test-node')
    expect(server.streamMetadata[0]?.get('authorization')).toEqual(['Bearer xds-token'])
    server.push('v8', configResources([config(2)]))
    expect((await server.nextRequest()).versionInfo).toBe('v8')
    expect(await allowed(h, 'f')).toBe(2)
  })
})

describe('FORCE_START_WITHOUT_INITIAL_CONFIG=true', () => {
  let h: Harness
  let server: TestManagementServer | undefined

  beforeAll(async () => {
    const port = await getFreePort()
    h = await startService({
      env: {
        CONFIG_TYPE: 'GRPC_XDS_SOTW',
        CONFIG_GRPC_XDS_SERVER_URL: `127.0.0.1:${String(port)}`,
        FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
        ...FAST_RETRY,
      },
    })
    // Serving without any configuration: every call says so.
    const error = await grpcError(
      h.client.shouldRateLimit({ domain: 'xds', descriptors: [{ entries: [{ key: 'k' }] }] }),
    )
    expect(error.details).toBe('no rate limit configuration loaded')
    server = await TestManagementServer.start(port)
  })
  afterAll(async () => {
    await h.close()
    await server?.stop()
  })

  it('serves before the management server answers, and loads its configuration once it does', async () => {
    if (server === undefined) throw new Error('no server')
    await server.nextRequest()
    server.push('v1', configResources([config(2)]))
    expect((await server.nextRequest()).versionInfo).toBe('v1')
    expect(await allowed(h, 'a')).toBe(2)
  })
})

describe('XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES', () => {
  let server: TestManagementServer
  let h: Harness

  beforeAll(async () => {
    server = await TestManagementServer.start()
    h = await startService({
      env: {
        CONFIG_TYPE: 'GRPC_XDS_SOTW',
        CONFIG_GRPC_XDS_SERVER_URL: server.address,
        FORCE_START_WITHOUT_INITIAL_CONFIG: 'true',
        XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES: '200',
        ...FAST_RETRY,
      },
    })
  })
  afterAll(async () => {
    await h.close()
    await server.stop()
  })

  it('refuses a larger response (the stream fails and is opened again), loading nothing', async () => {
    expect((await server.nextRequest()).versionInfo).toBe('')
    server.push('big', configResources([config(1, 'x'.repeat(300))]))
    const again = await server.nextRequest()
    expect([again.versionInfo, again.responseNonce]).toEqual(['', ''])
    expect(server.streamMetadata).toHaveLength(2)
    const error = await grpcError(
      h.client.shouldRateLimit({ domain: 'xds', descriptors: [{ entries: [{ key: 'k' }] }] }),
    )
    expect(error.details).toBe('no rate limit configuration loaded')
    server.push('small', configResources([config(1)]))
    expect((await server.nextRequest()).versionInfo).toBe('small')
  })
})

describe('TLS to the management server', () => {
  const certs = createTestCertificates()
  const dir = mkdtempSync(join(tmpdir(), 'ratelimit-xds-tls-'))
  let server: TestManagementServer
  let h: Harness

  beforeAll(async () => {
    writeFileSync(join(dir, 'ca.crt'), certs.ca)
    server = await TestManagementServer.start(
      0,
      grpc.ServerCredentials.createSsl(Buffer.from(certs.ca), [
        { cert_chain: Buffer.from(certs.serverCert), private_key: Buffer.from(certs.serverKey) },
      ]),
    )
    const started = startService({
      env: {
        CONFIG_TYPE: 'GRPC_XDS_SOTW',
        CONFIG_GRPC_XDS_SERVER_URL: server.address,
        CONFIG_GRPC_XDS_SERVER_USE_TLS: 'true',
        CONFIG_GRPC_XDS_SERVER_TLS_CACERT: join(dir, 'ca.crt'),
        CONFIG_GRPC_XDS_SERVER_TLS_SAN: 'localhost',
        ...FAST_RETRY,
      },
    })
    await server.nextRequest()
    server.push('tls-1', configResources([config(1)]))
    h = await started
  })
  afterAll(async () => {
    await h.close()
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('receives and ACKs its configuration over TLS', async () => {
    expect((await server.nextRequest()).versionInfo).toBe('tls-1')
    expect(await allowed(h, 'a')).toBe(1)
  })
})
