/**
 * A source of cryptographically secure randomness. The package reads randomness only through one,
 * so a test can inject a deterministic source.
 *
 * @internal
 */
export interface Random {
  /** `length` random bytes. */
  bytes(length: number): Uint8Array
  /** A random (version 4) UUID. */
  uuid(): string
}

/**
 * WebCrypto's CSPRNG (`crypto.getRandomValues`, `crypto.randomUUID`, in every runtime): the
 * default source, and the package's only use of them.
 *
 * @internal
 */
export const systemRandom: Random = {
  bytes: (length) => crypto.getRandomValues(new Uint8Array(length)),
  uuid: () => crypto.randomUUID(),
}
