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

/** An auth-js `storage` in memory: a PKCE flow keeps its code verifier there. */
export function memoryStorage() {
  const store = new Map<string, string>()
  return {
    getItem: (key: string) => store.get(key) ?? null,
    setItem: (key: string, value: string) => {
      store.set(key, value)
    },
    removeItem: (key: string) => {
      store.delete(key)
    },
  }
}
