/**
 * The proto3 JSON mapping of the rate limit messages, as used by the HTTP `/json` endpoint.
 *
 * Input follows Go's `protojson.Unmarshal`: field names in lowerCamelCase or as in the `.proto`
 * (snake_case), enums by name or number, 64-bit integers as numbers or strings, `null` meaning
 * "not set", and any unknown field, duplicate field or wrong type rejected. Output follows
 * `protojson.Marshal`: lowerCamelCase, enum names, zero values omitted, durations as `"58s"`,
 * fields in declaration order.
 *
 * @module
 */
import { isUtf8 } from 'node:buffer'
import { RateLimitError } from '../errors.js'
import { parseCommonJsonRequest } from './json-fast.js'
import {
  entryTooLong,
  longerThan,
  tooManyDescriptors,
  tooManyEntries,
  type RequestLimits,
} from './limits.js'
import {
  unitFromNumber,
  type CurrentLimit,
  type Descriptor,
  type DescriptorStatus,
  type Entry,
  type HeaderValue,
  type RateLimitOverride,
  type RateLimitRequest,
  type RateLimitResponse,
  type Unit,
} from './types.js'

/** Why a `/json` body could not be read. */
export type JsonRequestErrorCode =
  'ERR_EMPTY_BODY' | 'ERR_INVALID_UTF8' | 'ERR_INVALID_JSON' | 'ERR_INVALID_MESSAGE'

/** Thrown when a `/json` request body is not a valid proto3 JSON `RateLimitRequest`. */
export class JsonRequestError extends RateLimitError {
  declare readonly code: JsonRequestErrorCode
  // eslint-disable-next-line @typescript-eslint/no-useless-constructor -- narrows `code`
  constructor(code: JsonRequestErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options)
  }
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

function invalid(message: string): JsonRequestError {
  return new JsonRequestError('ERR_INVALID_MESSAGE', message)
}

/**
 * Returns the fields of a JSON object keyed by their proto name, rejecting unknown and duplicate
 * fields. `names` maps each accepted spelling (JSON name and proto name) to the proto name.
 */
function fieldsOf(
  value: Json,
  message: string,
  names: ReadonlyMap<string, string>,
): Partial<Record<string, Json>> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(`${message}: expected a JSON object`)
  }
  // Keyed by proto names only (no prototype names), so a plain object is a safe map here.
  const fields: Partial<Record<string, Json>> = {}
  for (const key of Object.keys(value)) {
    const name = names.get(key)
    if (name === undefined) throw invalid(`${message}: unknown field "${key}"`)
    if (fields[name] !== undefined) throw invalid(`${message}: duplicate field "${key}"`)
    fields[name] = value[key]
  }
  return fields
}

function readString(value: Json | undefined, field: string): string {
  if (value === undefined || value === null) return ''
  if (typeof value !== 'string') throw invalid(`invalid value for string field ${field}`)
  return value
}

function readInteger(value: Json | undefined, field: string, max: number): number {
  if (value === undefined || value === null) return 0
  let n: number
  if (typeof value === 'number') n = value
  else if (typeof value === 'string' && /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(value))
    n = Number(value)
  else throw invalid(`invalid value for integer field ${field}`)
  if (!Number.isInteger(n) || n < 0 || n > max)
    throw invalid(`invalid value for integer field ${field}`)
  return n
}

function readList(value: Json | undefined, field: string): Json[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) throw invalid(`invalid value for repeated field ${field}`)
  return value
}

const OVERRIDE_UNITS: readonly Unit[] = [
  'UNKNOWN',
  'SECOND',
  'MINUTE',
  'HOUR',
  'DAY',
  'MONTH',
  'YEAR',
]

function readUnit(value: Json | undefined): Unit {
  if (value === undefined || value === null) return 'UNKNOWN'
  if (typeof value === 'string') {
    const unit = OVERRIDE_UNITS.find((name) => name === value)
    if (unit === undefined) throw invalid(`invalid value for enum field unit: "${value}"`)
    return unit
  }
  if (typeof value === 'number' && Number.isInteger(value) && Math.abs(value) <= 2 ** 31) {
    return unitFromNumber(value)
  }
  throw invalid('invalid value for enum field unit')
}

