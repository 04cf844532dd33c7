/**
 * What every SMS one-time code shares (upstream `sendPhoneConfirmation`): the per-user interval
 * (`SMS_MAX_FREQUENCY`), the fixed codes of test numbers (`SMS_TEST_OTP`), the server-wide budget
 * (`RATE_LIMIT_SMS_SENT`), the text (`SMS_TEMPLATE`) and the mapping of a failed send to
 * upstream's 422 `sms_send_failed`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/phone.go
 * @module
 */
import type { Settings } from '../../conf/settings.js'
import type { AppContext } from '../../context.js'
import { TooManyRequestsError, UnprocessableEntityError } from '../../errors.js'
import { lookupLocale } from '../../locale.js'
import { renderActions } from '../../mailer/template.js'
import { UNKNOWN_CALLER } from '../../hooks/hooks.js'
import type { User } from '../../models/user.js'
import type { SmsChannel } from '../../sms/sms-provider.js'
import type { Queryable } from '../../storage/db.js'
import { generateOtp, tokenHash } from './mail.js'

/** The message id upstream reports for a number of `SMS_TEST_OTP` (no SMS is sent). */
export const TEST_OTP_MESSAGE_ID = 'test-otp'

/** A one-time code sent (or, for a test number, not sent) by SMS. */
export interface SentSmsOtp {
  /** The code. */
  readonly otp: string
  /** `hex(sha224(phone + otp))`, to record. */
  readonly hash: string
  /** The provider's message id (`test-otp` for a test number; `''` when the provider gives none). */
  readonly messageId: string
}

/**
 * Renders `SMS_TEMPLATE` for a code: each `{{ .Code }}` (Go-template spacing and trim markers
 * allowed) becomes the code; any other action becomes nothing, as in mail templates (the same
 * renderer). The text is not HTML-escaped.
 */
export function smsText(template: string, otp: string): string {
  return renderActions(template, (action) => (action === '.Code' ? otp : ''))
}

/**
 * Refuses a code requested less than `SMS_MAX_FREQUENCY` after the previous one.
 *
 * @param sentAt When the previous code of the kind went out, or `null`.
 * @param now Epoch milliseconds.
 * @throws {@link TooManyRequestsError} 429 `over_sms_send_rate_limit` "For security purposes, you
 *   can only request this after N seconds." (N rounded up).
 */
export function enforceSmsFrequency(
  ctx: Pick<AppContext, 'settings'>,
  sentAt: Date | null,
  now: number,
): void {
  if (sentAt === null) return
  const wait = sentAt.getTime() + ctx.settings.sms.maxFrequencyMs - now
  if (wait > 0) {
    throw new TooManyRequestsError(
      'over_sms_send_rate_limit',
      `For security purposes, you can only request this after ${String(Math.ceil(wait / 1000))} seconds.`,
    )
  }
}

/**
 * The fixed code of a number listed in `SMS_TEST_OTP`, while `SMS_TEST_OTP_VALID_UNTIL` (when
 * set) has not passed (upstream `GetTestOTP`).
 *
 * @param phone E.164 digits without `+`.
 * @param now Epoch milliseconds.
 * @returns The code, or `undefined` for a number that gets real messages.
 */
export function testOtpFor(
  settings: Pick<AppContext['settings'], 'sms'>,
  phone: string,
  now: number,
): string | undefined {
  const { testOtp, testOtpValidUntil } = settings.sms
  return Object.hasOwn(testOtp, phone) && (testOtpValidUntil === null || now <= testOtpValidUntil)
    ? testOtp[phone]
    : undefined
}

/**
 * Takes one message from the server-wide SMS budget (`RATE_LIMIT_SMS_SENT`), which every SMS the
 * server sends spends: one-time codes, reauthentication nonces and MFA challenge codes.
 *
 * @param now Epoch milliseconds.
 * @throws {@link TooManyRequestsError} 429 `over_sms_send_rate_limit` "SMS rate limit exceeded".
 */
export async function takeSmsBudget(
  ctx: Pick<AppContext, 'smsLimiter'>,
  now: number,
): Promise<void> {
  if (!(await ctx.smsLimiter.take(now))) {
    throw new TooManyRequestsError('over_sms_send_rate_limit', 'SMS rate limit exceeded')
  }
}

