/**
 * Protobuf encoding of the rate limit messages, byte-compatible with envoy's
 * `envoy.service.ratelimit.v3` (`proto/` holds the matching `.proto` files). Field numbers:
 * `RateLimitRequest{domain=1, descriptors=2, hits_addend=3}`,
 * `RateLimitDescriptor{entries=1, limit=2, hits_addend=3 (UInt64Value)}`, `Entry{key=1, value=2}`,
 * `RateLimitOverride{requests_per_unit=1, unit=2}`,
 * `RateLimitResponse{overall_code=1, statuses=2, response_headers_to_add=3, dynamic_metadata=6}`,
 * `DescriptorStatus{code=1, current_limit=2, limit_remaining=3, duration_until_reset=4}`,
 * `RateLimit{requests_per_unit=1, unit=2, name=3}`, `HeaderValue{key=1, value=2}`.
 *
 * @module
 */
import {
  CODE_NUMBERS,
  UNIT_NUMBERS,
  unitFromNumber,
  type Code,
  type CurrentLimit,
  type Descriptor,
  type DescriptorStatus,
  type Entry,
  type HeaderValue,
  type JsonObject,
  type JsonValue,
  type RateLimitOverride,
  type RateLimitRequest,
  type RateLimitResponse,
} from './types.js'
import { entryTooLong, tooManyDescriptors, tooManyEntries, type RequestLimits } from './limits.js'
import { lenFieldSize, utf8Length, varintFieldSize, WIRE, WireReader, WireWriter } from './wire.js'

export { WireFormatError } from './wire.js'

const CODES: readonly Code[] = ['UNKNOWN', 'OK', 'OVER_LIMIT']

function codeFromNumber(value: number): Code {
  return CODES[value] ?? 'UNKNOWN'
}

// ---------------------------------------------------------------------------------------------
// Request

/** No caps: what {@link decodeRateLimitRequest} applies unless given others. */
const UNLIMITED: RequestLimits = {
  maxDescriptors: Infinity,
  maxEntries: Infinity,
  maxEntryBytes: Infinity,
}

/** Reads a request entry, refusing a key or value longer than the cap before decoding it. */
function readRequestEntry(
  r: WireReader,
  limits: RequestLimits,
  descriptor: number,
  index: number,
): Entry {
  let key = ''
  let value = ''
  while (r.more()) {
    const [field, type] = r.tag()
    if ((field === 1 || field === 2) && type === WIRE.LEN) {
      const stop = r.delimited()
      if (stop - r.pos > limits.maxEntryBytes) {
        throw entryTooLong(limits, descriptor, index, field === 1 ? 'key' : 'value')
      }
      if (field === 1) key = r.text(stop)
      else value = r.text(stop)
    } else r.skip(type)
  }
  return { key, value }
}

function readEntry(r: WireReader): Entry {
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

function readOverride(r: WireReader): RateLimitOverride {
  let requestsPerUnit = 0
  let unit = 0
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) requestsPerUnit = r.uint32()
    else if (field === 2 && type === WIRE.VARINT) unit = r.int32()
    else r.skip(type)
  }
  return { requestsPerUnit, unit: unitFromNumber(unit) }
}

function readUInt64Value(r: WireReader): number {
  let value = 0
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) value = r.varint()
    else r.skip(type)
  }
  return value
}

function readDescriptor(r: WireReader, limits: RequestLimits, index: number): Descriptor {
  const entries: Entry[] = []
  let limit: RateLimitOverride | undefined
  let hitsAddend: number | undefined
  while (r.more()) {
    const [field, type] = r.tag()
    if (type !== WIRE.LEN || field > 3) {
      r.skip(type)
      continue
    }
    const outer = r.enter()
    if (field === 1) {
      if (entries.length >= limits.maxEntries) throw tooManyEntries(limits, index)
      entries.push(readRequestEntry(r, limits, index, entries.length))
    } else if (field === 2) limit = readOverride(r)
    else hitsAddend = readUInt64Value(r)
    r.leave(outer)
  }
  return { entries, limit, hitsAddend }
}

