/**
 * Password-less email sign-in: `POST /magiclink` and the email form of `POST /otp`. A confirmed
 * user gets a magic link and code; an unknown or unconfirmed address is signed up (without a
 * password) and gets the sign-up confirmation instead, unless `create_user` is false.
 *
 * The email requests answer `{}` for every address, at once: they only queue a `magic_link` job
 * (see `services/shared/mail-queue.ts`), and the worker decides what the address gets. What depends on
 * the address is silent: an unknown address with `create_user` false or under `DISABLE_SIGNUP`
 * gets nothing, `SMTP_MAX_FREQUENCY` drops a request, an address of another audience gets
 * nothing. Stricter than upstream, which answers 422 `otp_disabled` or `signup_disabled` for
 * unknown addresses, 429 for known ones sent to recently, and takes longer when it sends. The
 * phone form of `/otp` keeps upstream's answers (see SECURITY.md).
 *
 * With `HOOK_BEFORE_USER_CREATED` or `HOOK_AFTER_USER_CREATED` on, an unknown address (when
 * `create_user` and sign-ups allow it) is signed up in the request instead, as upstream signs it
 * up there: the before hook's refusal (its `http_code` and `message`) and the after hook's
 * failure are the request's answer, and the job then finds the user and sends its confirmation
 * (or, under `MAILER_AUTOCONFIRM`, its magic link). The answer then depends on the address, as
 * upstream's does (see SECURITY.md).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/magic_link.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/otp.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError, UnprocessableEntityError } from '../errors.js'
import { auditActor } from '../models/audit-log.js'
import type { JsonObject } from '../models/json.js'
import {
  findUserByPhone,
  findUserOwningEmail,
  findUserOwningPhone,
  getUserById,
  type User,
} from '../models/user.js'
import { isUniqueViolation, type Queryable } from '../storage/db.js'
import { prepareConfirmation } from './shared/confirmation.js'
import { maxFrequencyWait, queueMail } from './shared/mail.js'
import { randomPassword } from './shared/passwords.js'
import { parsePkceChallenge } from './shared/pkce.js'
import { queuedEmailRequest, queueRecoveryMail, type QueuedEmailRequest } from './recovery.js'
import { afterUserCreated, createUser } from './users.js'
import { sendPhoneOtp, validateChannel } from './shared/phone.js'
import { validateEmail, validatePhone } from './shared/validation.js'

/** A magic-link request; absent text fields are `''`. */
export interface MagicLinkParams {
  readonly email: string
  /** `user_metadata` of a user signed up on the way. */
  readonly data: JsonObject
  /** Whether an unknown address may be signed up (`create_user`, default true). */
  readonly createUser: boolean
  readonly codeChallenge: string
  readonly codeChallengeMethod: string
  /** Where the user lands: the request's validated `redirect_to`, else `SITE_URL`. */
  readonly redirectTo: string
}

/** The `magic_link` job of the mail queue: a checked email `/otp` or `/magiclink` request. */
export interface MagicLinkJob extends QueuedEmailRequest {
  /** `user_metadata` of a user signed up on the way. */
  readonly data: JsonObject
  readonly createUser: boolean
  /**
   * The request already signed up an unknown address (a user-created hook is on, see the module
   * comment): the job creates no user. Absent in jobs queued without the hooks.
   */
  readonly signedUpInRequest?: boolean
}

/**
 * Checks a magic-link request and queues it (see the module comment): a magic link, or to an
 * unknown or unconfirmed address the sign-up confirmation, goes out after the answer.
 *
 * @throws {@link UnprocessableEntityError} 422 `email_provider_disabled` "Email logins are
 *   disabled", `validation_failed` "Password recovery requires an email" (upstream's text);
 *   {@link BadRequestError} the email and PKCE texts; the database's error when the job cannot
 *   be stored.
 */
export async function sendMagicLink(
  ctx: AppContext,
  params: MagicLinkParams,
  client: RequestContext,
): Promise<void> {
  if (!ctx.settings.external.emailEnabled) {
    throw new UnprocessableEntityError('email_provider_disabled', 'Email logins are disabled')
  }
  if (params.email === '') {
    throw new UnprocessableEntityError('validation_failed', 'Password recovery requires an email')
  }
  const email = validateEmail(params.email)
  const pkce = parsePkceChallenge(params.codeChallenge, params.codeChallengeMethod)
  const hooked = ctx.hooks.enabled('beforeUserCreated') || ctx.hooks.enabled('afterUserCreated')
  if (hooked && params.createUser && !ctx.settings.disableSignup) {
    await signUpInRequest(ctx, email, params.data, client)
  }
  const job: MagicLinkJob = {
    ...queuedEmailRequest(email, params.redirectTo, pkce, client),
    data: params.data,
    createUser: params.createUser,
    ...(hooked ? { signedUpInRequest: true } : {}),
  }
  await ctx.mailQueue.submit(ctx.db, 'magic_link', job)
}

