/**
 * Phone one-time codes as upstream's `sendPhoneConfirmation` records them: the sign-up or
 * sign-in code (`confirmation_token`), the code to a new number (`phone_change_token`, with
 * `phone_change`) and the reauthentication code (`reauthentication_token`), each with its
 * sent-at column; and the completion of a phone change.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/phone.go
 * @module
 */
import type { Settings } from '../../conf/settings.js'
import type { AppContext } from '../../context.js'
import { BadRequestError, UnprocessableEntityError } from '../../errors.js'
import { readerLanguages } from '../../locale.js'
import type { OneTimeTokenType } from '../../models/one-time-token.js'
import { findUserOwningPhone, type User, type UserChanges } from '../../models/user.js'
import type { SmsChannel } from '../../sms/sms-provider.js'
import type { Queryable } from '../../storage/db.js'
import { recordTokens } from './mail.js'
import { setOwnIdentity } from './own-identity.js'
import { sendSmsOtp } from './sms.js'

/** Which code a phone gets (upstream's `otpType`, named in the send-failure message). */
export type PhoneOtpKind = 'confirmation' | 'phone_change' | 'reauthentication'

/** Upstream's `InvalidChannelError` text. */
const INVALID_CHANNEL =
  "Invalid channel, supported values are 'sms' or 'whatsapp'. 'whatsapp' is only supported if Twilio or Twilio Verify is used as the provider."

/**
 * Checks the `channel` of a phone request (upstream `IsValidMessageChannel`): `sms` (the default
 * when absent), or `whatsapp` with `SMS_PROVIDER` `twilio` or `twilio_verify`.
 *
 * @param channel The request's `channel`; `''` when absent.
 * @throws {@link BadRequestError} 400 `validation_failed` "Invalid channel, supported values are
 *   'sms' or 'whatsapp'. …".
 */
export function validateChannel(settings: Pick<Settings, 'sms'>, channel: string): SmsChannel {
  if (channel === '' || channel === 'sms') return 'sms'
  const provider = settings.sms.provider
  if (channel === 'whatsapp' && (provider === 'twilio' || provider === 'twilio_verify')) {
    return 'whatsapp'
  }
  throw new BadRequestError('validation_failed', INVALID_CHANNEL)
}

/**
 * Refuses a phone number that another user (of any audience) already holds.
 *
 * @throws {@link UnprocessableEntityError} 422 `phone_exists` "A user with this phone number has
 *   already been registered".
 */
export async function assertPhoneFree(tx: Queryable, phone: string): Promise<void> {
  if (await findUserOwningPhone(tx, phone)) {
    throw new UnprocessableEntityError(
      'phone_exists',
      'A user with this phone number has already been registered',
    )
  }
}

/** The columns each kind of code is recorded in. */
const RECORDS: Readonly<
  Record<
    PhoneOtpKind,
    {
      readonly tokenType: OneTimeTokenType
      readonly sentAt: (user: User) => Date | null
      readonly changes: (hash: string, at: Date, phone: string) => UserChanges
    }
  >
> = {
  confirmation: {
    tokenType: 'confirmation_token',
    sentAt: (u) => u.confirmationSentAt,
    changes: (hash, at) => ({ confirmationToken: hash, confirmationSentAt: at }),
  },
  phone_change: {
    tokenType: 'phone_change_token',
    sentAt: (u) => u.phoneChangeSentAt,
    changes: (hash, at, phone) => ({
      phoneChange: phone,
      phoneChangeToken: hash,
      phoneChangeSentAt: at,
    }),
  },
  reauthentication: {
    tokenType: 'reauthentication_token',
    sentAt: (u) => u.reauthenticationSentAt,
    changes: (hash, at) => ({ reauthenticationToken: hash, reauthenticationSentAt: at }),
  },
}

/** What {@link sendPhoneOtp} did. */
export interface SentPhoneOtp {
  /** The user with the code recorded. */
  readonly user: User
  /** The provider's message id (`test-otp` for an `SMS_TEST_OTP` number; `''` when none). */
  readonly messageId: string
}

/**
 * Sends a code of `kind` to `phone` by SMS or WhatsApp ({@link sendSmsOtp}: `SMS_MAX_FREQUENCY`
 * against the kind's sent-at column, `RATE_LIMIT_SMS_SENT`, `SMS_TEST_OTP`) and records its hash
 * in the kind's columns and `one_time_tokens` inside `tx`; a `phone_change` also records the new
 * number in `phone_change`. A failed send throws, so the transaction writes nothing.
 *
 * @param phone E.164 digits without `+`: the user's phone, or the new number of a change.
 * @param now Epoch milliseconds of the transaction.
 * @param acceptLanguage The request's `Accept-Language`: after `user_metadata.locale`, it picks
 *   the language of the text (`SMS_TEMPLATE_<LOCALE>`).
 * @throws 429 `over_sms_send_rate_limit`; 422 `sms_send_failed` "Error sending <kind> OTP to
 *   provider: …".
 */
export async function sendPhoneOtp(
  ctx: AppContext,
  tx: Queryable,
  user: User,
  phone: string,
  kind: PhoneOtpKind,
  channel: SmsChannel,
  now: number,
  acceptLanguage = '',
): Promise<SentPhoneOtp> {
  const record = RECORDS[kind]
  const languages = readerLanguages(user.userMetadata['locale'], acceptLanguage)
  const origin = { tx, user }
  const sent = await sendSmsOtp(
    ctx,
    phone,
    channel,
    kind,
    record.sentAt(user),
    now,
    origin,
    languages,
  )
  const updated = await recordTokens(
    ctx,
    tx,
    user.id,
    record.changes(sent.hash, new Date(now), phone),
    [{ tokenType: record.tokenType, hash: sent.hash, relatesTo: phone }],
    now,
  )
  return { user: updated, messageId: sent.messageId }
}

/**
 * Completes a pending phone change inside `tx` (upstream `ConfirmPhoneChange`): `phone_change`
 * becomes the phone (confirmed), the pending columns are cleared, the `phone` identity follows
 * (or is created), and an anonymous user becomes permanent. Adds the column changes to `update`,
 * for the caller to write; the caller checks that the number is free.
 *
 * @param user The locked user, with `phoneChange` set.
 * @param now Epoch milliseconds of the transaction.
 */
export async function applyPhoneChange(
  ctx: Pick<AppContext, 'random'>,
  tx: Queryable,
  user: User,
  update: UserChanges,
  now: number,
): Promise<void> {
  Object.assign(update, {
    phone: user.phoneChange,
    phoneChange: '',
    phoneChangeToken: '',
    phoneConfirmedAt: new Date(now),
  } satisfies UserChanges)
  await setOwnIdentity(ctx, tx, user, 'phone', user.phoneChange, update, now)
  if (user.isAnonymous) update.isAnonymous = false
}
