/**
 * The fast path of the `/json` request parser: a single pass over the request bytes for the
 * shape clients send (Envoy's and every SDK's): printable-ASCII strings without escapes,
 * non-negative integers, the fields `domain`, `descriptors`, `hitsAddend` / `hits_addend` and,
 * per descriptor, `entries` and `hitsAddend` / `hits_addend`, each at most once. It builds the
 * same {@link RateLimitRequest} as the general parser (`json.ts`: `JSON.parse`, then the proto3
 * JSON checks) for every body it accepts, and gives up on anything else (escapes, non-ASCII
 * bytes, `null`, numbers as strings or with a sign, fraction or exponent, a descriptor `limit`,
 * a field twice, a value beyond its field or a request beyond its caps, malformed JSON), which
 * the general parser then reads and answers, errors included. `JSON.parse` of a 100-byte body
 * costs more than the rest of a decision's parsing; this path does not allocate the generic
 * object tree at all.
 *
 * @module
 */
import type { RequestLimits } from './limits.js'
import type { Descriptor, Entry, RateLimitRequest } from './types.js'

const QUOTE = 0x22
const COMMA = 0x2c
const COLON = 0x3a
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const BACKSLASH = 0x5c
const ZERO = 0x30
const NINE = 0x39

/** Largest integer read here: 15 digits stay exact in a double. */
const MAX_DIGITS = 15

/**
 * Thrown inside the scanner when the body leaves the fast path's shape; never escapes it. One
 * instance, made once: giving up costs no stack capture.
 */
const GIVE_UP = new Error('not the common /json shape')

/**
 * The field names read here, each as {@link Scanner.name} returns it. `name` takes a range of
 * this list, so each object's names stay next to each other: the request's 0–3, a descriptor's
 * 2–4, an entry's 5–6.
 */
const NAMES = ['domain', 'descriptors', 'hitsAddend', 'hits_addend', 'entries', 'key', 'value']
const DOMAIN = 0
const DESCRIPTORS = 1
const HITS_ADDEND = 2
const HITS_ADDEND_SNAKE = 3
const ENTRIES = 4
const KEY = 5
const VALUE = 6
const NAME_BYTES = NAMES.map((name) => Buffer.from(name, 'latin1'))

/** A cursor over the request bytes. */
class Scanner {
  readonly #bytes: Buffer
  #at = 0

  constructor(bytes: Buffer) {
    this.#bytes = bytes
  }

  /** Skips JSON whitespace; returns the next byte (or -1 at the end). */
  peek(): number {
    const bytes = this.#bytes
    let at = this.#at
    while (at < bytes.length) {
      const byte = bytes[at] as number
      if (byte !== 0x20 && byte !== 0x0a && byte !== 0x0d && byte !== 0x09) break
      at++
    }
    this.#at = at
    return at < bytes.length ? (bytes[at] as number) : -1
  }

  /** Consumes `byte` (after whitespace) or gives up. */
  expect(byte: number): void {
    if (this.peek() !== byte) throw GIVE_UP
    this.#at++
  }

  /** Consumes `byte` (after whitespace) when it is next. */
  accept(byte: number): boolean {
    if (this.peek() !== byte) return false
    this.#at++
    return true
  }

  /**
   * Reads the rest of a string whose opening quote was read: printable ASCII without escapes,
   * or gives up.
   *
   * @returns The index of its closing quote (the cursor is then past it).
   */
  #stringEnd(): number {
    const bytes = this.#bytes
    let at = this.#at
    for (;;) {
      if (at >= bytes.length) throw GIVE_UP
      const byte = bytes[at] as number
      if (byte === QUOTE) break
      if (byte < 0x20 || byte > 0x7e || byte === BACKSLASH) throw GIVE_UP
      at++
    }
    this.#at = at + 1
    return at
  }

  /** A string value (after whitespace), or gives up. */
  string(): string {
    this.expect(QUOTE)
    const start = this.#at
    return this.#bytes.toString('latin1', start, this.#stringEnd())
  }

  /**
   * A member name and its colon (after whitespace): its index in {@link NAMES} among
   * `first`..`last`, or gives up (another name). Builds no string.
   */
  name(first: number, last: number): number {
    this.expect(QUOTE)
    const bytes = this.#bytes
    const start = this.#at
    const length = this.#stringEnd() - start
    for (let n = first; n <= last; n++) {
      const expected = NAME_BYTES[n] as Buffer
      if (expected.length !== length) continue
      let i = 0
      while (i < length && bytes[start + i] === expected[i]) i++
      if (i === length) {
        this.expect(COLON)
        return n
      }
    }
    throw GIVE_UP
  }

  /** A non-negative integer of at most {@link MAX_DIGITS} digits and at most `max`, or gives up. */
  integer(max: number): number {
    if (this.peek() === -1) throw GIVE_UP
    const bytes = this.#bytes
    const start = this.#at
    let at = start
    let value = 0
    while (at < bytes.length) {
      const byte = bytes[at] as number
      if (byte < ZERO || byte > NINE) break
      value = value * 10 + (byte - ZERO)
      at++
    }
    const digits = at - start
    if (digits === 0 || digits > MAX_DIGITS) throw GIVE_UP
    // JSON has no leading zeros; `.`, `e` and `E` would make it a fraction or exponent.
    if (digits > 1 && bytes[start] === ZERO) throw GIVE_UP
    const next = at < bytes.length ? bytes[at] : -1
    if (next === 0x2e || next === 0x65 || next === 0x45) throw GIVE_UP
    if (value > max) throw GIVE_UP
    this.#at = at
    return value
  }

  /** Whether every byte was read (trailing whitespace aside). */
  done(): boolean {
    return this.peek() === -1
  }
}

