/**
 * Memcache's key rules (gomemcache `legalKey`, as upstream's memcache backend meets them): a key
 * is at most 250 bytes and has no byte at or below the space (whitespace, control characters)
 * nor DEL. Bytes of multi-byte UTF-8 characters are allowed.
 *
 * @module
 */

/** The longest memcache key, in bytes (memcached's `KEY_MAX_LENGTH`). */
export const MEMCACHE_MAX_KEY_BYTES = 250

/**
 * The first character memcache refuses in a key: whitespace, a control character or DEL.
 *
 * @returns Its UTF-16 code unit, or -1 when there is none.
 */
export function illegalKeyCharacter(key: string): number {
  for (let i = 0; i < key.length; i++) {
    const code = key.charCodeAt(i)
    if (code <= 0x20 || code === 0x7f) return code
  }
  return -1
}

/**
 * Why memcache could never store a key starting with `CACHE_KEY_PREFIX` (checked at start, with
 * `BACKEND_TYPE=memcache`, so that no request finds out).
 *
 * @returns The problem (for the variable's line), or undefined when the prefix is fine.
 */
export function memcacheKeyPrefixProblem(prefix: string): string | undefined {
  return illegalKeyCharacter(prefix) >= 0
    ? 'must not contain whitespace or control characters with BACKEND_TYPE=memcache (memcache keys cannot)'
    : undefined
}

/**
 * Why memcache would refuse `key`, worded for the caller who sent the descriptor.
 *
 * @param key A cache key (`CACHE_KEY_PREFIX` + domain + entries + window start).
 * @returns The problem, or undefined when memcache accepts the key.
 * @see https://github.com/memcached/memcached/blob/master/doc/protocol.txt (Keys)
 */
export function memcacheKeyProblem(key: string): string | undefined {
  const code = illegalKeyCharacter(key)
  if (code >= 0) {
    return (
      'the memcache backend cannot store a key with whitespace or control characters ' +
      `(found U+${code.toString(16).toUpperCase().padStart(4, '0')} in the domain or an entry)`
    )
  }
  const bytes = Buffer.byteLength(key, 'utf8')
  if (bytes > MEMCACHE_MAX_KEY_BYTES) {
    return (
      `the memcache cache key would be ${String(bytes)} bytes, over memcache's limit of ` +
      `${String(MEMCACHE_MAX_KEY_BYTES)}; shorten the domain, the entries or CACHE_KEY_PREFIX`
    )
  }
  return undefined
}
