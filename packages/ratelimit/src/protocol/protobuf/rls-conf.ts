/**
 * Protobuf decoding of the configuration resource a management server pushes,
 * `ratelimit.config.ratelimit.v3.RateLimitConfig` (envoyproxy/ratelimit
 * `api/ratelimit/config/ratelimit/v3/rls_conf.proto`; here `proto/ratelimit/...`):
 * `RateLimitConfig{name=1, domain=2, descriptors=3}`, `RateLimitDescriptor{key=1, value=2,
 * rate_limit=3, descriptors=4, shadow_mode=5, detailed_metric=6, quota_mode=7, metadata=8
 * (Struct)}`, `RateLimitPolicy{unit=1 (enum), requests_per_unit=2, unlimited=3, name=4,
 * replaces=5, unit_multiplier=100 (a Gatehouse addition)}`, `RateLimitReplace{name=1}`.
 *
 * @module
 */
import type { JsonObject } from '../types.js'
import { readStruct } from './struct.js'
import { WIRE, WireFormatError, WireReader } from './wire.js'

/** The resource's type URL, as requested and as each pushed `Any` must carry. */
export const RATE_LIMIT_CONFIG_TYPE_URL =
  'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig'

/** Deepest descriptor nesting accepted (deeper data is refused, not recursed into). */
export const MAX_DESCRIPTOR_DEPTH = 64

/** `RateLimitReplace`. */
export interface XdsRateLimitReplace {
  readonly name: string
}

/** `RateLimitPolicy`; `unit` is the enum number (0 UNKNOWN … 7 WEEK). */
export interface XdsRateLimitPolicy {
  readonly unit: number
  readonly requestsPerUnit: number
  readonly unlimited: boolean
  readonly name: string
  readonly replaces: readonly XdsRateLimitReplace[]
  /** `unit_multiplier = 100` (a Gatehouse addition, issue 32); 0 when absent. */
  readonly unitMultiplier: number
}

/** `RateLimitDescriptor`. */
export interface XdsRateLimitDescriptor {
  readonly key: string
  readonly value: string
  readonly rateLimit: XdsRateLimitPolicy | undefined
  readonly descriptors: readonly XdsRateLimitDescriptor[]
  readonly shadowMode: boolean
  readonly detailedMetric: boolean
  readonly quotaMode: boolean
  /** Undefined when absent. */
  readonly metadata: JsonObject | undefined
}

/** `RateLimitConfig`: one domain's rules; `name` stands for a file name. */
export interface XdsRateLimitConfig {
  readonly name: string
  readonly domain: string
  readonly descriptors: readonly XdsRateLimitDescriptor[]
}

/** Reads one nested message with `read`, between `enter` and `leave`. */
function nested<T>(r: WireReader, read: (r: WireReader) => T): T {
  const outer = r.enter()
  const value = read(r)
  r.leave(outer)
  return value
}

function readReplace(r: WireReader): XdsRateLimitReplace {
  let name = ''
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) name = r.string()
    else r.skip(type)
  }
  return { name }
}

function readPolicy(r: WireReader): XdsRateLimitPolicy {
  let unit = 0
  let requestsPerUnit = 0
  let unlimited = false
  let name = ''
  let unitMultiplier = 0
  const replaces: XdsRateLimitReplace[] = []
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) unit = r.int32()
    else if (field === 2 && type === WIRE.VARINT) requestsPerUnit = r.uint32()
    else if (field === 3 && type === WIRE.VARINT) unlimited = r.varint() !== 0
    else if (field === 4 && type === WIRE.LEN) name = r.string()
    else if (field === 5 && type === WIRE.LEN) replaces.push(nested(r, readReplace))
    else if (field === 100 && type === WIRE.VARINT) unitMultiplier = r.uint32()
    else r.skip(type)
  }
  return { unit, requestsPerUnit, unlimited, name, replaces, unitMultiplier }
}

function readDescriptor(r: WireReader, depth: number): XdsRateLimitDescriptor {
  if (depth > MAX_DESCRIPTOR_DEPTH) {
    throw new WireFormatError(
      `descriptors nested deeper than ${String(MAX_DESCRIPTOR_DEPTH)} levels`,
    )
  }
  let key = ''
  let value = ''
  let rateLimit: XdsRateLimitPolicy | undefined
  const descriptors: XdsRateLimitDescriptor[] = []
  let shadowMode = false
  let detailedMetric = false
  let quotaMode = false
  let metadata: JsonObject | undefined
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) key = r.string()
    else if (field === 2 && type === WIRE.LEN) value = r.string()
    else if (field === 3 && type === WIRE.LEN) rateLimit = nested(r, readPolicy)
    else if (field === 4 && type === WIRE.LEN) {
      descriptors.push(nested(r, (inner) => readDescriptor(inner, depth + 1)))
    } else if (field === 5 && type === WIRE.VARINT) shadowMode = r.varint() !== 0
    else if (field === 6 && type === WIRE.VARINT) detailedMetric = r.varint() !== 0
    else if (field === 7 && type === WIRE.VARINT) quotaMode = r.varint() !== 0
    else if (field === 8 && type === WIRE.LEN) metadata = nested(r, readStruct)
    else r.skip(type)
  }
  return {
    key,
    value,
    rateLimit,
    descriptors,
    shadowMode,
    detailedMetric,
    quotaMode,
    metadata,
  }
}

/**
 * Decodes a serialized `RateLimitConfig`.
 *
 * @throws {@link WireFormatError} On malformed data, invalid UTF-8 in a string field, or
 *   descriptors nested deeper than {@link MAX_DESCRIPTOR_DEPTH}.
 */
export function decodeRateLimitConfig(buf: Buffer): XdsRateLimitConfig {
  const r = new WireReader(buf)
  let name = ''
  let domain = ''
  const descriptors: XdsRateLimitDescriptor[] = []
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) name = r.string()
    else if (field === 2 && type === WIRE.LEN) domain = r.string()
    else if (field === 3 && type === WIRE.LEN) {
      descriptors.push(nested(r, (inner) => readDescriptor(inner, 1)))
    } else r.skip(type)
  }
  return { name, domain, descriptors }
}
