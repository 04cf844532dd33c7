/**
 * The links mails carry: `<API_EXTERNAL_URL resolved with MAILER_URLPATHS_<KIND>>?token=…&type=…
 * &redirect_to=…`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/mailer/templatemailer/templatemailer.go
 * @module
 */
import type { Settings } from '../conf/settings.js'

/** Which `MAILER_URLPATHS_<KIND>` a link uses; magic links use the recovery path (upstream). */
export type LinkPath = keyof Settings['mailer']['urlPaths'] | 'magicLink'

/** Characters after which a `redirect_to` value is percent-encoded in a link. */
const NEEDS_ESCAPE = /[&=#%\s"<>]/

/**
 * The `{{ .ConfirmationURL }}` of a mail (upstream `getPath`): `API_EXTERNAL_URL` resolved with
 * the kind's `MAILER_URLPATHS_*` (an absolute path replaces the external URL's path, as URL
 * resolution does), then `token`, `type` and `redirect_to`. `redirect_to` is written as it is
 * unless it holds `&`, `=`, `#` (or characters not allowed in a URL), then percent-encoded.
 *
 * @param settings `API_EXTERNAL_URL` and `MAILER_URLPATHS_*`.
 * @param path Which path setting.
 * @param params `token` (the token hash), `type` (`signup`, `invite`, `recovery`, `magiclink`,
 *   `email_change`) and the validated `redirectTo` (omitted when `''`).
 */
export function verificationLink(
  settings: Settings,
  path: LinkPath,
  params: { readonly token: string; readonly type: string; readonly redirectTo: string },
): string {
  const paths = settings.mailer.urlPaths
  const url = new URL(path === 'magicLink' ? paths.recovery : paths[path], settings.apiExternalUrl)
  let query = `token=${encodeURIComponent(params.token)}&type=${encodeURIComponent(params.type)}`
  if (params.redirectTo !== '') {
    const value = NEEDS_ESCAPE.test(params.redirectTo)
      ? encodeURIComponent(params.redirectTo)
      : params.redirectTo
    query += `&redirect_to=${value}`
  }
  url.search = ''
  url.hash = ''
  return `${url.toString()}?${query}`
}
