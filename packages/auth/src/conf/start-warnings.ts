/**
 * What the settings leave unable to work, said once at start (upstream starts silently): a
 * server that must confirm sign-ups by mail without an SMTP server, or by SMS without a provider.
 *
 * @module
 */
import { configuredSigningAlgorithm } from '../crypto/jwt.js'
import type { Settings } from './settings.js'

/** A warning logged at start: the setting it is about, and what happens because of it. */
export interface StartWarning {
  /** The variable to set (`SMTP_HOST`, `SMS_PROVIDER`). */
  readonly setting: string
  /** What cannot work and what to do, in a sentence or two. */
  readonly message: string
}

/**
 * The warnings of `settings`:
 * - email sign-ups on, `MAILER_AUTOCONFIRM` off and no `SMTP_HOST`: no mail can be sent, so
 *   sign-ups stay unconfirmed and cannot sign in;
 * - phone sign-ups on, `SMS_AUTOCONFIRM` off and no `SMS_PROVIDER`: phone sign-ups fail;
 * - a `JWT_KEYS` signing key whose algorithm `@supabase/auth-js`' `getClaims()` cannot verify
 *   (it knows RS256 and ES256, and asks the server for HS256 tokens).
 *
 * @param given Which senders the caller injected (`AuthDeps.mailer`, `AuthDeps.sms`): those are
 *   not the settings' and are not warned about.
 */
export function startWarnings(
  settings: Settings,
  given: { readonly mailer: boolean; readonly sms: boolean } = { mailer: false, sms: false },
): readonly StartWarning[] {
  const warnings: StartWarning[] = []
  const { external } = settings
  if (
    !given.mailer &&
    external.emailEnabled &&
    !settings.mailer.autoconfirm &&
    settings.smtp.host === ''
  ) {
    warnings.push({
      setting: 'SMTP_HOST',
      message:
        'SMTP_HOST is not set, so no mail can be sent, and MAILER_AUTOCONFIRM is off: email ' +
        'sign-ups are created unconfirmed and never get their confirmation mail, so they cannot ' +
        'sign in; recovery, magic-link, invite and email-change mails are dropped too. Set ' +
        'SMTP_HOST (and SMTP_PORT, SMTP_USER, SMTP_PASS), or MAILER_AUTOCONFIRM=true to confirm ' +
        'sign-ups at once.',
    })
  }
  if (
    !given.sms &&
    external.phoneEnabled &&
    !settings.sms.autoconfirm &&
    settings.sms.provider === ''
  ) {
    warnings.push({
      setting: 'SMS_PROVIDER',
      message:
        'SMS_PROVIDER is not set, so no SMS can be sent, and SMS_AUTOCONFIRM is off: phone ' +
        'sign-ups and phone sign-in codes fail with 422 sms_send_failed and store nothing ' +
        '(except for the numbers of SMS_TEST_OTP). Set SMS_PROVIDER and its SMS_<PROVIDER>_* ' +
        'settings, or SMS_AUTOCONFIRM=true to confirm phone sign-ups at once.',
    })
  }
  const alg = configuredSigningAlgorithm(settings.jwt.keys)
  if (alg !== undefined && !AUTH_JS_VERIFIES.has(alg)) {
    warnings.push({
      setting: 'JWT_KEYS',
      message:
        `the JWT_KEYS signing key signs ${alg}, which @supabase/auth-js getClaims() cannot ` +
        'verify (it verifies RS256 and ES256 with the JWKS, and asks GET /user for HS256): ' +
        'its getClaims() fails with "Invalid alg claim". Sign with an RS256 or ES256 key if ' +
        'auth-js clients call getClaims().',
    })
  }
  return warnings
}

/** The algorithms `@supabase/auth-js`' `getClaims()` handles (its `getAlgorithm`, and HS256). */
const AUTH_JS_VERIFIES: ReadonlySet<string> = new Set(['RS256', 'ES256', 'HS256'])