/**
 * The SMS text template for a reader: `SMS_TEMPLATE_<LOCALE>` of the best of their languages (RFC
 * 4647 lookup, see `locale.ts`), else `SMS_TEMPLATE`.
 *
 * @param languages The reader's languages, most preferred first (`readerLanguages`).
 */
export function smsTemplate(settings: Pick<Settings, 'sms'>, languages: readonly string[]): string {
  const locales = settings.sms.localeTemplates
  const language = lookupLocale(languages, new Set(Object.keys(locales)))
  return (language === undefined ? undefined : locales[language]) ?? settings.sms.template
}

/**
 * Draws a code of `SMS_OTP_LENGTH` digits for `phone` and sends it in `SMS_TEMPLATE` through
 * the SMS provider, after the `SMS_MAX_FREQUENCY` check against `sentAt` and taking one message
 * from the `RATE_LIMIT_SMS_SENT` budget. A number listed in `SMS_TEST_OTP` gets its fixed code
 * and no message (until `SMS_TEST_OTP_VALID_UNTIL`, when set). Callers record the returned hash
 * in the transaction they send in, so that a
 * failed send leaves nothing behind.
 *
 * @param phone E.164 digits without `+`.
 * @param otpType Upstream's name of the code in errors: `confirmation`, `phone_change`, ….
 * With `HOOK_SEND_SMS` on, the send-SMS hook gets `{ user, sms: { otp, phone } }` inside
 * `origin.tx` instead of the provider (as upstream; the message id is then `''`).
 *
 * @param sentAt When the previous code of this kind went out, or `null`.
 * @param now Epoch milliseconds.
 * @param origin The transaction and user, for the send-SMS hook.
 * @param languages The reader's languages, which pick `SMS_TEMPLATE_<LOCALE>` ({@link smsTemplate}).
 * @throws {@link TooManyRequestsError} 429 `over_sms_send_rate_limit` (too soon, or "SMS rate
 *   limit exceeded"); {@link UnprocessableEntityError} 422 `sms_send_failed` "Error sending
 *   <otpType> OTP to provider: <the provider's message>"; the hook's error.
 */
export async function sendSmsOtp(
  ctx: Pick<AppContext, 'settings' | 'random' | 'sms' | 'smsLimiter' | 'hooks'>,
  phone: string,
  channel: SmsChannel,
  otpType: string,
  sentAt: Date | null,
  now: number,
  origin: { readonly tx: Queryable; readonly user: User },
  languages: readonly string[] = [],
): Promise<SentSmsOtp> {
  enforceSmsFrequency(ctx, sentAt, now)
  const testOtp = testOtpFor(ctx.settings, phone, now)
  if (testOtp !== undefined) {
    return { otp: testOtp, hash: tokenHash(phone, testOtp), messageId: TEST_OTP_MESSAGE_ID }
  }
  await takeSmsBudget(ctx, now)
  const otp = generateOtp(ctx.random, ctx.settings.sms.otpLength)
  if (ctx.hooks.enabled('sendSms')) {
    await sendSmsByHook(ctx, origin.tx, origin.user, { otp, phone })
    return { otp, hash: tokenHash(phone, otp), messageId: '' }
  }
  let messageId: string
  try {
    messageId = await ctx.sms.sendMessage(
      phone,
      smsText(smsTemplate(ctx.settings, languages), otp),
      channel,
      otp,
    )
  } catch (error) {
    throw new UnprocessableEntityError(
      'sms_send_failed',
      `Error sending ${otpType} OTP to provider: ${error instanceof Error ? error.message : 'failed'}`,
      { cause: error },
    )
  }
  return { otp, hash: tokenHash(phone, otp), messageId }
}

/**
 * Hands a code to the send-SMS hook (`HOOK_SEND_SMS`) inside `tx`: `{ user, sms }`, where `sms`
 * holds `otp`, `phone` and, for an MFA challenge, `sms_type: "mfa"` (upstream's fields).
 *
 * @throws `AuthError` The hook's failure.
 */
export async function sendSmsByHook(
  ctx: Pick<AppContext, 'hooks'>,
  tx: Queryable,
  user: User,
  sms: { readonly otp: string; readonly phone: string; readonly sms_type?: string },
): Promise<void> {
  const payload = { user: await ctx.hooks.user(tx, user), sms }
  await ctx.hooks.invoke('sendSms', payload, UNKNOWN_CALLER, tx)
}
