/**
 * The xDS messages' hand-written codec against @bufbuild/protobuf, generated from the same
 * `proto/` files: what one encodes, the other decodes to the same message.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf'
import { anyPack } from '@bufbuild/protobuf/wkt'
import { describe, expect, it } from 'vitest'
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
} from '../../../test/reference/envoy/service/discovery/v3/discovery_pb.js'
import {
  RateLimitConfigSchema,
  RateLimitUnit,
} from '../../../test/reference/ratelimit/config/ratelimit/v3/rls_conf_pb.js'
import { decodeDiscoveryResponse, encodeDiscoveryRequest } from './discovery.js'
import {
  decodeRateLimitConfig,
  MAX_DESCRIPTOR_DEPTH,
  RATE_LIMIT_CONFIG_TYPE_URL,
} from './rls-conf.js'

describe('DiscoveryRequest', () => {
  it('encodes an ACK as protobuf reads it', () => {
    const bytes = encodeDiscoveryRequest({
      versionInfo: 'v1',
      node: { id: 'node-é', metadata: { zone: 'eu-1' } },
      resourceNames: [],
      typeUrl: RATE_LIMIT_CONFIG_TYPE_URL,
      responseNonce: 'n1',
      errorDetail: undefined,
    })
    const decoded = fromBinary(DiscoveryRequestSchema, bytes)
    expect(decoded.versionInfo).toBe('v1')
    expect(decoded.node?.id).toBe('node-é')
    expect(decoded.node?.metadata).toEqual({ zone: 'eu-1' })
    expect(decoded.typeUrl).toBe(RATE_LIMIT_CONFIG_TYPE_URL)
    expect(decoded.responseNonce).toBe('n1')
    expect(decoded.errorDetail).toBeUndefined()
  })

  it('encodes a NACK with its error detail and the resource names', () => {
    const bytes = encodeDiscoveryRequest({
      versionInfo: '',
      node: { id: 'n', metadata: {} },
      resourceNames: ['a', 'b'],
      typeUrl: RATE_LIMIT_CONFIG_TYPE_URL,
      responseNonce: 'n2',
      errorDetail: { code: 3, message: "x: invalid rate limit unit 'UNKNOWN'" },
    })
    const decoded = fromBinary(DiscoveryRequestSchema, bytes)
    expect(decoded.resourceNames).toEqual(['a', 'b'])
    expect(decoded.node?.metadata).toBeUndefined()
    expect(decoded.errorDetail?.code).toBe(3)
    expect(decoded.errorDetail?.message).toBe("x: invalid rate limit unit 'UNKNOWN'")
  })
})

describe('DiscoveryResponse and RateLimitConfig', () => {
  const config = create(RateLimitConfigSchema, {
    name: 'edge',
    domain: 'edge',
    descriptors: [
      {
        key: 'k',
        value: 'v*',
        rateLimit: {
          unit: RateLimitUnit.WEEK,
          requestsPerUnit: 4_000_000_000,
          name: 'weekly',
          replaces: [{ name: 'old' }],
        },
        shadowMode: true,
        detailedMetric: true,
        quotaMode: true,
        metadata: { team: 'edge', tier: 2, nested: { on: true } },
        descriptors: [{ key: 'inner', rateLimit: { unlimited: true } }],
      },
    ],
  })

  it('decodes what protobuf encodes', () => {
    const bytes = toBinary(
      DiscoveryResponseSchema,
      create(DiscoveryResponseSchema, {
        versionInfo: 'v9',
        nonce: 'n9',
        typeUrl: RATE_LIMIT_CONFIG_TYPE_URL,
        resources: [anyPack(RateLimitConfigSchema, config)],
      }),
    )
    const response = decodeDiscoveryResponse(Buffer.from(bytes))
    expect(response.versionInfo).toBe('v9')
    expect(response.nonce).toBe('n9')
    expect(response.typeUrl).toBe(RATE_LIMIT_CONFIG_TYPE_URL)
    expect(response.resources.map((r) => r.typeUrl)).toEqual([RATE_LIMIT_CONFIG_TYPE_URL])
    expect(decodeRateLimitConfig(response.resources[0]?.value ?? Buffer.alloc(0))).toEqual({
      name: 'edge',
      domain: 'edge',
      descriptors: [
        {
          key: 'k',
          value: 'v*',
          rateLimit: {
            unit: 7,
            requestsPerUnit: 4_000_000_000,
            unlimited: false,
            name: 'weekly',
            replaces: [{ name: 'old' }],
            unitMultiplier: 0,
          },
          shadowMode: true,
          detailedMetric: true,
          quotaMode: true,
          metadata: { team: 'edge', tier: 2, nested: { on: true } },
          descriptors: [
            {
              key: 'inner',
              value: '',
              rateLimit: {
                unit: 0,
                requestsPerUnit: 0,
                unlimited: true,
                name: '',
                replaces: [],
                unitMultiplier: 0,
              },
              shadowMode: false,
              detailedMetric: false,
              quotaMode: false,
              metadata: undefined,
              descriptors: [],
            },
          ],
        },
      ],
    })
  })

  it('refuses truncated data and descriptors nested too deep', () => {
    const bytes = Buffer.from(toBinary(RateLimitConfigSchema, config))
    expect(() => decodeRateLimitConfig(bytes.subarray(0, bytes.length - 3))).toThrow(
      'proto: cannot parse invalid wire-format data',
    )
    let deep = create(RateLimitConfigSchema, { domain: 'd' })
    let descriptors = deep.descriptors
    for (let i = 0; i <= MAX_DESCRIPTOR_DEPTH; i++) {
      const d = create(RateLimitConfigSchema, { descriptors: [{ key: `k${String(i)}` }] })
        .descriptors[0]
      if (d === undefined) throw new Error('no descriptor')
      descriptors.push(d)
      descriptors = d.descriptors
    }
    deep = create(RateLimitConfigSchema, deep)
    expect(() => decodeRateLimitConfig(Buffer.from(toBinary(RateLimitConfigSchema, deep)))).toThrow(
      `descriptors nested deeper than ${String(MAX_DESCRIPTOR_DEPTH)} levels`,
    )
  })
})
