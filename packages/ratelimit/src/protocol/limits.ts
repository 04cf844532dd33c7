/**
 * Caps on what one rate limit request may carry (a Gatehouse addition; upstream has none): the
 * number of descriptors, the number of entries per descriptor and the length of each entry's
 * key and value. The decoders stop at the first excess, before allocating anything beyond it,
 * and {@link RateLimitService} checks requests built by other code the same way.
 *
 * @module
 */
import { RateLimitError } from '../errors.js'
import type { RateLimitRequest } from './types.js'

/** The caps (settings `MAX_DESCRIPTORS_PER_REQUEST`, `MAX_ENTRIES_PER_DESCRIPTOR`, `MAX_DESCRIPTOR_ENTRY_BYTES`). */
export interface RequestLimits {
  /** `MAX_DESCRIPTORS_PER_REQUEST`: descriptors in one request. @default 64 */
  readonly maxDescriptors: number
  /** `MAX_ENTRIES_PER_DESCRIPTOR`: entries in one descriptor. @default 32 */
  readonly maxEntries: number
  /** `MAX_DESCRIPTOR_ENTRY_BYTES`: UTF-8 bytes of one entry key, and of one entry value. @default 4096 */
  readonly maxEntryBytes: number
}

/** The default caps. */
export const DEFAULT_REQUEST_LIMITS: RequestLimits = Object.freeze({
  maxDescriptors: 64,
  maxEntries: 32,
  maxEntryBytes: 4096,
})

/**
 * Thrown by the decoders when a request exceeds a {@link RequestLimits} cap. The message names
 * the cap's setting and value, e.g.
 * `descriptor 1 has more than 32 entries (MAX_ENTRIES_PER_DESCRIPTOR=32)`. The service answers it
 * as a `service_error` (gRPC UNKNOWN, `/json` 400).
 */
export class RequestLimitError extends RateLimitError {
  declare readonly code: 'ERR_REQUEST_TOO_LARGE'
  constructor(message: string) {
    super('ERR_REQUEST_TOO_LARGE', message)
  }
}

/** The error for more than `limits.maxDescriptors` descriptors. */
export function tooManyDescriptors(limits: RequestLimits): RequestLimitError {
  const max = String(limits.maxDescriptors)
  return new RequestLimitError(
    `rate limit request has more than ${max} descriptors (MAX_DESCRIPTORS_PER_REQUEST=${max})`,
  )
}

/** The error for more than `limits.maxEntries` entries in descriptor `index`. */
export function tooManyEntries(limits: RequestLimits, index: number): RequestLimitError {
  const max = String(limits.maxEntries)
  return new RequestLimitError(
    `descriptor ${String(index)} has more than ${max} entries (MAX_ENTRIES_PER_DESCRIPTOR=${max})`,
  )
}

/** The error for an entry key or value longer than `limits.maxEntryBytes`. */
export function entryTooLong(
  limits: RequestLimits,
  descriptor: number,
  entry: number,
  field: 'key' | 'value',
): RequestLimitError {
  const max = String(limits.maxEntryBytes)
  return new RequestLimitError(
    `descriptor ${String(descriptor)}, entry ${String(entry)}: ${field} is longer than ${max} bytes (MAX_DESCRIPTOR_ENTRY_BYTES=${max})`,
  )
}

/**
 * True when `text` is longer than `maxBytes` in UTF-8. Costs nothing for strings that cannot
 * reach the cap (a UTF-16 unit is at most 3 UTF-8 bytes), so it runs on every entry.
 */
export function longerThan(text: string, maxBytes: number): boolean {
  if (text.length > maxBytes) return true
  return text.length * 3 > maxBytes && Buffer.byteLength(text, 'utf8') > maxBytes
}

/**
 * Finds the first cap `request` exceeds.
 *
 * @returns The error to answer with, or undefined when the request is within every cap.
 */
export function checkRequestLimits(
  request: RateLimitRequest,
  limits: RequestLimits,
): RequestLimitError | undefined {
  const descriptors = request.descriptors
  if (descriptors.length > limits.maxDescriptors) return tooManyDescriptors(limits)
  const maxBytes = limits.maxEntryBytes
  for (let i = 0; i < descriptors.length; i++) {
    const entries = descriptors[i]?.entries ?? []
    if (entries.length > limits.maxEntries) return tooManyEntries(limits, i)
    for (let j = 0; j < entries.length; j++) {
      const entry = entries[j]
      if (entry === undefined) continue
      if (longerThan(entry.key, maxBytes)) return entryTooLong(limits, i, j, 'key')
      if (longerThan(entry.value, maxBytes)) return entryTooLong(limits, i, j, 'value')
    }
  }
  return undefined
}