/**
 * Decodes a serialized `envoy.service.ratelimit.v3.RateLimitRequest`.
 *
 * @param limits Caps on descriptors, entries and entry lengths, checked while decoding so that
 *   nothing beyond them is allocated. @default no caps
 * @throws {@link WireFormatError} On malformed data or invalid UTF-8 in a string field.
 * @throws {@link RequestLimitError} At the first cap exceeded.
 */
export function decodeRateLimitRequest(
  buf: Buffer,
  limits: RequestLimits = UNLIMITED,
): RateLimitRequest {
  const r = new WireReader(buf)
  let domain = ''
  const descriptors: Descriptor[] = []
  let hitsAddend = 0
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) domain = r.string()
    else if (field === 2 && type === WIRE.LEN) {
      if (descriptors.length >= limits.maxDescriptors) throw tooManyDescriptors(limits)
      const outer = r.enter()
      descriptors.push(readDescriptor(r, limits, descriptors.length))
      r.leave(outer)
    } else if (field === 3 && type === WIRE.VARINT) hitsAddend = r.uint32()
    else r.skip(type)
  }
  return { domain, descriptors, hitsAddend }
}

function entrySize(entry: Entry): number {
  let size = 0
  if (entry.key !== '') size += lenFieldSize(utf8Length(entry.key))
  if (entry.value !== '') size += lenFieldSize(utf8Length(entry.value))
  return size
}

function overrideSize(limit: RateLimitOverride): number {
  let size = 0
  if (limit.requestsPerUnit !== 0) size += varintFieldSize(limit.requestsPerUnit)
  if (limit.unit !== 'UNKNOWN') size += varintFieldSize(UNIT_NUMBERS[limit.unit])
  return size
}

function descriptorSize(d: Descriptor): number {
  let size = 0
  for (const entry of d.entries) size += lenFieldSize(entrySize(entry))
  if (d.limit !== undefined) size += lenFieldSize(overrideSize(d.limit))
  if (d.hitsAddend !== undefined) {
    size += lenFieldSize(d.hitsAddend === 0 ? 0 : varintFieldSize(d.hitsAddend))
  }
  return size
}

/** Encodes a `RateLimitRequest` (used by the command-line client and the benchmark). */
export function encodeRateLimitRequest(request: RateLimitRequest): Buffer {
  const sizes = request.descriptors.map(descriptorSize)
  let size = 0
  if (request.domain !== '') size += lenFieldSize(utf8Length(request.domain))
  for (const s of sizes) size += lenFieldSize(s)
  if (request.hitsAddend !== 0) size += varintFieldSize(request.hitsAddend)
  const w = new WireWriter(size)
  if (request.domain !== '') w.string(1, request.domain, utf8Length(request.domain))
  request.descriptors.forEach((d, i) => {
    w.tag(2, WIRE.LEN)
    w.varint(sizes[i] ?? 0)
    for (const entry of d.entries) {
      w.tag(1, WIRE.LEN)
      w.varint(entrySize(entry))
      if (entry.key !== '') w.string(1, entry.key, utf8Length(entry.key))
      if (entry.value !== '') w.string(2, entry.value, utf8Length(entry.value))
    }
    if (d.limit !== undefined) {
      w.tag(2, WIRE.LEN)
      w.varint(overrideSize(d.limit))
      if (d.limit.requestsPerUnit !== 0) {
        w.tag(1, WIRE.VARINT)
        w.varint(d.limit.requestsPerUnit)
      }
      if (d.limit.unit !== 'UNKNOWN') {
        w.tag(2, WIRE.VARINT)
        w.varint(UNIT_NUMBERS[d.limit.unit])
      }
    }
    if (d.hitsAddend !== undefined) {
      w.tag(3, WIRE.LEN)
      if (d.hitsAddend === 0) w.varint(0)
      else {
        w.varint(varintFieldSize(d.hitsAddend))
        w.tag(1, WIRE.VARINT)
        w.varint(d.hitsAddend)
      }
    }
  })
  if (request.hitsAddend !== 0) {
    w.tag(3, WIRE.VARINT)
    w.varint(request.hitsAddend)
  }
  return w.buf
}