/** Each accepted spelling of a message's fields (JSON name and proto name) → its proto name. */
const ENTRY_FIELDS = new Map([
  ['key', 'key'],
  ['value', 'value'],
])
const OVERRIDE_FIELDS = new Map([
  ['requestsPerUnit', 'requests_per_unit'],
  ['requests_per_unit', 'requests_per_unit'],
  ['unit', 'unit'],
])
const DESCRIPTOR_FIELDS = new Map([
  ['entries', 'entries'],
  ['limit', 'limit'],
  ['hitsAddend', 'hits_addend'],
  ['hits_addend', 'hits_addend'],
])
const REQUEST_FIELDS = new Map([
  ['domain', 'domain'],
  ['descriptors', 'descriptors'],
  ['hitsAddend', 'hits_addend'],
  ['hits_addend', 'hits_addend'],
])

/** No caps: what {@link parseJsonRateLimitRequest} applies unless given others. */
const UNLIMITED: RequestLimits = {
  maxDescriptors: Infinity,
  maxEntries: Infinity,
  maxEntryBytes: Infinity,
}

function readEntry(value: Json, limits: RequestLimits, descriptor: number, index: number): Entry {
  const fields = fieldsOf(value, 'RateLimitDescriptor.Entry', ENTRY_FIELDS)
  const key = readString(fields.key, 'key')
  if (longerThan(key, limits.maxEntryBytes)) throw entryTooLong(limits, descriptor, index, 'key')
  const text = readString(fields.value, 'value')
  if (longerThan(text, limits.maxEntryBytes)) {
    throw entryTooLong(limits, descriptor, index, 'value')
  }
  return { key, value: text }
}

function readOverride(value: Json): RateLimitOverride {
  const fields = fieldsOf(value, 'RateLimitDescriptor.RateLimitOverride', OVERRIDE_FIELDS)
  return {
    requestsPerUnit: readInteger(fields.requests_per_unit, 'requests_per_unit', 2 ** 32 - 1),
    unit: readUnit(fields.unit),
  }
}

function readDescriptor(value: Json, limits: RequestLimits, index: number): Descriptor {
  const fields = fieldsOf(value, 'RateLimitDescriptor', DESCRIPTOR_FIELDS)
  const limit = fields.limit
  const hitsAddend = fields.hits_addend
  const entries = readList(fields.entries, 'entries')
  if (entries.length > limits.maxEntries) throw tooManyEntries(limits, index)
  return {
    entries: entries.map((entry, i) => readEntry(entry, limits, index, i)),
    limit: limit === undefined || limit === null ? undefined : readOverride(limit),
    hitsAddend:
      hitsAddend === undefined || hitsAddend === null
        ? undefined
        : // Any uint64 is a valid UInt64Value; the service refuses more than it can count.
          readInteger(hitsAddend, 'hits_addend', 2 ** 64 - 1),
  }
}

/**
 * Parses a `/json` request body: the common shape in one pass over the bytes
 * (`json-fast.ts`), anything else with {@link parseJsonRequestGeneral}.
 *
 * @param body Raw request bytes (must be UTF-8).
 * @param limits Caps on descriptors, entries and entry lengths. @default no caps
 * @throws {@link JsonRequestError} On an empty body, invalid UTF-8, malformed JSON, unknown or
 *   duplicate fields, or values of the wrong type.
 * @throws {@link RequestLimitError} At the first cap exceeded.
 */
export function parseJsonRateLimitRequest(
  body: Buffer,
  limits: RequestLimits = UNLIMITED,
): RateLimitRequest {
  return parseCommonJsonRequest(body, limits) ?? parseJsonRequestGeneral(body, limits)
}

/**
 * Parses any `/json` request body: `JSON.parse`, then the proto3 JSON checks of every field
 * (what {@link parseJsonRateLimitRequest} does for bodies outside the fast path's shape).
 *
 * @throws As {@link parseJsonRateLimitRequest}.
 */