/**
 * Signs up an address no user owns, in the request (a user-created hook is on): the user is
 * created in a transaction of its own (`HOOK_BEFORE_USER_CREATED` runs in it and may refuse),
 * then `HOOK_AFTER_USER_CREATED` is told. A known address, or one a concurrent request took,
 * is left to the job.
 *
 * @throws `AuthError` The before hook's refusal or a hook's failure.
 */
async function signUpInRequest(
  ctx: AppContext,
  email: string,
  data: JsonObject,
  client: RequestContext,
): Promise<void> {
  if (await findUserOwningEmail(ctx.db, email)) return
  let created: User | undefined
  try {
    await ctx.db.transaction(async (tx) => {
      created = undefined
      const now = ctx.clock.now()
      if (await findUserOwningEmail(tx, email)) return
      created = await signUpByEmail(ctx, tx, email, data, client, now)
    })
  } catch (error) {
    // A concurrent sign-up took the address between our lookup and our insert.
    if (!isUniqueViolation(error, ctx.db.t.users)) throw error
    created = undefined
  }
  if (created) await afterUserCreated(ctx, created, client)
}

/**
 * Creates the user of an unknown address inside `tx`, without a password (a random one, as
 * upstream) and records `user_signedup`.
 */
async function signUpByEmail(
  ctx: AppContext,
  tx: Queryable,
  email: string,
  data: JsonObject,
  client: Pick<RequestContext, 'aud' | 'ip'>,
  now: number,
): Promise<User> {
  const { user } = await createUser(
    ctx,
    tx,
    {
      aud: client.aud,
      email,
      data,
      emailConfirmed: ctx.settings.mailer.autoconfirm,
      // Signed up with a temporary password, as upstream.
      encryptedPassword: await ctx.passwords.hash(randomPassword(ctx)),
    },
    now,
  )
  await ctx.audit.record(
    tx,
    {
      id: ctx.random.uuid(),
      actor: auditActor(user),
      action: 'user_signedup',
      traits: { provider: 'email' },
      ip: client.ip,
    },
    now,
  )
  return user
}

/**
 * Runs a `magic_link` job inside `tx`: a confirmed user of the request's audience gets a magic
 * link queued (see `queueRecoveryMail`); an unconfirmed one the sign-up confirmation (at most
 * once per `SMTP_MAX_FREQUENCY`); an unknown address is signed up first (without a password, as
 * upstream) when `create_user` and sign-ups allow it, unless the request signed it up (a
 * user-created hook is on); anything else gets nothing.
 *
 * @param now Epoch milliseconds of the transaction.
 */
export async function runMagicLinkJob(
  ctx: AppContext,
  tx: Queryable,
  job: MagicLinkJob,
  now: number,
): Promise<void> {
  const { settings } = ctx
  const { client } = job
  const pkce = job.pkce ?? undefined
  const owner = await findUserOwningEmail(tx, job.email)
  // The address belongs to another audience: nothing to send.
  if (owner && owner.aud !== client.aud) return
  let user = owner ? await getUserById(tx, owner.id, true) : undefined
  if (!user) {
    // Signed up in the request when it was unknown there: the user is gone since, or the
    // address was taken and given up; nothing to send either way.
    if (!job.createUser || settings.disableSignup || job.signedUpInRequest === true) return
    user = await signUpByEmail(ctx, tx, job.email, job.data, client, now)
  }
  if (user.emailConfirmedAt === null) {
    if (maxFrequencyWait(settings, user.confirmationSentAt, now) > 0) return
    const prepared = await prepareConfirmation(
      ctx,
      tx,
      user,
      'confirmation',
      job.redirectTo,
      now,
      pkce,
    )
    const acceptLanguage = client.acceptLanguage ?? ''
    await queueMail(ctx, tx, { ...prepared.message, acceptLanguage }, now, prepared.user)
    return
  }
  await queueRecoveryMail(ctx, tx, user, 'magic_link', job.redirectTo, client, now, pkce)
}

/** A `POST /otp` request; absent text fields are `''`. */
export interface OtpParams extends MagicLinkParams {
  readonly phone: string
  readonly channel: string
}

/** What `POST /otp` answers: the SMS provider's message id of a phone code (`''` for none). */
export interface OtpOutcome {
  readonly messageId: string
}