// ---------------------------------------------------------------------------------------------
// google.protobuf.Struct

function valueSize(value: JsonValue): number {
  // null_value = 0 (NULL_VALUE) and booleans: tag + one byte; numbers: tag + 8 bytes.
  if (value === null || typeof value === 'boolean') return 2
  if (typeof value === 'number') return 9
  if (typeof value === 'string') return lenFieldSize(utf8Length(value))
  return Array.isArray(value) ? lenFieldSize(listSize(value)) : lenFieldSize(structSize(value))
}

function listSize(list: readonly JsonValue[]): number {
  let size = 0
  for (const v of list) size += lenFieldSize(valueSize(v))
  return size
}

function fieldEntrySize(key: string, value: JsonValue): number {
  return lenFieldSize(utf8Length(key)) + lenFieldSize(valueSize(value))
}

function structSize(struct: JsonObject): number {
  let size = 0
  for (const [key, value] of Object.entries(struct))
    size += lenFieldSize(fieldEntrySize(key, value))
  return size
}

function writeValue(w: WireWriter, value: JsonValue): void {
  if (value === null) {
    w.tag(1, WIRE.VARINT)
    w.varint(0)
  } else if (typeof value === 'number') {
    w.tag(2, WIRE.I64)
    w.double(value)
  } else if (typeof value === 'string') {
    w.string(3, value, utf8Length(value))
  } else if (typeof value === 'boolean') {
    w.tag(4, WIRE.VARINT)
    w.varint(value ? 1 : 0)
  } else if (Array.isArray(value)) {
    w.tag(6, WIRE.LEN)
    w.varint(listSize(value))
    for (const v of value) {
      w.tag(1, WIRE.LEN)
      w.varint(valueSize(v))
      writeValue(w, v)
    }
  } else {
    w.tag(5, WIRE.LEN)
    w.varint(structSize(value))
    writeStructFields(w, value)
  }
}

function writeStructFields(w: WireWriter, struct: JsonObject): void {
  for (const [key, value] of Object.entries(struct)) {
    w.tag(1, WIRE.LEN)
    w.varint(fieldEntrySize(key, value))
    w.string(1, key, utf8Length(key))
    w.tag(2, WIRE.LEN)
    w.varint(valueSize(value))
    writeValue(w, value)
  }
}

function readValue(r: WireReader): JsonValue {
  let value: JsonValue = null
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) {
      r.varint()
      value = null
    } else if (field === 2 && type === WIRE.I64) value = r.double()
    else if (field === 3 && type === WIRE.LEN) value = r.string()
    else if (field === 4 && type === WIRE.VARINT) value = r.varint() !== 0
    else if ((field === 5 || field === 6) && type === WIRE.LEN) {
      const outer = r.enter()
      value = field === 5 ? readStruct(r) : readList(r)
      r.leave(outer)
    } else r.skip(type)
  }
  return value
}

function readList(r: WireReader): JsonValue[] {
  const list: JsonValue[] = []
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) {
      const outer = r.enter()
      list.push(readValue(r))
      r.leave(outer)
    } else r.skip(type)
  }
  return list
}

