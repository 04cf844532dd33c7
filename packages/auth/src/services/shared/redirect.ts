/**
 * `redirect_to`: where a user lands after following a mail link or an OAuth flow. A requested
 * URL is used only when it belongs to `SITE_URL` or matches `URI_ALLOW_LIST`; otherwise the user
 * goes to `SITE_URL`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/utilities/request.go
 * @module
 */
import { isIP } from 'node:net'
import type { Settings } from '../../conf/settings.js'
import { compileGlob } from '../../url-glob.js'

/** Hosts whose port is ignored when comparing with `SITE_URL` (upstream's list). */
const LOOPBACK_HOSTS: ReadonlySet<string> = new Set([
  'localhost',
  '127.0.0.1',
  '::1',
  '[::1]',
  '0.0.0.0',
  '::',
  '[::]',
])
/** The host of an absolute URL as written (before WHATWG normalises `2130706433` to an IP). */
const RAW_HOST = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]*)/
/** A host name made of the usual characters (upstream's `regularHostname`). */
const REGULAR_HOSTNAME = /^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$/

function isLoopbackIp(address: string): boolean {
  if (isIP(address) === 4) return address.startsWith('127.')
  const lower = address.toLowerCase()
  return lower === '::1' || lower === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(lower)
}

function parse(value: string): URL | undefined {
  try {
    return new URL(value)
  } catch {
    return undefined
  }
}

/**
 * Whether `redirectTo` may be used (upstream `IsRedirectURLValid`):
 *
 * 1. empty or not an absolute URL: no;
 * 2. same scheme, host and port as `SITE_URL` (any port on `localhost`, `127.0.0.1`, `::1`,
 *    `0.0.0.0`, `::`): yes;
 * 3. a host written as a decimal number (`http://2130706433/`): no; an IP address: only a
 *    loopback one, and only when `SITE_URL` is loopback (`localhost`, `127.0.0.1`, `::1`) or
 *    the URL matches `URI_ALLOW_LIST` (upstream takes every loopback literal); an `http(s)` host
 *    with unusual characters: no;
 * 4. otherwise: when the URL without its fragment matches a `URI_ALLOW_LIST` glob (see
 *    {@link compileGlob}: `*` stays within a `.` or `/` segment, `**` crosses them).
 *
 * @param settings `SITE_URL` and `URI_ALLOW_LIST`.
 * @param redirectTo The requested URL.
 */
export function isRedirectUrlValid(settings: Settings, redirectTo: string): boolean {
  if (redirectTo === '') return false
  const target = parse(redirectTo)
  if (!target) return false
  const site = parse(settings.siteUrl)
  if (
    site &&
    target.protocol === site.protocol &&
    target.hostname === site.hostname &&
    (target.port === site.port || LOOPBACK_HOSTS.has(target.hostname))
  ) {
    return true
  }
  const rawHost = RAW_HOST.exec(redirectTo)?.[1] ?? target.hostname
  const bareHost = rawHost.replace(/^\[(.*)\]$/, '$1')
  if (/^[0-9]+$/.test(bareHost)) return false
  const allowListed = (): boolean => {
    const withoutFragment = redirectTo.split('#', 1)[0] ?? redirectTo
    return settings.uriAllowList.some((glob) => compileGlob(glob).test(withoutFragment))
  }
  if (isIP(bareHost) !== 0) {
    // Stricter than upstream, which takes any loopback literal: a development SITE_URL, or a
    // native app's loopback redirect (RFC 8252 §7.3) named in the allow list.
    return isLoopbackIp(bareHost) && (isLoopbackSite(site) || allowListed())
  }
  // WHATWG read another spelling of an address (`0x7f.1`, `127.1`) as an IP: refuse it.
  if (isIP(target.hostname.replace(/^\[(.*)\]$/, '$1')) !== 0) return false
  const http = target.protocol === 'http:' || target.protocol === 'https:'
  if (http && !REGULAR_HOSTNAME.test(bareHost)) return false
  return allowListed()
}

/** Whether `SITE_URL` is on this machine (`localhost` or a loopback address): development. */
function isLoopbackSite(site: URL | undefined): boolean {
  if (!site) return false
  const host = site.hostname.replace(/^\[(.*)\]$/, '$1')
  return host === 'localhost' || (isIP(host) !== 0 && isLoopbackIp(host))
}

/** The places a request may name its `redirect_to`, each `''` when absent. */
export interface RedirectCandidates {
  /** The `redirect_to` request header. */
  readonly header: string
  /** `redirect_to` in the request body (JSON or form). */
  readonly body: string
  /** `redirect_to` in the query string. */
  readonly query: string
  /** The `Referer` header. */
  readonly referer: string
}

/**
 * Picks a request's redirect target as upstream's `GetReferrer` does: the `redirect_to` header,
 * else the body's `redirect_to`, else the query's (the first that is present); if that one is
 * not allowed (see {@link isRedirectUrlValid}), the `Referer` header; if neither is allowed,
 * `SITE_URL`.
 *
 * @param settings `SITE_URL` and `URI_ALLOW_LIST`.
 * @param candidates What the request carries.
 * @returns An allowed URL, or `SITE_URL`.
 */
export function pickRedirectTo(settings: Settings, candidates: RedirectCandidates): string {
  const requested = candidates.header || candidates.body || candidates.query
  if (isRedirectUrlValid(settings, requested)) return requested
  if (isRedirectUrlValid(settings, candidates.referer)) return candidates.referer
  return settings.siteUrl
}
