import {
  createLocalJWKSet,
  errors,
  type FlattenedJWSInput,
  type JSONWebKeySet,
  type JWTHeaderParameters,
} from 'jose'

type LocalKeys = ReturnType<typeof createLocalJWKSet>

/**
 * A JWKS fetched from `jwks_uri` and kept for `maxAge` ms; refetched early (at most once per
 * `cooldown` ms) when a token names an unknown key, so key rotation is picked up.
 *
 * @internal
 */
export class JwksCache {
  readonly #load: () => Promise<JSONWebKeySet>
  readonly #now: () => number
  readonly #maxAge: number
  readonly #cooldown: number
  #keys: LocalKeys | undefined
  #fetchedAt = Number.NEGATIVE_INFINITY
  #pending: Promise<LocalKeys> | undefined

  constructor(
    load: () => Promise<JSONWebKeySet>,
    now: () => number,
    maxAge = 600_000,
    cooldown = 30_000,
  ) {
    this.#load = load
    this.#now = now
    this.#maxAge = maxAge
    this.#cooldown = cooldown
  }

  async #refresh(): Promise<LocalKeys> {
    this.#pending ??= this.#load()
      .then((jwks) => {
        const keys = createLocalJWKSet(jwks)
        this.#keys = keys
        this.#fetchedAt = this.#now()
        return keys
      })
      .finally(() => {
        this.#pending = undefined
      })
    return this.#pending
  }

  /** Finds the key for a token's header (jose's `JWTVerifyGetKey`). */
  async getKey(header: JWTHeaderParameters, token: FlattenedJWSInput) {
    let keys = this.#keys
    if (keys === undefined || this.#now() - this.#fetchedAt > this.#maxAge) {
      keys = await this.#refresh()
    }
    try {
      return await keys(header, token)
    } catch (error) {
      if (
        !(error instanceof errors.JWKSNoMatchingKey) ||
        this.#now() - this.#fetchedAt < this.#cooldown
      ) {
        throw error
      }
      return (await this.#refresh())(header, token)
    }
  }
}
