import { pkceChallenge } from '../pkce.js'

/**
 * What an ID token of an authorization code exchange must carry as its `nonce`: the nonce its
 * authorization request sent (`undefined` when it sent none), or `'unknown'` when this client did
 * not build that request (another process, no PKCE challenge, or forgotten).
 *
 * @internal
 */
export type NonceExpectation = { readonly nonce: string | undefined } | 'unknown'

/** Authorization requests remembered per client; the oldest is forgotten first. */
export const MAX_REMEMBERED_REQUESTS = 1000

const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/

/**
 * The nonces a client's authorization requests sent (OIDC Core §3.1.2.1), kept per PKCE
 * `code_challenge` until the code exchange that presents its `code_verifier` (RFC 7636 §4.5): the
 * verifier is what ties an exchange to its authorization request, and the caller hands it to
 * `authCode.getToken()` anyway. Bounded ({@link MAX_REMEMBERED_REQUESTS}), in memory, per
 * client: across processes the caller passes the nonce it kept with the state.
 *
 * @internal
 */
export class SentNonces {
  readonly #byChallenge = new Map<string, string | undefined>()

  /**
   * Remembers the nonce of an authorization request (none when `params.nonce` is absent), keyed
   * by its `code_challenge`; a request without a challenge, or with a nonce that is not a string,
   * is not remembered (its tokens then need the nonce passed explicitly).
   */
  remember(params: Readonly<Record<string, unknown>>): void {
    const challenge = params.code_challenge
    const nonce = params.nonce
    if (typeof challenge !== 'string' || challenge === '') return
    if (nonce !== undefined && nonce !== null && typeof nonce !== 'string') return
    this.#byChallenge.delete(challenge)
    this.#byChallenge.set(challenge, nonce ?? undefined)
    if (this.#byChallenge.size > MAX_REMEMBERED_REQUESTS) {
      this.#byChallenge.delete(this.#byChallenge.keys().next().value as string)
    }
  }

  /**
   * The expectation for the exchange that presents `codeVerifier` (S256 or plain challenge), and
   * forgets it: each authorization request gives one code.
   */
  take(codeVerifier: unknown): NonceExpectation {
    if (typeof codeVerifier !== 'string' || !VERIFIER.test(codeVerifier)) return 'unknown'
    for (const challenge of [pkceChallenge(codeVerifier), codeVerifier]) {
      if (this.#byChallenge.has(challenge)) {
        const nonce = this.#byChallenge.get(challenge)
        this.#byChallenge.delete(challenge)
        return { nonce }
      }
    }
    return 'unknown'
  }
}
