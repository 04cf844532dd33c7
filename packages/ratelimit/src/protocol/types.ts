/**
 * The rate limit service's request and response, as plain objects with camelCase names. Both
 * wire forms (protobuf over gRPC and proto3 JSON over HTTP) map to and from these types in
 * `protobuf.ts` and `json.ts`; nothing else knows about the wire.
 *
 * Field names follow envoy's `envoy.service.ratelimit.v3` messages (`rls.proto`) and
 * `envoy.extensions.common.ratelimit.v3.RateLimitDescriptor`.
 *
 * @module
 */

/**
 * Units of a rate limit, with the numbers of `RateLimitResponse.RateLimit.Unit` (the override's
 * `envoy.type.v3.RateLimitUnit` uses the same numbers, without `WEEK`).
 */
export const UNIT_NUMBERS = {
  UNKNOWN: 0,
  SECOND: 1,
  MINUTE: 2,
  HOUR: 3,
  DAY: 4,
  MONTH: 5,
  YEAR: 6,
  WEEK: 7,
} as const

/** Name of a rate limit unit, as in `RateLimitResponse.RateLimit.Unit`. */
export type Unit = keyof typeof UNIT_NUMBERS

/** Known unit names, in enum-number order. */
export const UNITS: readonly Unit[] = Object.keys(UNIT_NUMBERS) as Unit[]

/**
 * The unit with this enum number; open-enum numbers that name no unit map to `UNKNOWN`.
 *
 * @param value Enum number from the wire.
 */
export function unitFromNumber(value: number): Unit {
  for (const unit of UNITS) if (UNIT_NUMBERS[unit] === value) return unit
  return 'UNKNOWN'
}

/** Codes of `RateLimitResponse.Code`: UNKNOWN = 0, OK = 1, OVER_LIMIT = 2. */
export const CODE_NUMBERS = { UNKNOWN: 0, OK: 1, OVER_LIMIT: 2 } as const

/** Name of a response code. */
export type Code = keyof typeof CODE_NUMBERS

/** One `key`/`value` pair of a descriptor (`RateLimitDescriptor.Entry`). */
export interface Entry {
  readonly key: string
  readonly value: string
}

/** A per-descriptor limit sent by the caller (`RateLimitDescriptor.RateLimitOverride`). */
export interface RateLimitOverride {
  readonly requestsPerUnit: number
  readonly unit: Unit
}

/** One descriptor of a request (`envoy.extensions.common.ratelimit.v3.RateLimitDescriptor`). */
export interface Descriptor {
  readonly entries: readonly Entry[]
  /** The caller's own limit for this descriptor, used instead of the configuration. */
  readonly limit?: RateLimitOverride | undefined
  /**
   * Hits to add for this descriptor (`google.protobuf.UInt64Value`); `undefined` when not set.
   * Zero is allowed and means "check only".
   */
  readonly hitsAddend?: number | undefined
}

/** A rate limit decision request (`RateLimitRequest`). */
export interface RateLimitRequest {
  readonly domain: string
  readonly descriptors: readonly Descriptor[]
  /** Request-wide hits to add; 0 (the default) counts as 1. */
  readonly hitsAddend: number
}

/** The limit that applied to a descriptor (`RateLimitResponse.RateLimit`). */
export interface CurrentLimit {
  readonly name?: string | undefined
  readonly requestsPerUnit: number
  readonly unit: Unit
  /**
   * Units per window (`unit_multiplier`, `google.protobuf.UInt32Value` field 4 as Envoy PR #47307
   * proposes); set only for windows of several units, so one-unit answers stay upstream's bytes.
   */
  readonly unitMultiplier?: number | undefined
}

/** The decision for one descriptor (`RateLimitResponse.DescriptorStatus`). */
export interface DescriptorStatus {
  readonly code: Code
  readonly currentLimit?: CurrentLimit | undefined
  /** Requests left in the current window (uint32). */
  readonly limitRemaining: number
  /** Seconds until the current window ends; `undefined` when no limit applied. */
  readonly durationUntilReset?: number | undefined
}

/** A header to add (`envoy.config.core.v3.HeaderValue`). */
export interface HeaderValue {
  readonly key: string
  readonly value: string
}

/** A JSON value as carried by `google.protobuf.Struct`. */
export type JsonValue =
  null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

/** A `google.protobuf.Struct`. */
export type JsonObject = { [key: string]: JsonValue }

/** A rate limit decision (`RateLimitResponse`). */
export interface RateLimitResponse {
  readonly overallCode: Code
  /** One status per request descriptor, in request order. */
  readonly statuses: readonly DescriptorStatus[]
  readonly responseHeadersToAdd: readonly HeaderValue[]
  /** Only with `RESPONSE_DYNAMIC_METADATA=true`. */
  readonly dynamicMetadata?: JsonObject | undefined
}
