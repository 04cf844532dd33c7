import { invalidValue } from './args.js'

/**
 * Converts a key to snake_case the way the `snaky_hash` gem does: trim, spaces to `_`, `::` to
 * `/`, `ABCd` to `AB_Cd`, `aB` to `a_B`, `-` to `_`, squeeze `_`, lowercase.
 *
 * @param key Any key, for example `accessToken` or `Expires-In`.
 * @returns The snake_case key, for example `access_token` or `expires_in`.
 */
export function snakeCase(key: string): string {
  if (/^[a-z0-9_]*$/.test(key) && !key.includes('__')) return key
  return key
    .trim()
    .replaceAll(' ', '_')
    .replaceAll('::', '/')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .replace(/([a-z\d])([A-Z])/g, '$1_$2')
    .replaceAll('-', '_')
    .replace(/_+/g, '_')
    .toLowerCase()
}

/** True for objects made by `{}`, JSON or `Object.create(null)` (not arrays, class instances). @internal */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const proto: unknown = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  // `__proto__` from a server's JSON must stay data, never become the prototype.
  if (key === '__proto__') {
    Object.defineProperty(target, key, {
      value,
      enumerable: true,
      writable: true,
      configurable: true,
    })
  } else {
    target[key] = value
  }
}

/** Applies `fn` to every leaf (non-object, non-array value), recursively. */
function mapLeaves(value: unknown, fn: (leaf: unknown) => unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => mapLeaves(v, fn))
  if (isPlainObject(value) || value instanceof SnakyHash) {
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) define(out, k, mapLeaves(v, fn))
    return out
  }
  return fn(value)
}

/** Applies `fn` to every object (bottom-up or top-down), recursively. */
function mapHashes(
  value: unknown,
  fn: (hash: Record<string, unknown>) => Record<string, unknown>,
  order: 'bottom-up' | 'top-down',
): unknown {
  if (Array.isArray(value)) return value.map((v) => mapHashes(v, fn, order))
  if (!isPlainObject(value)) return value
  const start = order === 'top-down' ? fn(value) : value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(start)) define(out, k, mapHashes(v, fn, order))
  return order === 'bottom-up' ? fn(out) : out
}

/**
 * The default class of parsed JSON objects and form bodies (the gem's `SnakyHash::StringKeyed`):
 * an object whose own keys are the snake_case forms of the server's keys, recursively (nested
 * objects, also inside arrays, become instances of the same class). Values are untouched.
 *
 * Read fields as properties (`parsed.access_token`); {@link SnakyHash.get} also accepts the
 * server's spelling (`parsed.get('accessToken')`).
 *
 * Serialization (the gem's `SnakyHash::Serializer`): {@link SnakyHash.dump} and
 * {@link SnakyHash.load} go through four hooks a subclass may override: `dumpValue` and
 * `loadValue` for every leaf value, `dumpHash` and `loadHash` for every object. Pass the subclass
 * as `snakyHashClass` to `getToken` or `request` to have responses parsed into it.
 *
 * @example
 * ```ts
 * import { SnakyHash } from '@gatehouse/oauth2'
 *
 * class SealedHash extends SnakyHash {
 *   static override dumpValue(value: unknown): unknown {
 *     return typeof value === 'string' ? `sealed:${value}` : value
 *   }
 *   static override loadValue(value: unknown): unknown {
 *     return typeof value === 'string' ? value.replace(/^sealed:/, '') : value
 *   }
 * }
 * const text = SealedHash.dump(new SealedHash({ accessToken: 'abc' })) // {"access_token":"sealed:abc"}
 * SealedHash.load(text).access_token // 'abc'
 * ```
 */
export class SnakyHash {
  [key: string]: unknown

  /**
   * @param source An object whose keys are converted with {@link snakeCase}; later keys win when
   *   two convert to the same name.
   */
  constructor(source?: Readonly<Record<string, unknown>>) {
    if (source === undefined) return
    const ctor = this.constructor as typeof SnakyHash
    for (const key of Object.keys(source)) {
      define(this, snakeCase(key), convert(source[key], ctor))
    }
  }

  /**
   * Reads a field by the server's spelling or the snake_case one (indifferent access).
   *
   * @param key `accessToken`, `access_token`, `Access-Token`... all read `access_token`.
   * @returns The value, or `undefined`.
   */
  get(key: string): unknown {
    return Object.hasOwn(this, key) ? this[key] : this[snakeCase(key)]
  }

  /** Whether the field exists, by the server's spelling or the snake_case one. */
  has(key: string): boolean {
    return Object.hasOwn(this, key) || Object.hasOwn(this, snakeCase(key))
  }

  /** A deep copy as plain objects and arrays (for example to hand to code that checks prototypes). */
  toObject(): Record<string, unknown> {
    return mapLeaves(this, (v) => v) as Record<string, unknown>
  }

  /**
   * Serializes `value` (a SnakyHash or plain object) to JSON after running the dump hooks:
   * {@link SnakyHash.dumpValue} on every leaf, then {@link SnakyHash.dumpHash} on every object,
   * innermost first.
   *
   * @returns A JSON string.
   */
  static dump(value: Readonly<Record<string, unknown>>): string {
    const leaves = mapLeaves(value, (v) => this.dumpValue(v))
    return JSON.stringify(mapHashes(leaves, (h) => this.dumpHash(h), 'bottom-up'))
  }

  /**
   * Restores an instance of this class from {@link SnakyHash.dump}'s JSON, running
   * {@link SnakyHash.loadHash} on every object (outermost first), then {@link SnakyHash.loadValue} on
   * every leaf. An empty string, `null` or `undefined` loads an empty hash (as in the gem).
   *
   * @throws {SyntaxError} When `text` is not JSON.
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when the JSON is not an object.
   */
  static load<T extends typeof SnakyHash>(
    this: T,
    text: string | null | undefined,
  ): InstanceType<T> {
    const raw: unknown = text ? JSON.parse(text) : {}
    if (!isPlainObject(raw)) {
      throw invalidValue('text', 'must be the JSON of an object')
    }
    const hashes = mapHashes(raw, (h) => this.loadHash(h), 'top-down')
    return new this(
      mapLeaves(hashes, (v) => this.loadValue(v)) as Record<string, unknown>,
    ) as InstanceType<T>
  }

  /** Dump hook for every leaf value; the default returns it unchanged. */
  static dumpValue(value: unknown): unknown {
    return value
  }

  /** Dump hook for every object (after its values); the default returns it unchanged. */
  static dumpHash(hash: Record<string, unknown>): Record<string, unknown> {
    return hash
  }

  /** Load hook for every leaf value; the default returns it unchanged. */
  static loadValue(value: unknown): unknown {
    return value
  }

  /** Load hook for every object (before its values); the default returns it unchanged. */
  static loadHash(hash: Record<string, unknown>): Record<string, unknown> {
    return hash
  }
}

function convert(value: unknown, ctor: typeof SnakyHash): unknown {
  if (Array.isArray(value)) return value.map((v) => convert(v, ctor))
  if (isPlainObject(value)) return new ctor(value)
  return value
}
