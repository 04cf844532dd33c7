/**
 * Protobuf encoding of `envoy.service.ratelimit.v3.RateLimitRequest` and its parts:
 * `RateLimitRequest{domain=1, descriptors=2, hits_addend=3}`,
 * `RateLimitDescriptor{entries=1, limit=2, hits_addend=3 (UInt64Value)}`, `Entry{key=1, value=2}`,
 * `RateLimitOverride{requests_per_unit=1, unit=2}`. Decoding applies the request caps while it
 * reads, so nothing beyond them is allocated.
 *
 * @see https://github.com/envoyproxy/envoy/blob/main/api/envoy/service/ratelimit/v3/rls.proto
 * @see https://github.com/envoyproxy/envoy/blob/main/api/envoy/extensions/common/ratelimit/v3/ratelimit.proto
 * @module
 */
import { entryTooLong, tooManyDescriptors, tooManyEntries, type RequestLimits } from '../limits.js'
import {
  UNIT_NUMBERS,
  unitFromNumber,
  type Descriptor,
  type Entry,
  type RateLimitOverride,
  type RateLimitRequest,
} from '../types.js'
import {
  lenFieldSize,
  readVarintField,
  utf8Length,
  varintFieldSize,
  WIRE,
  WireReader,
  WireWriter,
} from './wire.js'

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
    else hitsAddend = readVarintField(r, 1) // google.protobuf.UInt64Value.value
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
