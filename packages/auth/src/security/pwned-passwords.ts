/**
 * Leaked-password protection (upstream `PasswordConfiguration.HIBP` and the `supabase/hibp`
 * client): a password is looked up in the Pwned Passwords range API by k-anonymity. Only the
 * first five hex characters of its upper-case SHA-1 leave the server (`GET <base>/range/<prefix>`
 * with `Add-Padding: true`); the answer lists the suffixes of every known hash with that prefix,
 * one `SUFFIX:COUNT` line each, padding lines carrying count 0.
 *
 * @see https://haveibeenpwned.com/API/v3#SearchingPwnedPasswordsByRange
 * @module
 */
import { createHash } from 'node:crypto'
import type { HibpSettings } from '../conf/settings.js'
import { readBounded, type Fetch } from '../form-post.js'
import { BloomFilter } from './bloom-filter.js'

/** Largest range answer read, in bytes: real ones are about 40 KB (padded: up to 1 000 lines). */
export const MAX_RANGE_BYTES = 262_144

/** One answer line: a 35-hex-character suffix, a colon and a count. */
const RANGE_LINE = /^([0-9A-F]{35}):([0-9]{1,12})$/

/** The outcome of a lookup: `unknown` when the range API could not be asked. */
export type PwnedVerdict = 'pwned' | 'not_pwned' | 'unknown'

/** Where failed lookups are reported (a pino logger fits). */
export interface PwnedPasswordsLog {
  warn(fields: Record<string, unknown>, message: string): void
}

/**
 * Looks passwords up in the Pwned Passwords range API. Failures never throw: they are logged
 * and answered `unknown`; the caller applies `PASSWORD_HIBP_FAIL_CLOSED`.
 */
export interface PwnedPasswords {
  /** `PASSWORD_HIBP_FAIL_CLOSED`: an `unknown` verdict refuses the password. */
  readonly failClosed: boolean
  /** Whether the password is in the data set. */
  check(password: string): Promise<PwnedVerdict>
}

/**
 * Known-pwned hashes (upstream `HIBPBloomCache`): the pwned suffixes of each range answer go into
 * a {@link BloomFilter} of `PASSWORD_HIBP_BLOOM_ITEMS` hashes, emptied when 80 % full so the
 * false-positive rate stays near `PASSWORD_HIBP_BLOOM_FALSE_POSITIVES`.
 */
export class PwnedHashCache {
  readonly #filter: BloomFilter
  readonly #limit: number
  #count = 0

  /**
   * @param items Hashes the filter is sized for.
   * @param falsePositives False-positive rate when full.
   * @throws {RangeError} As {@link BloomFilter}.
   */
  constructor(items: number, falsePositives: number) {
    this.#filter = new BloomFilter(items, falsePositives)
    this.#limit = Math.floor((4 * items) / 5)
  }

  /** Bytes of memory the filter takes. */
  get byteLength(): number {
    return this.#filter.byteLength
  }

  /** Records the 40-hex-character upper-case SHA-1 hashes `prefix + suffix` of a range answer. */
  add(prefix: string, suffixes: readonly string[]): void {
    this.#count += suffixes.length
    if (this.#count > this.#limit) {
      this.#filter.clear()
      this.#count = suffixes.length
    }
    for (const suffix of suffixes) this.#filter.add(Buffer.from(prefix + suffix, 'hex'))
  }

  /** Whether a hash was probably recorded (see {@link BloomFilter.has}). */
  has(hash: string): boolean {
    return this.#filter.has(Buffer.from(hash, 'hex'))
  }
}

/** Options of {@link RangeApiPwnedPasswords}. */
export interface RangeApiOptions {
  /** @default the global `fetch` */
  readonly fetch?: Fetch | undefined
  /** Where failed lookups are reported. @default nowhere */
  readonly log?: PwnedPasswordsLog | undefined
}

/**
 * The pwned suffixes (count above 0) of a range answer.
 *
 * @throws {Error} When a non-empty line is not `SUFFIX:COUNT` (a proxy's HTML page, a truncated
 *   answer): stricter than upstream, which skips such lines and so would pass every password.
 */
