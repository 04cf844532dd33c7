import { randomBytes, randomInt, randomUUID } from 'node:crypto'

/**
 * A source of randomness, injected wherever code needs it (ids, refresh tokens, one-time codes,
 * generated passwords), so that it is chosen in one place and tests can replace it. The one
 * default is {@link cryptoRandom}.
 */
export interface Random {
  /** A random UUID (version 4). */
  uuid(): string
  /** `length` random bytes. */
  bytes(length: number): Uint8Array
  /** A uniformly random integer in `[0, max)`. */
  int(max: number): number
}

/** {@link Random} from `node:crypto`'s cryptographically secure generator. */
export const cryptoRandom: Random = {
  uuid: () => randomUUID(),
  bytes: (length) => randomBytes(length),
  int: (max) => randomInt(max),
}
