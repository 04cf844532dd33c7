/**
 * What `npm start` needs from the auth server's own code before it starts it: its settings read
 * as the server will read them (so that a bad `AUTHSVC_*` stops `npm start` before it writes
 * anything), the rate limit service config those settings need, and the development keys.
 *
 * @module
 */
import { JwtKeys, apiKeys, loadSettings, type ApiKeys, type Settings } from '@gatehouse/auth'
import { rateLimitServiceConfig } from '#internal/auth/limiter/service-config.js'

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
 * The `anon` and `service_role` keys the Supabase CLI prints: the auth server's API keys
 * (`apiKeys`, what `gatehouse-auth keys` prints), signed with its keys (`JWT_SECRET` or
 * `JWT_KEYS`), so `createClient(url, anonKey)` works and the `service_role` key opens the admin
 * API. One secret always gives the same keys.
 *
 * @throws {Error} When the keys cannot be loaded (`JWT_KEYS` unusable).
 */
export async function developmentKeys(settings: Settings): Promise<ApiKeys> {
  return apiKeys(await JwtKeys.load(settings.jwt))
}