function readEntry(scanner: Scanner, limits: RequestLimits): Entry {
  let key: string | undefined
  let value: string | undefined
  scanner.expect(OPEN_BRACE)
  if (!scanner.accept(CLOSE_BRACE)) {
    do {
      if (scanner.name(KEY, VALUE) === KEY) {
        if (key !== undefined) throw GIVE_UP
        key = scanner.string()
      } else {
        if (value !== undefined) throw GIVE_UP
        value = scanner.string()
      }
    } while (scanner.accept(COMMA))
    scanner.expect(CLOSE_BRACE)
  }
  key ??= ''
  value ??= ''
  // Printable ASCII: one byte per character.
  if (key.length > limits.maxEntryBytes || value.length > limits.maxEntryBytes) throw GIVE_UP
  return { key, value }
}

/**
 * Reads `[` items `]`, each with `read`, giving up past `max` items. `read` takes `limits`
 * itself, so no closure is made per list.
 */
function readList<T>(
  scanner: Scanner,
  max: number,
  limits: RequestLimits,
  read: (scanner: Scanner, limits: RequestLimits) => T,
): T[] {
  const items: T[] = []
  scanner.expect(OPEN_BRACKET)
  if (scanner.accept(CLOSE_BRACKET)) return items
  do {
    if (items.length === max) throw GIVE_UP
    items.push(read(scanner, limits))
  } while (scanner.accept(COMMA))
  scanner.expect(CLOSE_BRACKET)
  return items
}

function readDescriptor(scanner: Scanner, limits: RequestLimits): Descriptor {
  let entries: Entry[] | undefined
  let hitsAddend: number | undefined
  scanner.expect(OPEN_BRACE)
  if (!scanner.accept(CLOSE_BRACE)) {
    do {
      if (scanner.name(HITS_ADDEND, ENTRIES) === ENTRIES) {
        if (entries !== undefined) throw GIVE_UP
        entries = readList(scanner, limits.maxEntries, limits, readEntry)
      } else {
        if (hitsAddend !== undefined) throw GIVE_UP
        hitsAddend = scanner.integer(Number.MAX_SAFE_INTEGER)
      }
    } while (scanner.accept(COMMA))
    scanner.expect(CLOSE_BRACE)
  }
  return { entries: entries ?? [], limit: undefined, hitsAddend }
}

function readRequest(scanner: Scanner, limits: RequestLimits): RateLimitRequest {
  let domain: string | undefined
  let descriptors: Descriptor[] | undefined
  let hitsAddend: number | undefined
  scanner.expect(OPEN_BRACE)
  if (!scanner.accept(CLOSE_BRACE)) {
    do {
      const name = scanner.name(DOMAIN, HITS_ADDEND_SNAKE)
      if (name === DOMAIN) {
        if (domain !== undefined) throw GIVE_UP
        domain = scanner.string()
      } else if (name === DESCRIPTORS) {
        if (descriptors !== undefined) throw GIVE_UP
        descriptors = readList(scanner, limits.maxDescriptors, limits, readDescriptor)
      } else {
        if (hitsAddend !== undefined) throw GIVE_UP
        hitsAddend = scanner.integer(2 ** 32 - 1)
      }
    } while (scanner.accept(COMMA))
    scanner.expect(CLOSE_BRACE)
  }
  if (!scanner.done()) throw GIVE_UP
  return { domain: domain ?? '', descriptors: descriptors ?? [], hitsAddend: hitsAddend ?? 0 }
}

/**
 * Parses a `/json` request body of the common shape (see the module comment).
 *
 * @returns The request, exactly as the general parser would return it, or undefined when the
 *   body is not of that shape (the general parser then decides).
 */
export function parseCommonJsonRequest(
  body: Buffer,
  limits: RequestLimits,
): RateLimitRequest | undefined {
  try {
    return readRequest(new Scanner(body), limits)
  } catch (error) {
    if (error === GIVE_UP) return undefined
    throw error
  }
}
