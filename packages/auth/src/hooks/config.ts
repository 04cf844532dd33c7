/**
 * What a hook's settings mean (upstream `conf.ExtensibilityPointConfiguration`): the seven hook
 * points, the `HOOK_<NAME>_URI` targets and the `HOOK_<NAME>_SECRETS` signing secrets. Pure
 * parsing, read by `conf/settings.ts`; the transports are in `http.ts` and `pg-function.ts`.
 *
 * @module
 */
import type { Invalid } from '@gatehouse/settings'
import { invalid } from '@gatehouse/settings'
import { Webhook } from 'standardwebhooks'

/**
 * The hook points: the settings' key, the variables' stem (`HOOK_<STEM>_ENABLED`) and upstream's
 * name in the payload's `metadata.name`.
 */
export const HOOK_POINTS = {
  customAccessToken: { stem: 'CUSTOM_ACCESS_TOKEN', name: 'customize-access-token' },
  sendEmail: { stem: 'SEND_EMAIL', name: 'send-email' },
  sendSms: { stem: 'SEND_SMS', name: 'send-sms' },
  mfaVerificationAttempt: { stem: 'MFA_VERIFICATION_ATTEMPT', name: 'mfa-verification' },
  passwordVerificationAttempt: {
    stem: 'PASSWORD_VERIFICATION_ATTEMPT',
    name: 'password-verification',
  },
  beforeUserCreated: { stem: 'BEFORE_USER_CREATED', name: 'before-user-created' },
  afterUserCreated: { stem: 'AFTER_USER_CREATED', name: 'after-user-created' },
} as const

/** One of the seven hook points (`customAccessToken`, `sendEmail`, …). */
export type HookPoint = keyof typeof HOOK_POINTS

/** Where a hook is called: an HTTP(S) endpoint or a PostgreSQL function of the auth database. */
export type HookTarget =
  | { readonly kind: 'http'; readonly url: string }
  | {
      readonly kind: 'pg-function'
      /** The URI as written (errors name it). */
      readonly uri: string
      readonly schema: string
      readonly name: string
    }

/** A PostgreSQL identifier that needs no quoting care (upstream's `postgresNamesRegexp`). */
const PG_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** `v1,whsec_<base64>`: a symmetric Standard Webhooks secret (upstream's length bounds). */
const SYMMETRIC_SECRET = /^v1,whsec_([A-Za-z0-9+/=]{32,88})$/

/** `v1a,whpk_…:whsk_…`: an asymmetric pair, which upstream accepts here but cannot sign with. */
const ASYMMETRIC_SECRET = /^v1a,whpk_[A-Za-z0-9+/=]{44,}:whsk_[A-Za-z0-9+/=]{44,}$/

/** Host names plain `http://` may point at: this machine only. */
function isLoopback(hostname: string): boolean {
  return (
    hostname === 'localhost' ||
    hostname === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  )
}

/**
 * Parses `HOOK_<NAME>_URI`: `https://…`, `http://` to a loopback host (`localhost`, `127.x.x.x`,
 * `[::1]`), or `pg-functions://postgres/<schema>/<function>` with plain identifiers.
 *
 * @returns `null` for an empty value, the target, or one problem per mistake.
 */
export function parseHookUri(text: string): HookTarget | null | Invalid {
  if (text === '') return null
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return invalid(
      'must be an https:// URL, an http:// URL on localhost or pg-functions://postgres/<schema>/<function>',
    )
  }
  switch (url.protocol) {
    case 'https:':
      return { kind: 'http', url: url.href }
    case 'http:':
      return isLoopback(url.hostname)
        ? { kind: 'http', url: url.href }
        : invalid('http:// is only allowed for localhost, 127.0.0.1 and [::1]; use https://')
    case 'pg-functions:':
      return parsePgFunction(text, url)
    default:
      return invalid(
        `scheme ${url.protocol} is not supported: use https://, http:// on localhost or pg-functions://`,
      )
  }
}

function parsePgFunction(text: string, url: URL): HookTarget | Invalid {
  const problems: string[] = []
  if (url.host !== 'postgres') problems.push('a pg-functions:// URI must name the host postgres')
  const parts = url.pathname.split('/').slice(1)
  if (parts.length !== 2) {
    problems.push('a pg-functions:// URI must be pg-functions://postgres/<schema>/<function>')
  }
  const [schema = '', name = ''] = parts
  if (parts.length === 2) {
    if (!PG_NAME.test(schema)) problems.push(`invalid schema name: ${schema}`)
    if (!PG_NAME.test(name)) problems.push(`invalid function name: ${name}`)
  }
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.port !== '') {
    problems.push('a pg-functions:// URI takes no user, port, query or fragment')
  }
  return problems.length > 0 ? invalid(problems) : { kind: 'pg-function', uri: text, schema, name }
}

/**
 * Parses `HOOK_<NAME>_SECRETS`: `v1,whsec_<base64>` secrets separated by `|` (several during a
 * rotation; each request is signed with all of them). Empty parts are skipped, as upstream.
 *
 * @returns The secrets (base64 keys without the `v1,whsec_` prefix), or one problem per bad
 *   secret (numbered, never echoed).
 */
export function parseHookSecrets(text: string): readonly string[] | Invalid {
  const parts = text.split('|').filter((part) => part !== '')
  const problems: string[] = []
  const keys = parts.flatMap((part, index) => {
    const which = `secret ${String(index + 1)}`
    const match = SYMMETRIC_SECRET.exec(part)
    if (match?.[1] !== undefined) {
      const key = match[1]
      if (!isSigningKey(key)) {
        problems.push(`${which} is not valid base64 after v1,whsec_`)
        return []
      }
      return [key]
    }
    problems.push(
      ASYMMETRIC_SECRET.test(part)
        ? `${which} is an asymmetric v1a secret: only symmetric v1,whsec_ secrets can sign`
        : `${which} must be v1,whsec_ followed by 32 to 88 base64 characters`,
    )
    return []
  })
  return problems.length > 0 ? invalid(problems, { echo: false }) : keys
}

/** Whether the Standard Webhooks library can sign with a base64 key. */
function isSigningKey(key: string): boolean {
  try {
    new Webhook(key).sign('check', new Date(0), '')
    return true
  } catch {
    return false
  }
}