function readStruct(r: WireReader): JsonObject {
  const struct: JsonObject = {}
  while (r.more()) {
    const [field, type] = r.tag()
    if (field !== 1 || type !== WIRE.LEN) {
      r.skip(type)
      continue
    }
    const outer = r.enter()
    let key = ''
    let value: JsonValue = null
    while (r.more()) {
      const [f, t] = r.tag()
      if (f === 1 && t === WIRE.LEN) key = r.string()
      else if (f === 2 && t === WIRE.LEN) {
        const fieldEnd = r.enter()
        value = readValue(r)
        r.leave(fieldEnd)
      } else r.skip(t)
    }
    struct[key] = value
    r.leave(outer)
  }
  return struct
}

// ---------------------------------------------------------------------------------------------
// Response

function currentLimitSize(limit: CurrentLimit): number {
  let size = 0
  if (limit.requestsPerUnit !== 0) size += varintFieldSize(limit.requestsPerUnit)
  if (limit.unit !== 'UNKNOWN') size += varintFieldSize(UNIT_NUMBERS[limit.unit])
  if (limit.name !== undefined && limit.name !== '') size += lenFieldSize(utf8Length(limit.name))
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
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) requestsPerUnit = r.uint32()
    else if (field === 2 && type === WIRE.VARINT) unit = r.int32()
    else if (field === 3 && type === WIRE.LEN) name = r.string()
    else r.skip(type)
  }
  return { requestsPerUnit, unit: unitFromNumber(unit), ...(name === undefined ? {} : { name }) }
}

function readDurationSeconds(r: WireReader): number {
  let seconds = 0
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) seconds = r.varint()
    else r.skip(type)
  }
  return seconds
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
      else durationUntilReset = readDurationSeconds(r)
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
      else if (field === 3) {
        const entry = readEntry(r)
        responseHeadersToAdd.push({ key: entry.key, value: entry.value })
      } else dynamicMetadata = readStruct(r)
      r.leave(outer)
    } else r.skip(type)
  }
  return { overallCode, statuses, responseHeadersToAdd, dynamicMetadata }
}

// ---------------------------------------------------------------------------------------------
// grpc.health.v1

/** `grpc.health.v1.HealthCheckResponse.ServingStatus` numbers. */
export const SERVING_STATUS = {
  UNKNOWN: 0,
  SERVING: 1,
  NOT_SERVING: 2,
  SERVICE_UNKNOWN: 3,
} as const

/** Name of a health serving status. */
export type ServingStatus = keyof typeof SERVING_STATUS

/** `grpc.health.v1.HealthCheckRequest`. */
export interface HealthCheckRequest {
  readonly service: string
}

/** Decodes `grpc.health.v1.HealthCheckRequest{service = 1}`. */
export function decodeHealthCheckRequest(buf: Buffer): HealthCheckRequest {
  const r = new WireReader(buf)
  let service = ''
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) service = r.string()
    else r.skip(type)
  }
  return { service }
}

/** Encodes `grpc.health.v1.HealthCheckRequest{service = 1}`. */
export function encodeHealthCheckRequest({ service }: HealthCheckRequest): Buffer {
  const length = utf8Length(service)
  const w = new WireWriter(service === '' ? 0 : lenFieldSize(length))
  if (service !== '') w.string(1, service, length)
  return w.buf
}

/** Encodes `grpc.health.v1.HealthCheckResponse{status = 1}`. */
export function encodeHealthCheckResponse(status: ServingStatus): Buffer {
  const value = SERVING_STATUS[status]
  const w = new WireWriter(value === 0 ? 0 : 2)
  if (value !== 0) {
    w.tag(1, WIRE.VARINT)
    w.varint(value)
  }
  return w.buf
}

/** Decodes `grpc.health.v1.HealthCheckResponse{status = 1}`. */
export function decodeHealthCheckResponse(buf: Buffer): ServingStatus {
  const r = new WireReader(buf)
  let value = 0
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) value = r.int32()
    else r.skip(type)
  }
  const names = Object.keys(SERVING_STATUS) as ServingStatus[]
  return names.find((name) => SERVING_STATUS[name] === value) ?? 'UNKNOWN'
}
