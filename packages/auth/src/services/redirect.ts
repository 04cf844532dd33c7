import type { Settings } from '../conf/settings.js'

const LOOPBACK = new Set(['localhost', '127.0.0.1', '::1', '[::1]', '0.0.0.0', '::', '[::]'])

function globToRegExp(glob: string): RegExp {
  let out = ''
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i] ?? ''
    if (ch === '*') {
      if (glob[i + 1] === '*') {
        out += '.*'
        i++
      } else {
        out += '[^./]*'
      }
    } else if (ch === '?') {
      out += '[^./]'
    } else {
      out += ch.replace(/[.+^${}()|[\]\\/]/g, '\\$&')
    }
  }
  return new RegExp(`^${out}$`)
}

/**
 * Whether `redirect_to` may be used (upstream `IsRedirectURLValid`): same scheme, host and port as
 * `SITE_URL` (port ignored on loopback hosts), or matching a `URI_ALLOW_LIST` glob (`*` stops at
 * `.` and `/`, `**` crosses them).
 */
export function isRedirectUrlValid(settings: Settings, redirectTo: string): boolean {
  if (redirectTo === '') return false
  let target: URL
  let site: URL
  try {
    target = new URL(redirectTo)
    site = new URL(settings.siteUrl)
  } catch {
    return false
  }
  if (target.protocol === site.protocol && target.hostname === site.hostname) {
    if (target.port === site.port || LOOPBACK.has(target.hostname)) return true
  }
  const withoutFragment = redirectTo.split('#')[0] ?? redirectTo
  return settings.uriAllowList.some((glob) => globToRegExp(glob).test(withoutFragment))
}

/** `redirect_to` if it is allowed, else `SITE_URL`. */
export function redirectTarget(settings: Settings, redirectTo: string): string {
  return isRedirectUrlValid(settings, redirectTo) ? redirectTo : settings.siteUrl
}
