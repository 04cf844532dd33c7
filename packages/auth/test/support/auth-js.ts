/** `@supabase/auth-js` clients as the tests use them: no timers, no storage, no URL reading. */
import { GoTrueClient } from '@supabase/auth-js'

/**
 * An auth-js client of the server at `url` without automatic refresh, session storage or
 * session detection in the page URL (a test drives each step itself).
 *
 * @param options More `GoTrueClient` options (e.g. `flowType: 'pkce'`).
 */
export function authJsClient(
  url: string,
  options: Omit<ConstructorParameters<typeof GoTrueClient>[0], 'url'> = {},
): GoTrueClient {
  return new GoTrueClient({
    url,
    autoRefreshToken: false,
    persistSession: false,
    detectSessionInUrl: false,
    ...options,
  })
}

/** An in-memory `storage` for auth-js (where a PKCE client keeps its code verifier). */
export function memoryStorage(): {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
} {
  const store = new Map<string, string>()
  return {
    getItem: (key) => store.get(key) ?? null,
    setItem: (key, value) => {
      store.set(key, value)
    },
    removeItem: (key) => {
      store.delete(key)
    },
  }
}
