/**
 * Encryption of secrets stored in the database (custom providers' client secrets): AES-256-GCM
 * with a key derived by HKDF-SHA-256 from a server secret, a random 96-bit IV per value, and the
 * row's id as additional data (a ciphertext copied to another row does not decrypt).
 *
 * @module
 */
import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto'
import type { Random } from '../random.js'

/** The prefix of a stored value: format version 1. */
const PREFIX = 'gh1:'

/** Encrypts and decrypts stored secrets with one key. */
export class SecretBox {
  readonly #key: Buffer
  readonly #random: Random

  /**
   * @param secret The server secret the key is derived from (never stored).
   * @param purpose What the key encrypts (HKDF `info`): one key per purpose.
   */
  constructor(secret: string, purpose: string, random: Random) {
    this.#key = Buffer.from(hkdfSync('sha256', secret, '', `gatehouse-auth ${purpose}`, 32))
    this.#random = random
  }

  /** `plaintext` sealed for the row `id`: `gh1:` and base64url(IV ‖ ciphertext ‖ tag). */
  seal(plaintext: string, id: string): string {
    const iv = Buffer.from(this.#random.bytes(12))
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv)
    cipher.setAAD(Buffer.from(id))
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
    return PREFIX + Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')
  }

  /**
   * The plaintext of a value {@link seal} made for `id`.
   *
   * @throws Error When the value is not one, or was made with another key or for another row.
   */
  open(sealed: string, id: string): string {
    if (!sealed.startsWith(PREFIX)) throw new Error('not a sealed value')
    const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64url')
    if (raw.length < 28) throw new Error('sealed value too short')
    const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, 12))
    decipher.setAAD(Buffer.from(id))
    decipher.setAuthTag(raw.subarray(raw.length - 16))
    return Buffer.concat([
      decipher.update(raw.subarray(12, raw.length - 16)),
      decipher.final(),
    ]).toString('utf8')
  }
}