export function parseRange(body: string): string[] {
  const pwned: string[] = []
  for (const raw of body.split('\n')) {
    const line = raw.trim()
    if (line === '') continue
    const match = RANGE_LINE.exec(line)
    if (!match) throw new Error('the range API answered a line that is not SUFFIX:COUNT')
    if (match[2] !== undefined && !/^0+$/.test(match[2]) && match[1] !== undefined) {
      pwned.push(match[1])
    }
  }
  return pwned
}

/** The upper-case hex SHA-1 of a password (UTF-8), as the range API indexes it. */
export function pwnedPasswordHash(password: string): string {
  return createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase()
}

/**
 * {@link PwnedPasswords} over the range API at `PASSWORD_HIBP_API_URL`, bounded by
 * `PASSWORD_HIBP_TIMEOUT` and {@link MAX_RANGE_BYTES}. Concurrent lookups of one prefix share one
 * request, as upstream's client.
 */
export class RangeApiPwnedPasswords implements PwnedPasswords {
  readonly failClosed: boolean
  readonly #settings: HibpSettings
  readonly #fetch: Fetch | undefined
  readonly #cache: PwnedHashCache | undefined
  readonly #log: PwnedPasswordsLog | undefined
  readonly #inFlight = new Map<string, Promise<ReadonlySet<string>>>()

  /**
   * @param settings `PASSWORD_HIBP_*`.
   * @param options Injected `fetch` and log. With `PASSWORD_HIBP_BLOOM_ENABLED`, a
   *   {@link PwnedHashCache} remembers pwned hashes.
   * @throws {RangeError} When the bloom filter cannot be sized (see {@link BloomFilter}).
   */
  constructor(settings: HibpSettings, options: RangeApiOptions = {}) {
    this.failClosed = settings.failClosed
    this.#settings = settings
    this.#fetch = options.fetch
    this.#cache = settings.bloom.enabled
      ? new PwnedHashCache(settings.bloom.items, settings.bloom.falsePositives)
      : undefined
    this.#log = options.log
  }

  /** @returns `unknown` (logged as a warning) when the API fails, times out or answers garbage. */
  async check(password: string): Promise<PwnedVerdict> {
    const hash = pwnedPasswordHash(password)
    if (this.#cache?.has(hash)) return 'pwned'
    const prefix = hash.slice(0, 5)
    try {
      const pwned = await this.#range(prefix)
      return pwned.has(hash.slice(5)) ? 'pwned' : 'not_pwned'
    } catch (error) {
      this.#log?.warn(
        {
          component: 'hibp',
          error: error instanceof Error ? error.message : String(error),
          failClosed: this.failClosed,
        },
        this.failClosed
          ? 'Unable to perform password strength check with HaveIBeenPwned.org, the password is refused'
          : 'Unable to perform password strength check with HaveIBeenPwned.org, pwned passwords are being allowed',
      )
      return 'unknown'
    }
  }

  /** The pwned suffixes of a prefix, one request per prefix at a time. */
  #range(prefix: string): Promise<ReadonlySet<string>> {
    let pending = this.#inFlight.get(prefix)
    if (!pending) {
      pending = this.#request(prefix).finally(() => this.#inFlight.delete(prefix))
      this.#inFlight.set(prefix, pending)
    }
    return pending
  }

  async #request(prefix: string): Promise<ReadonlySet<string>> {
    const { apiUrl, timeoutMs, userAgent } = this.#settings
    const url = `${apiUrl.replace(/\/+$/, '')}/range/${prefix}`
    const signal = AbortSignal.timeout(timeoutMs)
    let body: string
    try {
      const response = await (this.#fetch ?? fetch)(url, {
        headers: { 'user-agent': userAgent, 'add-padding': 'true', accept: 'text/plain' },
        redirect: 'error',
        signal,
      })
      if (response.status !== 200) {
        await response.body?.cancel().catch(() => undefined)
        throw new Error(`the range API answered HTTP ${String(response.status)}`)
      }
      body = await readBounded(response, MAX_RANGE_BYTES)
    } catch (error) {
      if (signal.aborted) {
        throw new Error(`the range API did not answer within ${String(timeoutMs)} ms`, {
          cause: error,
        })
      }
      throw error
    }
    const pwned = parseRange(body)
    if (pwned.length > 0) this.#cache?.add(prefix, pwned)
    return new Set(pwned)
  }
}
