/**
 * What `npm start` needs from the auth server's own code before it starts it: its settings read
 * as the server will read them (so that a bad `AUTHSVC_*` stops `npm start` before it writes
 * anything), the rate limit service config those settings need, and the development keys.
 *
 * @module
 */
import { JwtKeys, loadSettings, rateLimitServiceConfig, type Settings } from '@gatehouse/auth'

/**
 * `iat` of the development keys (2025-01-01T00:00:00Z): fixed, so that one JWT secret always
 * gives the same keys and a key pasted into an app's `.env` keeps working across restarts.
 */
export const DEVELOPMENT_KEY_ISSUED_AT = 1_735_689_600

/** Validity of the development keys: ten years, in seconds. */
const DEVELOPMENT_KEY_LIFETIME_SECONDS = 315_360_000

/** The auth server's settings and what `npm start` derives from them. */
export interface AuthPreparation {
  readonly settings: Settings
  /** `gatehouse-auth ratelimit-config` for these settings. */
  readonly ratelimitConfig: string
}

/**
 * Reads the auth server's settings from the environment it will be started with.
 *
 * @throws {Error} The auth server's `SettingsError`, listing every problem.
 */
export function prepareAuth(env: Readonly<Record<string, string | undefined>>): AuthPreparation {
  const settings = loadSettings(env)
  return { settings, ratelimitConfig: rateLimitServiceConfig(settings) }
}

/**
 * The `anon` and `service_role` keys the Supabase CLI prints: JWTs with only a `role` claim,
 * signed with the server's keys (`JWT_SECRET` or `JWT_KEYS`), so `createClient(url, anonKey)`
 * works and the `service_role` key opens the admin API.
 *
 * @throws {Error} When the keys cannot be loaded (`JWT_KEYS` unusable).
 */
export async function developmentKeys(
  settings: Settings,
): Promise<{ anon: string; serviceRole: string }> {
  const keys = await JwtKeys.load(settings.jwt)
  const sign = (role: string): Promise<string> =>
    keys.sign({
      iss: 'gatehouse',
      role,
      iat: DEVELOPMENT_KEY_ISSUED_AT,
      exp: DEVELOPMENT_KEY_ISSUED_AT + DEVELOPMENT_KEY_LIFETIME_SECONDS,
    })
  return { anon: await sign('anon'), serviceRole: await sign('service_role') }
}