/**
 * The phone form of `POST /otp` (upstream `SmsOtp`): an unknown number is signed up (without a
 * password, unless `create_user` is false) and an unconfirmed one gets the sign-up code, both
 * answered without a message id; a confirmed number (or, under `SMS_AUTOCONFIRM`, one just
 * signed up) gets a sign-in code in `confirmation_token`, verified with type `sms`. A number of
 * another audience is answered as a send and gets nothing.
 */
async function sendPhoneOtpSignIn(
  ctx: AppContext,
  params: OtpParams,
  phone: string,
  client: RequestContext,
): Promise<OtpOutcome> {
  const { settings } = ctx
  if (!settings.external.phoneEnabled) {
    throw new BadRequestError('phone_provider_disabled', 'Unsupported phone provider')
  }
  const channel = validateChannel(settings, params.channel)
  const language = client.acceptLanguage ?? ''
  // Set inside the transaction: the user this request signed up, for the after-created hook.
  let created: User | undefined
  const outcome = await ctx.db.transaction(async (tx) => {
    created = undefined
    const now = ctx.clock.now()
    const owner = await findUserOwningPhone(tx, phone)
    if (owner && owner.aud !== client.aud) return { messageId: '' }
    let user = owner ? await getUserById(tx, owner.id, true) : undefined
    const audit = async (action: 'user_signedup' | 'user_recovery_requested', u: User) => {
      await ctx.audit.record(
        tx,
        {
          id: ctx.random.uuid(),
          actor: auditActor(u),
          action,
          traits: { provider: 'phone' },
          ip: client.ip,
        },
        now,
      )
    }
    if (!user) {
      if (settings.disableSignup) {
        throw new UnprocessableEntityError(
          'signup_disabled',
          'Signups not allowed for this instance',
        )
      }
      user = (
        await createUser(
          ctx,
          tx,
          {
            aud: client.aud,
            phone,
            data: params.data,
            phoneConfirmed: settings.sms.autoconfirm,
            // Signed up with a temporary password, as upstream.
            encryptedPassword: await ctx.passwords.hash(randomPassword(ctx)),
          },
          now,
        )
      ).user
      created = user
      await audit('user_signedup', user)
    }
    if (user.phoneConfirmedAt === null) {
      await sendPhoneOtp(ctx, tx, user, phone, 'confirmation', channel, now, language)
      return { messageId: '' }
    }
    await audit('user_recovery_requested', user)
    const sent = await sendPhoneOtp(ctx, tx, user, phone, 'confirmation', channel, now, language)
    return { messageId: sent.messageId }
  })
  if (created) await afterUserCreated(ctx, created, client)
  return outcome
}

/**
 * `POST /otp`: an email gets a magic link and code (see {@link sendMagicLink}), a phone an SMS
 * or WhatsApp code (`channel`; see `sendPhoneOtpSignIn`).
 *
 * @returns The message id of a phone code sent to a confirmed number, else `''`.
 * @throws {@link BadRequestError} 400 `validation_failed`: "Only an email address or phone
 *   number should be provided", "Channel should only be specified with Phone OTP", "One of email
 *   or phone must be set", the phone and channel texts; 400 `phone_provider_disabled`
 *   "Unsupported phone provider"; {@link UnprocessableEntityError} 422 `otp_disabled` "Signups
 *   not allowed for otp" (`create_user` false, unknown number, as upstream: the phone form is
 *   not queued), `signup_disabled`; 429 `over_sms_send_rate_limit`; 422 `sms_send_failed`; and
 *   what {@link sendMagicLink} throws.
 */
export async function sendOtp(
  ctx: AppContext,
  params: OtpParams,
  client: RequestContext,
): Promise<OtpOutcome> {
  if (params.email !== '' && params.phone !== '') {
    throw new BadRequestError(
      'validation_failed',
      'Only an email address or phone number should be provided',
    )
  }
  if (params.email !== '' && params.channel !== '') {
    throw new BadRequestError(
      'validation_failed',
      'Channel should only be specified with Phone OTP',
    )
  }
  if (params.email !== '') {
    // `create_user` false is applied by the job, silently: an unknown address is not told.
    await sendMagicLink(ctx, params, client)
    return { messageId: '' }
  }
  if (params.phone === '') {
    throw new BadRequestError('validation_failed', 'One of email or phone must be set')
  }
  const phone = validatePhone(params.phone)
  if (!params.createUser) {
    // Upstream `shouldCreateUser`: without `create_user`, only a known number gets a code.
    const known = await findUserByPhone(ctx.db, phone, client.aud)
    if (!known) throw new UnprocessableEntityError('otp_disabled', 'Signups not allowed for otp')
  }
  return sendPhoneOtpSignIn(ctx, params, phone, client)
}
