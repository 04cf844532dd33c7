/**
 * What the executable may print about a secret: a connection URL without its password, and an
 * error message with the passwords it repeats censored (`gatehouse-auth check`, `admin`).
 *
 * @module
 */
import { REDACT_CENSOR } from '@gatehouse/settings'

/**
 * A connection URL as it may be shown: without its password (in the user part or as a
 * `password`/`sslpassword` parameter).
 */
export function displayUrl(url: string): string {
  try {
    const parsed = new URL(url)
    parsed.password = ''
    for (const name of [...parsed.searchParams.keys()]) {
      if (/pass/i.test(name)) parsed.searchParams.delete(name)
    }
    return parsed.toString()
  } catch {
    return 'DATABASE_URL (not a URL)'
  }
}

/** `message` with every occurrence of the non-empty `secrets` censored. */
export function censor(message: string, secrets: readonly string[]): string {
  return secrets
    .filter((secret) => secret !== '')
    .reduce((text, secret) => text.replaceAll(secret, REDACT_CENSOR), message)
}

/** The passwords a connection URL holds (its user part's, `password` parameters), decoded. */
export function urlPasswords(url: string): string[] {
  try {
    const parsed = new URL(url)
    return [
      parsed.password,
      decodeURIComponent(parsed.password),
      ...[...parsed.searchParams].filter(([name]) => /pass/i.test(name)).map(([, value]) => value),
    ]
  } catch {
    return [url]
  }
}
