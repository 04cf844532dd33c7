/**
 * Randomised round trips between the hand-written codec and @bufbuild/protobuf, an independent
 * implementation generated from the same `proto/` files (`npm run generate:reference`): what one
 * encodes, the other decodes to the same message, for every field, in both directions. The
 * generator is seeded, so a failure names the seed and case that reproduce it.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf'
import { describe, expect, it } from 'vitest'
import {
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
} from '../../../test/reference/grpc/health/v1/health_pb.js'
import {
  RateLimitRequestSchema,
  RateLimitResponseSchema,
  type RateLimitResponse as BufResponse,
} from '../../../test/reference/envoy/service/ratelimit/v3/rls_pb.js'
import { RateLimitUnit } from '../../../test/reference/envoy/type/v3/ratelimit_unit_pb.js'
import {
  CODE_NUMBERS,
  UNITS,
  type Code,
  type DescriptorStatus,
  type JsonObject,
  type JsonValue,
  type RateLimitRequest,
  type RateLimitResponse,
  type Unit,
} from '../types.js'
import {
  decodeHealthCheckRequest,
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  encodeHealthCheckResponse,
  SERVING_STATUS,
  type ServingStatus,
} from './health.js'
import { requestFromBuf, responseToBuf, unitName } from '../../../test/reference/convert.js'
import { decodeRateLimitRequest, encodeRateLimitRequest } from './request.js'
import { decodeRateLimitResponse, encodeRateLimitResponse } from './response.js'

const SEED = 0x9e3779b9
const CASES = 400

/** mulberry32: a small seeded generator of numbers in [0, 1). */
function seeded(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

/** Random values of every shape the messages carry. */
class Gen {
  readonly #random: () => number
  constructor(seed: number) {
    this.#random = seeded(seed)
  }
  int(max: number): number {
    return Math.floor(this.#random() * (max + 1))
  }
  chance(p: number): boolean {
    return this.#random() < p
  }
  pick<T>(values: readonly T[]): T {
    return values[this.int(values.length - 1)] as T
  }
  uint32(): number {
    return this.pick([0, 1, 127, 128, 16_384, 2 ** 31, 2 ** 32 - 1, this.int(2 ** 32 - 1)])
  }
  /** Up to 2^53 - 1 (what the codec keeps exact). */
  uint53(): number {
    return this.pick([0, 1, 300, 2 ** 32, 2 ** 40 + 7, Number.MAX_SAFE_INTEGER, this.int(2 ** 50)])
  }
  /** ASCII, Latin-1, 3-byte and 4-byte (surrogate pair) characters, never a lone surrogate. */
  string(maxLength = 12): string {
    const alphabet = [
      'a',
      'Z',
      '0',
      '_',
      '.',
      ' ',
      '/',
      '*',
      'é',
      'ß',
      'ü',
      '€',
      '日',
      '本',
      '😀',
      '𝄞',
    ]
    let out = ''
    for (let i = this.int(maxLength); i > 0; i--) out += this.pick(alphabet)
    return out
  }
  json(depth: number): JsonValue {
    const kind = this.int(depth > 0 ? 5 : 3)
    switch (kind) {
      case 0:
        return null
      case 1:
        return this.chance(0.5)
      case 2:
        return this.pick([0, -0, 1.5, -(2 ** 60), 1e-300, 3, this.int(1e9) / 7])
      case 3:
        return this.string()
      case 4:
        return Array.from({ length: this.int(3) }, () => this.json(depth - 1))
      default:
        return this.object(depth - 1)
    }
  }
  object(depth: number): JsonObject {
    const out: JsonObject = {}
    for (let i = this.int(3); i > 0; i--) out[this.string(6)] = this.json(depth)
    return out
  }
}

const OVERRIDE_UNITS = UNITS.filter((unit) => unit !== 'WEEK')
const CODES = Object.keys(CODE_NUMBERS) as Code[]

function randomRequest(g: Gen): RateLimitRequest {
  return {
    domain: g.string(),
    descriptors: Array.from({ length: g.int(4) }, () => ({
      entries: Array.from({ length: g.int(4) }, () => ({ key: g.string(), value: g.string() })),
      limit: g.chance(0.3)
        ? { requestsPerUnit: g.uint32(), unit: g.pick(OVERRIDE_UNITS) }
        : undefined,
      hitsAddend: g.chance(0.4) ? g.uint53() : undefined,
    })),
    hitsAddend: g.uint32(),
  }
}

function randomResponse(g: Gen): RateLimitResponse {
  return {
    overallCode: g.pick(CODES),
    statuses: Array.from({ length: g.int(4) }, (): DescriptorStatus => ({
      code: g.pick(CODES),
      currentLimit: g.chance(0.7)
        ? {
            requestsPerUnit: g.uint32(),
            unit: g.pick(UNITS),
            ...(g.chance(0.5) ? { name: `n${g.string()}` } : {}),
          }
        : undefined,
      limitRemaining: g.uint32(),
      durationUntilReset: g.chance(0.7) ? g.int(2 ** 31) : undefined,
    })),
    responseHeadersToAdd: Array.from({ length: g.int(3) }, () => ({
      key: g.string(),
      value: g.string(),
    })),
    dynamicMetadata: g.chance(0.5) ? g.object(3) : undefined,
  }
}

const codeName = (value: number): Code => CODES.find((c) => CODE_NUMBERS[c] === value) ?? 'UNKNOWN'

/** A @bufbuild/protobuf response in the codec's shape. */
function responseFromBuf(response: BufResponse): RateLimitResponse {
  return {
    overallCode: codeName(response.overallCode),
    statuses: response.statuses.map((s) => ({
      code: codeName(s.code),
      currentLimit:
        s.currentLimit === undefined
          ? undefined
          : {
              requestsPerUnit: s.currentLimit.requestsPerUnit,
              unit: unitName(s.currentLimit.unit),
              ...(s.currentLimit.name === '' ? {} : { name: s.currentLimit.name }),
            },
      limitRemaining: s.limitRemaining,
      durationUntilReset:
        s.durationUntilReset === undefined ? undefined : Number(s.durationUntilReset.seconds),
    })),
    responseHeadersToAdd: response.responseHeadersToAdd.map((h) => ({
      key: h.key,
      value: h.value,
    })),
    dynamicMetadata: response.dynamicMetadata,
  }
}

/** The override's unit (`envoy.type.v3.RateLimitUnit`, which has no WEEK). */
function overrideUnit(unit: Unit): RateLimitUnit {
  if (unit === 'WEEK') throw new Error('an override has no WEEK unit')
  return RateLimitUnit[unit]
}

function requestToBuf(request: RateLimitRequest): Uint8Array {
  return toBinary(
    RateLimitRequestSchema,
    create(RateLimitRequestSchema, {
      domain: request.domain,
      hitsAddend: request.hitsAddend,
      descriptors: request.descriptors.map((d) => ({
        entries: d.entries.map((e) => ({ key: e.key, value: e.value })),
        ...(d.limit === undefined
          ? {}
          : {
              limit: { requestsPerUnit: d.limit.requestsPerUnit, unit: overrideUnit(d.limit.unit) },
            }),
        ...(d.hitsAddend === undefined ? {} : { hitsAddend: BigInt(d.hitsAddend) }),
      })),
    }),
  )
}

describe(`randomised round trips against @bufbuild/protobuf (seed ${String(SEED)}, ${String(CASES)} cases)`, () => {
  it('RateLimitRequest: ours → @bufbuild and @bufbuild → ours give the same message', () => {
    const g = new Gen(SEED)
    for (let i = 0; i < CASES; i++) {
      const request = randomRequest(g)
      const ours = encodeRateLimitRequest(request)
      expect(requestFromBuf(fromBinary(RateLimitRequestSchema, ours)), `case ${String(i)}`).toEqual(
        request,
      )
      const theirs = Buffer.from(requestToBuf(request))
      expect(decodeRateLimitRequest(theirs), `case ${String(i)}`).toEqual(request)
    }
  })

  it('RateLimitResponse (statuses, headers, Struct metadata) in both directions', () => {
    const g = new Gen(SEED + 1)
    for (let i = 0; i < CASES; i++) {
      const response = randomResponse(g)
      const ours = encodeRateLimitResponse(response)
      const read = responseFromBuf(fromBinary(RateLimitResponseSchema, ours))
      expect(read, `case ${String(i)}`).toEqual(response)
      const theirs = Buffer.from(responseToBuf(response))
      expect(decodeRateLimitResponse(theirs), `case ${String(i)}`).toEqual(response)
      // The gRPC-framed form carries the same message after its 5-byte prefix.
      const framed = encodeRateLimitResponse(response, true)
      expect([framed[0], framed.readUInt32BE(1)]).toEqual([0, ours.length])
      expect(framed.subarray(5)).toEqual(ours)
    }
  })

  it('grpc.health.v1 messages in both directions', () => {
    const g = new Gen(SEED + 2)
    const statuses = Object.keys(SERVING_STATUS) as ServingStatus[]
    for (let i = 0; i < CASES; i++) {
      const service = g.string()
      const request = encodeHealthCheckRequest({ service })
      expect(fromBinary(HealthCheckRequestSchema, request).service).toBe(service)
      const theirs = toBinary(
        HealthCheckRequestSchema,
        create(HealthCheckRequestSchema, { service }),
      )
      expect(decodeHealthCheckRequest(Buffer.from(theirs))).toEqual({ service })
      const status = g.pick(statuses)
      expect(fromBinary(HealthCheckResponseSchema, encodeHealthCheckResponse(status)).status).toBe(
        SERVING_STATUS[status],
      )
      const response = toBinary(
        HealthCheckResponseSchema,
        create(HealthCheckResponseSchema, { status: HealthCheckResponse_ServingStatus[status] }),
      )
      expect(decodeHealthCheckResponse(Buffer.from(response))).toBe(status)
    }
  })
})
