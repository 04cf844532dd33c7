/**
 * A fixed-size bloom filter over keys that are already uniform hashes (SHA-1 digests of the
 * Pwned Passwords range API): the bit positions come from the key itself by double hashing
 * (Kirsch and Mitzenmacher), so no further hash function runs.
 *
 * Own code rather than a library: the maintained npm bloom filter (`bloom-filters`) brings seven
 * runtime dependencies for the twenty lines needed here.
 *
 * @see https://www.eecs.harvard.edu/~michaelm/postscripts/rsa2008.pdf
 * @module
 */

/** Fewest key bytes: two 32-bit words give the two hashes. */
const MIN_KEY_BYTES = 8

/** A bloom filter sized for a number of keys at a false-positive rate. */
export class BloomFilter {
  /** Bits in the filter. */
  readonly bits: number
  /** Bit positions set per key. */
  readonly hashes: number
  readonly #words: Uint32Array

  /**
   * @param items Keys the filter is sized for (at least 1).
   * @param falsePositives False-positive rate wanted at `items` keys, between 0 and 1 exclusive.
   * @throws {RangeError} When either is out of range or the filter would exceed 2³² bits.
   */
  constructor(items: number, falsePositives: number) {
    if (!Number.isInteger(items) || items < 1) throw new RangeError('items must be at least 1')
    if (!(falsePositives > 0 && falsePositives < 1)) {
      throw new RangeError('falsePositives must be between 0 and 1')
    }
    const bits = Math.ceil((-items * Math.log(falsePositives)) / Math.LN2 ** 2)
    if (bits > 2 ** 32) throw new RangeError('the filter would exceed 2^32 bits')
    this.bits = Math.max(32, bits)
    this.hashes = Math.max(1, Math.round((this.bits / items) * Math.LN2))
    this.#words = new Uint32Array(Math.ceil(this.bits / 32))
  }

  /** Bytes of memory the bits take. */
  get byteLength(): number {
    return this.#words.byteLength
  }

  /**
   * Records a key.
   *
   * @param key A uniform hash of at least 8 bytes.
   * @throws {RangeError} When the key is shorter.
   */
  add(key: Uint8Array): void {
    this.#positions(key, (word, mask) => {
      this.#words[word] = (this.#words[word] ?? 0) | mask
      return true
    })
  }

  /**
   * Whether a key may have been added: `false` is certain, `true` is wrong at about the
   * configured rate.
   *
   * @throws {RangeError} When the key is shorter than 8 bytes.
   */
  has(key: Uint8Array): boolean {
    return this.#positions(key, (word, mask) => ((this.#words[word] ?? 0) & mask) !== 0)
  }

  /** Forgets every key. */
  clear(): void {
    this.#words.fill(0)
  }

  /** Calls `visit` on each of the key's bit positions while it returns `true`. */
  #positions(key: Uint8Array, visit: (word: number, mask: number) => boolean): boolean {
    if (key.byteLength < MIN_KEY_BYTES) throw new RangeError('keys must be at least 8 bytes')
    const view = new DataView(key.buffer, key.byteOffset, key.byteLength)
    const h1 = view.getUint32(0)
    // Odd, so successive positions differ for every filter size.
    const h2 = (view.getUint32(4) | 1) >>> 0
    for (let i = 0; i < this.hashes; i++) {
      const bit = (h1 + i * h2) % this.bits
      if (!visit(bit >>> 5, 1 << (bit & 31))) return false
    }
    return true
  }
}
