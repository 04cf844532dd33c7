/**
 * The browser binding of external sign-ins: `/authorize` gives the browser a random secret in an
 * HttpOnly cookie and stores only its hash in the flow state, and `/callback` completes a flow
 * only for the browser that shows the same secret. A `state` (or a whole callback URL) carried to
 * another browser is refused, which closes login CSRF (RFC 6749 §10.12, RFC 9700 §4.7.1).
 * Upstream's `state` is not bound to a browser.
 *
 * The cookie is `__Host-gatehouse-oauth` (`Secure`, `Path=/`, no `Domain`, `HttpOnly`,
 * `SameSite=Lax`), so no sibling subdomain can set or read it. `Secure` cookies are accepted from
 * `https:` and from plain-`http:` loopback origins (Chromium accepts them from `localhost`,
 * `127.0.0.1` and `[::1]`, checked against Chromium 156); when `API_EXTERNAL_URL` is plain
 * `http:` on any other host (development on a LAN address) no browser would keep a `Secure`
 * cookie, so the cookie is `gatehouse-oauth` without `Secure` instead.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9700#section-4.7.1
 * @see https://datatracker.ietf.org/doc/html/draft-ietf-httpbis-rfc6265bis#section-4.1.3.2
 * @module
 */
import { createHash } from 'node:crypto'
import { BlockList, isIP } from 'node:net'
import type { Settings } from '../../conf/settings.js'
import type { Random } from '../../random.js'
import { STATE_LIFETIME } from './oauth-state.js'

/** The cookie's name when it can be `Secure` (the `__Host-` prefix requires that). */
export const BINDING_COOKIE = '__Host-gatehouse-oauth'

/** The cookie's name for a plain-`http:`, non-loopback `API_EXTERNAL_URL`. */
export const INSECURE_BINDING_COOKIE = 'gatehouse-oauth'

/** A binding secret: 32 random bytes, base64url (43 characters). */
const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/

const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')

/** Whether browsers keep `Secure` cookies from `url`: `https:`, or a loopback `http:` host. */
function secureContext(url: URL): boolean {
  if (url.protocol === 'https:') return true
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
  if (host === 'localhost' || host.endsWith('.localhost')) return true
  const family = isIP(host)
  return family !== 0 && LOOPBACK.check(host, family === 4 ? 'ipv4' : 'ipv6')
}

/** The binding cookie's name for these settings (see the module's description). */
export function bindingCookieName(settings: Pick<Settings, 'apiExternalUrl'>): string {
  return secureContext(new URL(settings.apiExternalUrl)) ? BINDING_COOKIE : INSECURE_BINDING_COOKIE
}

/**
 * The binding secret a request's `Cookie` header carries, or `undefined` (none, or not one this
 * server could have set).
 *
 * @param cookieHeader The request's `Cookie` header.
 */
export function readBindingSecret(
  settings: Pick<Settings, 'apiExternalUrl'>,
  cookieHeader: string | undefined,
): string | undefined {
  if (cookieHeader === undefined) return undefined
  const name = bindingCookieName(settings)
  for (const pair of cookieHeader.split(';')) {
    const eq = pair.indexOf('=')
    if (eq < 0 || pair.slice(0, eq).trim() !== name) continue
    const value = pair.slice(eq + 1).trim()
    if (SECRET_PATTERN.test(value)) return value
  }
  return undefined
}

/** A new binding secret: 32 bytes of `random`, base64url. */
export function newBindingSecret(random: Pick<Random, 'bytes'>): string {
  return Buffer.from(random.bytes(32)).toString('base64url')
}

/** What the flow state keeps of a binding secret: base64url(SHA-256(secret)). */
export function bindingHash(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url')
}

/**
 * The `Set-Cookie` value that gives the browser its binding secret, for as long as a `state`
 * lives ({@link STATE_LIFETIME}); sent again by every `/authorize`, so that flows started in
 * several tabs share one secret.
 */
export function bindingCookie(settings: Pick<Settings, 'apiExternalUrl'>, secret: string): string {
  const name = bindingCookieName(settings)
  const secure = name === BINDING_COOKIE ? '; Secure' : ''
  return `${name}=${secret}; Max-Age=${String(STATE_LIFETIME)}; Path=/; HttpOnly; SameSite=Lax${secure}`
}
