/**
 * API keys: long-lived JWTs that carry only a role, signed with the server's keys (`JWT_SECRET`
 * or `JWT_KEYS`), as the Supabase CLI prints them: the `anon` key a client such as
 * `createClient(url, anonKey)` sends, and the `service_role` key that opens the admin API.
 * `gatehouse-auth keys` and `npm start` print them; the server prints a `service_role` key when
 * it creates an embedded database.
 *
 * @module
 */
import type { JwtKeys } from './jwt.js'

/**
 * The default `iat` of API keys (2025-01-01T00:00:00Z): fixed, so that one secret always gives
 * the same keys, and a key lost from an app's `.env` is printed again, the same, by
 * `gatehouse-auth keys`.
 */
export const API_KEY_ISSUED_AT = 1_735_689_600

/** How long an API key is valid: ten years, in seconds. */
export const API_KEY_LIFETIME_SECONDS = 315_360_000

/**
 * An API key: `{ iss: 'gatehouse', role, iat, exp: iat + ten years }` signed with `keys`.
 *
 * @param role The `role` claim: `anon`, `service_role` (a role of `JWT_ADMIN_ROLES` opens the
 *   admin API).
 * @param issuedAtSeconds Unix time of `iat`. @default {@link API_KEY_ISSUED_AT}
 */
export function apiKey(
  keys: JwtKeys,
  role: string,
  issuedAtSeconds: number = API_KEY_ISSUED_AT,
): Promise<string> {
  return keys.sign({
    iss: 'gatehouse',
    role,
    iat: issuedAtSeconds,
    exp: issuedAtSeconds + API_KEY_LIFETIME_SECONDS,
  })
}

/** The `anon` and `service_role` keys of {@link apiKey}. */
export interface ApiKeys {
  readonly anon: string
  readonly serviceRole: string
}

/**
 * The `anon` and `service_role` keys of `keys` ({@link apiKey}).
 *
 * @param issuedAtSeconds Unix time of `iat`. @default {@link API_KEY_ISSUED_AT}
 */
export async function apiKeys(
  keys: JwtKeys,
  issuedAtSeconds: number = API_KEY_ISSUED_AT,
): Promise<ApiKeys> {
  return {
    anon: await apiKey(keys, 'anon', issuedAtSeconds),
    serviceRole: await apiKey(keys, 'service_role', issuedAtSeconds),
  }
}