export function parseJsonRequestGeneral(body: Buffer, limits: RequestLimits): RateLimitRequest {
  if (body.length === 0) throw new JsonRequestError('ERR_EMPTY_BODY', 'request body is empty')
  if (!isUtf8(body))
    throw new JsonRequestError('ERR_INVALID_UTF8', 'request body is not valid UTF-8')
  let json: Json
  try {
    json = JSON.parse(body.toString('utf8')) as Json
  } catch (error) {
    throw new JsonRequestError(
      'ERR_INVALID_JSON',
      `request body is not valid JSON: ${(error as Error).message}`,
      {
        cause: error,
      },
    )
  }
  const fields = fieldsOf(json, 'RateLimitRequest', REQUEST_FIELDS)
  const descriptors = readList(fields.descriptors, 'descriptors')
  if (descriptors.length > limits.maxDescriptors) throw tooManyDescriptors(limits)
  return {
    domain: readString(fields.domain, 'domain'),
    descriptors: descriptors.map((descriptor, i) => readDescriptor(descriptor, limits, i)),
    hitsAddend: readInteger(fields.hits_addend, 'hits_addend', 2 ** 32 - 1),
  }
}

// The writers below append `"name":value` members with a separator that turns into a comma after
// the first member: no array to join and no `slice` of the built text (which would flatten it,
// a copy per object).

function currentLimitJson(limit: CurrentLimit): string {
  let out = '{'
  let sep = ''
  if (limit.name !== undefined && limit.name !== '') {
    out += `"name":${JSON.stringify(limit.name)}`
    sep = ','
  }
  if (limit.requestsPerUnit !== 0) {
    out += `${sep}"requestsPerUnit":${String(limit.requestsPerUnit)}`
    sep = ','
  }
  if (limit.unit !== 'UNKNOWN') {
    out += `${sep}"unit":"${limit.unit}"`
    sep = ','
  }
  if (limit.unitMultiplier !== undefined) {
    out += `${sep}"unitMultiplier":${String(limit.unitMultiplier)}`
  }
  return `${out}}`
}

function statusJson(status: DescriptorStatus): string {
  let out = '{'
  let sep = ''
  if (status.code !== 'UNKNOWN') {
    out += `"code":"${status.code}"`
    sep = ','
  }
  if (status.currentLimit !== undefined) {
    out += `${sep}"currentLimit":${currentLimitJson(status.currentLimit)}`
    sep = ','
  }
  if (status.limitRemaining !== 0) {
    out += `${sep}"limitRemaining":${String(status.limitRemaining)}`
    sep = ','
  }
  if (status.durationUntilReset !== undefined) {
    out += `${sep}"durationUntilReset":"${String(status.durationUntilReset)}s"`
  }
  return `${out}}`
}

function headerJson(header: HeaderValue): string {
  if (header.key === '')
    return header.value === '' ? '{}' : `{"value":${JSON.stringify(header.value)}}`
  return header.value === ''
    ? `{"key":${JSON.stringify(header.key)}}`
    : `{"key":${JSON.stringify(header.key)},"value":${JSON.stringify(header.value)}}`
}

function jsonList<T>(items: readonly T[], write: (item: T) => string): string {
  let out = '['
  for (let i = 0; i < items.length; i++) out += `${i === 0 ? '' : ','}${write(items[i] as T)}`
  return `${out}]`
}

/**
 * Serializes a response in the proto3 JSON mapping (what `/json` returns).
 *
 * @returns Compact JSON text.
 */
export function formatJsonRateLimitResponse(response: RateLimitResponse): string {
  let out = '{'
  let sep = ''
  if (response.overallCode !== 'UNKNOWN') {
    out += `"overallCode":"${response.overallCode}"`
    sep = ','
  }
  if (response.statuses.length > 0) {
    out += `${sep}"statuses":${jsonList(response.statuses, statusJson)}`
    sep = ','
  }
  if (response.responseHeadersToAdd.length > 0) {
    out += `${sep}"responseHeadersToAdd":${jsonList(response.responseHeadersToAdd, headerJson)}`
    sep = ','
  }
  if (response.dynamicMetadata !== undefined) {
    out += `${sep}"dynamicMetadata":${JSON.stringify(response.dynamicMetadata)}`
  }
  return `${out}}`
}
