/**
 * Protobuf encoding of `envoy.service.ratelimit.v3.RateLimitResponse` and its parts:
 * `RateLimitResponse{overall_code=1, statuses=2, response_headers_to_add=3, dynamic_metadata=6}`,
 * `DescriptorStatus{code=1, current_limit=2, limit_remaining=3, duration_until_reset=4}`,
 * `RateLimit{requests_per_unit=1, unit=2, name=3, unit_multiplier=4 (UInt32Value, Envoy PR #47307)}`, `HeaderValue{key=1, value=2}`,
 * `google.protobuf.Duration{seconds=1}`.
 *
 * @see https://github.com/envoyproxy/envoy/blob/main/api/envoy/service/ratelimit/v3/rls.proto
 * @module
 */
import {
  CODE_NUMBERS,
  UNIT_NUMBERS,
  unitFromNumber,
  type Code,
  type CurrentLimit,
  type DescriptorStatus,
  type HeaderValue,
  type JsonObject,
  type RateLimitResponse,
} from '../types.js'
import { readStruct, structSize, writeStructFields } from './struct.js'
import {
  lenFieldSize,
  readVarintField,
  utf8Length,
  varintFieldSize,
  WIRE,
  WireReader,
  WireWriter,
} from './wire.js'

const CODES: readonly Code[] = ['UNKNOWN', 'OK', 'OVER_LIMIT']

function codeFromNumber(value: number): Code {
  return CODES[value] ?? 'UNKNOWN'
}

function currentLimitSize(limit: CurrentLimit): number {
  let size = 0
  if (limit.requestsPerUnit !== 0) size += varintFieldSize(limit.requestsPerUnit)
  if (limit.unit !== 'UNKNOWN') size += varintFieldSize(UNIT_NUMBERS[limit.unit])
  if (limit.name !== undefined && limit.name !== '') size += lenFieldSize(utf8Length(limit.name))
  if (limit.unitMultiplier !== undefined) {
    size += lenFieldSize(varintFieldSize(limit.unitMultiplier))
  }
  return size
}

function durationSize(seconds: number): number {
  return seconds === 0 ? 0 : varintFieldSize(seconds)
}

function statusSize(status: DescriptorStatus): number {
  let size = 0
  if (status.code !== 'UNKNOWN') size += 2
  if (status.currentLimit !== undefined) size += lenFieldSize(currentLimitSize(status.currentLimit))
  if (status.limitRemaining !== 0) size += varintFieldSize(status.limitRemaining)
  if (status.durationUntilReset !== undefined) {
    size += lenFieldSize(durationSize(status.durationUntilReset))
  }
  return size
}

function headerSize(header: HeaderValue): number {
  let size = 0
  if (header.key !== '') size += lenFieldSize(utf8Length(header.key))
  if (header.value !== '') size += lenFieldSize(utf8Length(header.value))
  return size
}

/**
 * Encodes a `RateLimitResponse` (the server side of `ShouldRateLimit`).
 *
 * @param grpcFrame Prefix the 5-byte gRPC message header (saves a copy on the lean server).
 */
