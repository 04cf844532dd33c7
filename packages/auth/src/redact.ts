/**
 * What the executable may print about a secret: a connection URL with its password masked, and an
 * error message with the passwords it repeats censored (`gatehouse-auth serve`, `check`, `admin`).
 *
 * @module
 */
import { REDACT_CENSOR } from '@gatehouse/settings'

/**
 * `url` with its password replaced by `***` (and the values of `password`-like query
 * parameters), for messages and logs: user, host, port and database stay, since they are what a
 * wrong setting gets wrong. A URL that does not parse is not shown at all.
 */
export function maskDatabaseUrl(url: string): string {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return '(a connection string that is not a URL)'
  }
  if (parsed.password !== '') parsed.password = '***'
  for (const name of [...parsed.searchParams.keys()]) {
    if (/pass|secret|key/i.test(name)) parsed.searchParams.set(name, '***')
  }
  return parsed.toString().replaceAll('%2A', '*')
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