export function encodeRateLimitResponse(response: RateLimitResponse, grpcFrame = false): Buffer {
  const statusSizes = response.statuses.map(statusSize)
  const headerSizes = response.responseHeadersToAdd.map(headerSize)
  let size = response.overallCode === 'UNKNOWN' ? 0 : 2
  for (const s of statusSizes) size += lenFieldSize(s)
  for (const s of headerSizes) size += lenFieldSize(s)
  const metadataSize =
    response.dynamicMetadata === undefined ? -1 : structSize(response.dynamicMetadata)
  if (metadataSize >= 0) size += lenFieldSize(metadataSize)

  const w = new WireWriter(size, grpcFrame)
  if (response.overallCode !== 'UNKNOWN') {
    w.tag(1, WIRE.VARINT)
    w.varint(CODE_NUMBERS[response.overallCode])
  }
  response.statuses.forEach((status, i) => {
    w.tag(2, WIRE.LEN)
    w.varint(statusSizes[i] ?? 0)
    if (status.code !== 'UNKNOWN') {
      w.tag(1, WIRE.VARINT)
      w.varint(CODE_NUMBERS[status.code])
    }
    const limit = status.currentLimit
    if (limit !== undefined) {
      w.tag(2, WIRE.LEN)
      w.varint(currentLimitSize(limit))
      if (limit.requestsPerUnit !== 0) {
        w.tag(1, WIRE.VARINT)
        w.varint(limit.requestsPerUnit)
      }
      if (limit.unit !== 'UNKNOWN') {
        w.tag(2, WIRE.VARINT)
        w.varint(UNIT_NUMBERS[limit.unit])
      }
      if (limit.name !== undefined && limit.name !== '') {
        w.string(3, limit.name, utf8Length(limit.name))
      }
      if (limit.unitMultiplier !== undefined) {
        // google.protobuf.UInt32Value unit_multiplier = 4 (Envoy PR #47307).
        w.tag(4, WIRE.LEN)
        w.varint(varintFieldSize(limit.unitMultiplier))
        w.tag(1, WIRE.VARINT)
        w.varint(limit.unitMultiplier)
      }
    }
    if (status.limitRemaining !== 0) {
      w.tag(3, WIRE.VARINT)
      w.varint(status.limitRemaining)
    }
    if (status.durationUntilReset !== undefined) {
      w.tag(4, WIRE.LEN)
      w.varint(durationSize(status.durationUntilReset))
      if (status.durationUntilReset !== 0) {
        w.tag(1, WIRE.VARINT)
        w.varint(status.durationUntilReset)
      }
    }
  })
  response.responseHeadersToAdd.forEach((header, i) => {
    w.tag(3, WIRE.LEN)
    w.varint(headerSizes[i] ?? 0)
    if (header.key !== '') w.string(1, header.key, utf8Length(header.key))
    if (header.value !== '') w.string(2, header.value, utf8Length(header.value))
  })
  if (response.dynamicMetadata !== undefined) {
    w.tag(6, WIRE.LEN)
    w.varint(metadataSize)
    writeStructFields(w, response.dynamicMetadata)
  }
  return w.buf
}

function readCurrentLimit(r: WireReader): CurrentLimit {
  let requestsPerUnit = 0
  let unit = 0
  let name: string | undefined
  let unitMultiplier: number | undefined
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) requestsPerUnit = r.uint32()
    else if (field === 2 && type === WIRE.VARINT) unit = r.int32()
    else if (field === 3 && type === WIRE.LEN) name = r.string()
    else if (field === 4 && type === WIRE.LEN) unitMultiplier = readUInt32Value(r)
    else r.skip(type)
  }
  return {
    requestsPerUnit,
    unit: unitFromNumber(unit),
    ...(name === undefined ? {} : { name }),
    ...(unitMultiplier === undefined ? {} : { unitMultiplier }),
  }
}

/** A `google.protobuf.UInt32Value` (its `value`, 0 when absent). */
function readUInt32Value(r: WireReader): number {
  const outer = r.enter()
  let value = 0
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) value = r.uint32()
    else r.skip(type)
  }
  r.leave(outer)
  return value
}

function readHeaderValue(r: WireReader): HeaderValue {
  let key = ''
  let value = ''
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) key = r.string()
    else if (field === 2 && type === WIRE.LEN) value = r.string()
    else r.skip(type)
  }
  return { key, value }
}

function readStatus(r: WireReader): DescriptorStatus {
  let code: Code = 'UNKNOWN'
  let currentLimit: CurrentLimit | undefined
  let limitRemaining = 0
  let durationUntilReset: number | undefined
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) code = codeFromNumber(r.int32())
    else if (field === 3 && type === WIRE.VARINT) limitRemaining = r.uint32()
    else if ((field === 2 || field === 4) && type === WIRE.LEN) {
      const outer = r.enter()
      if (field === 2) currentLimit = readCurrentLimit(r)
      else durationUntilReset = readVarintField(r, 1) // google.protobuf.Duration.seconds
      r.leave(outer)
    } else r.skip(type)
  }
  return { code, currentLimit, limitRemaining, durationUntilReset }
}

/**
 * Decodes a serialized `RateLimitResponse` (client side).
 *
 * @throws {@link WireFormatError} On malformed data.
 */
export function decodeRateLimitResponse(buf: Buffer): RateLimitResponse {
  const r = new WireReader(buf)
  let overallCode: Code = 'UNKNOWN'
  const statuses: DescriptorStatus[] = []
  const responseHeadersToAdd: HeaderValue[] = []
  let dynamicMetadata: JsonObject | undefined
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) overallCode = codeFromNumber(r.int32())
    else if ((field === 2 || field === 3 || field === 6) && type === WIRE.LEN) {
      const outer = r.enter()
      if (field === 2) statuses.push(readStatus(r))
      else if (field === 3) responseHeadersToAdd.push(readHeaderValue(r))
      else dynamicMetadata = readStruct(r)
      r.leave(outer)
    } else r.skip(type)
  }
  return { overallCode, statuses, responseHeadersToAdd, dynamicMetadata }
}
