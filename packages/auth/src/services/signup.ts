/**
 * Sign-up (`POST /signup`): with email or phone and a password, or anonymous when enabled.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/signup.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/anonymous.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError, UnprocessableEntityError } from '../errors.js'
import { auditActor } from '../models/audit-log.js'
import type { Identity } from '../models/identity.js'
import type { JsonObject } from '../models/json.js'
import { findUserOwningEmail, findUserOwningPhone, type User } from '../models/user.js'
import { isUniqueViolation, type Queryable } from '../storage/db.js'
import type { IssuedSession, PendingTokens } from '../sessions/token-service.js'
import { sendConfirmation } from './shared/confirmation.js'
import { takeOverUnconfirmedBySignUp } from './shared/identities.js'
import { enforceStrongPassword } from './shared/passwords.js'
import { sendPhoneOtp, validateChannel } from './shared/phone.js'
import { parsePkceChallenge } from './shared/pkce.js'
import { afterUserCreated, createUser } from './users.js'
import { validateEmail, validatePhone } from './shared/validation.js'

/** A sign-up request; absent text fields are `''`. */
export interface SignUpParams {
  readonly email: string
  readonly phone: string
  readonly password: string
  /** Becomes `user_metadata` (with the identity's claims). */
  readonly data: JsonObject
  readonly channel: string
  readonly codeChallenge: string
  readonly codeChallengeMethod: string
  /** Where the user lands: the request's validated `redirect_to`, else `SITE_URL`. */
  readonly redirectTo: string
}

/**
 * What a sign-up answers: a session (auto-confirm, anonymous), or the user awaiting
 * confirmation (for a taken email or phone, a faux one with no identities).
 */
export type SignUpOutcome =
  | { readonly kind: 'session'; readonly session: IssuedSession }
  | { readonly kind: 'user'; readonly user: User; readonly identities: readonly Identity[] }

/**
 * The user answered for a duplicate sign-up, so that existence is not revealed (upstream
 * `sanitizeUser`): a random id, the request's audience and data, nothing confirmed, no identities.
 * Used for confirmed and unconfirmed accounts alike, in any audience: the account's own record
 * (id, metadata) is never returned.
 */
function fauxUser(
  id: string,
  provider: 'email' | 'phone',
  params: SignUpParams,
  aud: string,
  now: number,
): User {
  const at = new Date(now)
  return {
    id,
    aud,
    role: '',
    email: provider === 'email' ? params.email : '',
    encryptedPassword: '',
    emailConfirmedAt: null,
    invitedAt: null,
    confirmationToken: '',
    confirmationSentAt: at,
    recoveryToken: '',
    recoverySentAt: null,
    emailChange: '',
    emailChangeTokenNew: '',
    emailChangeTokenCurrent: '',
    emailChangeConfirmStatus: 0,
    emailChangeSentAt: null,
    lastSignInAt: null,
    appMetadata: { provider, providers: [provider] },
    userMetadata: params.data,
    createdAt: at,
    updatedAt: at,
    phone: provider === 'phone' ? params.phone : '',
    phoneConfirmedAt: null,
    phoneChange: '',
    phoneChangeToken: '',
    phoneChangeSentAt: null,
    confirmedAt: null,
    bannedUntil: null,
    reauthenticationToken: '',
    reauthenticationSentAt: null,
    isSsoUser: false,
    deletedAt: null,
    isAnonymous: false,
  }
}

async function signUpAnonymously(
  ctx: AppContext,
  data: JsonObject,
  client: RequestContext,
): Promise<SignUpOutcome> {
  if (!ctx.settings.external.anonymousUsersEnabled) {
    throw new UnprocessableEntityError(
      'anonymous_provider_disabled',
      'Anonymous sign-ins are disabled',
    )
  }
  const pending = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const { user } = await createUser(ctx, tx, { aud: client.aud, data, anonymous: true }, now)
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(user),
        action: 'user_signedup',
        traits: { provider: 'anonymous' },
        ip: client.ip,
      },
      now,
    )
    return ctx.tokens.startSession(tx, user, 'anonymous', client, false)
  })
  ctx.metrics.signUp('anonymous')
  await afterUserCreated(ctx, pending.user, client)
  return { kind: 'session', session: await ctx.tokens.finish(pending) }
}

/**
 * Signs a user up. Without email and phone, an anonymous user (when enabled) gets a session. With
 * auto-confirm on for the provider, the new user gets a session; otherwise a confirmation is sent
 * and the user returned. A taken email or phone (in any audience, or taken concurrently) is
 * answered with a faux user, never the account's record; the owner of an unconfirmed account
 * gets the confirmation again.
 *
 * @param signal Aborts the queued password hash (the request's deadline).
 * @throws {@link BadRequestError} `validation_failed` and the provider switches, in upstream's
 *   order; {@link UnprocessableEntityError} `signup_disabled`, `anonymous_provider_disabled`;
 *   the password policy's errors; 400 `user_already_exists` for a taken phone under SMS
 *   auto-confirm.
 */
export async function signUp(
  ctx: AppContext,
  params: SignUpParams,
  client: RequestContext,
  signal: AbortSignal,
): Promise<SignUpOutcome> {
  const { settings } = ctx
  if (params.email === '' && params.phone === '') {
    return signUpAnonymously(ctx, params.data, client)
  }
  if (settings.disableSignup) {
    throw new UnprocessableEntityError('signup_disabled', 'Signups not allowed for this instance')
  }
  if (params.password === '') {
    throw new BadRequestError('validation_failed', 'Signup requires a valid password')
  }
  await enforceStrongPassword(ctx, params.password)
  if (params.email !== '' && params.phone !== '') {
    throw new BadRequestError(
      'validation_failed',
      'Only an email address or phone number should be provided on signup.',
    )
  }
  const provider = params.email !== '' ? 'email' : 'phone'
  const channel = provider === 'phone' ? validateChannel(settings, params.channel) : 'sms'
  if (provider === 'phone' && params.codeChallenge !== '') {
    throw new BadRequestError('validation_failed', 'PKCE not supported for phone signups')
  }
  const pkce = parsePkceChallenge(params.codeChallenge, params.codeChallengeMethod)
  let email = ''
  let phone = ''
  if (provider === 'email') {
    if (!settings.external.emailEnabled) {
      throw new BadRequestError('email_provider_disabled', 'Email signups are disabled')
    }
    email = validateEmail(params.email)
  } else {
    if (!settings.external.phoneEnabled) {
      throw new BadRequestError('phone_provider_disabled', 'Phone signups are disabled')
    }
    phone = validatePhone(params.phone)
  }
  const autoconfirm = provider === 'email' ? settings.mailer.autoconfirm : settings.sms.autoconfirm
  const { redirectTo } = params
  const encryptedPassword = await ctx.passwords.hash(params.password, signal)

  /**
   * The answer to a sign-up of an email or phone that is taken: the faux user (or, for a phone
   * under SMS auto-confirm, 400 as the spec says). Never the account itself.
   */
  const duplicate = (): SignUpOutcome => {
    if (provider === 'phone' && settings.sms.autoconfirm) {
      throw new BadRequestError('user_already_exists', 'User already registered')
    }
    const faux = fauxUser(
      ctx.random.uuid(),
      provider,
      { ...params, email, phone },
      client.aud,
      ctx.clock.now(),
    )
    return { kind: 'user', user: faux, identities: [] }
  }

  const language = client.acceptLanguage ?? ''
  /** Sends the confirmation: the mail, or the code by SMS or WhatsApp to the phone signed up. */
  const confirm = async (tx: Queryable, user: User, now: number): Promise<User> =>
    provider === 'email'
      ? sendConfirmation(ctx, tx, user, 'confirmation', redirectTo, now, language, pkce)
      : (await sendPhoneOtp(ctx, tx, user, phone, 'confirmation', channel, now, language)).user

  let outcome: SignUpOutcome | { readonly kind: 'pending'; readonly pending: PendingTokens }
  // Set inside the transaction's callback: whether this request inserted the user.
  const signedUp: { done: boolean; user?: User } = { done: false }
  try {
    outcome = await ctx.db.transaction(async (tx) => {
      const now = ctx.clock.now()
      // Emails and phones are unique across audiences: a client-chosen X-JWT-AUD must not turn
      // a duplicate into a new user (and a unique violation).
      const existing =
        provider === 'email'
          ? await findUserOwningEmail(tx, email)
          : await findUserOwningPhone(tx, phone)
      if (existing) {
        const answer = duplicate() // before anything is sent: it may be an error
        const confirmed =
          provider === 'email'
            ? existing.emailConfirmedAt !== null
            : existing.phoneConfirmedAt !== null
        const resend = existing.aud === client.aud && !confirmed
        // The owner lost the confirmation: send it again (the account is not changed, except
        // that a provider identity with the unverified address gives way to the address's own).
        if (resend) {
          const value = provider === 'email' ? email : phone
          const user = await takeOverUnconfirmedBySignUp(
            ctx,
            tx,
            existing,
            provider,
            value,
            params.data,
            now,
          )
          await confirm(tx, user, now)
        }
        await ctx.audit.record(
          tx,
          {
            id: ctx.random.uuid(),
            actor: auditActor(existing),
            action: resend ? 'user_confirmation_requested' : 'user_repeated_signup',
            traits: { provider },
            ip: client.ip,
          },
          now,
        )
        return answer
      }
      const created = await createUser(
        ctx,
        tx,
        {
          aud: client.aud,
          email,
          phone,
          encryptedPassword,
          data: params.data,
          emailConfirmed: autoconfirm,
          phoneConfirmed: autoconfirm,
        },
        now,
      )
      signedUp.done = true
      signedUp.user = created.user
      await ctx.audit.record(
        tx,
        {
          id: ctx.random.uuid(),
          actor: auditActor(created.user),
          action: 'user_signedup',
          traits: { provider },
          ip: client.ip,
        },
        now,
      )
      if (autoconfirm) {
        return {
          kind: 'pending' as const,
          pending: await ctx.tokens.startSession(tx, created.user, 'password', client, false),
        }
      }
      const user = await confirm(tx, created.user, now)
      return { kind: 'user' as const, user, identities: created.identities }
    })
  } catch (error) {
    // A concurrent sign-up took the email or phone between our lookup and our insert.
    if (!isUniqueViolation(error, ctx.db.t.users)) throw error
    signedUp.done = false
    outcome = duplicate()
  }
  if (signedUp.done) ctx.metrics.signUp(provider)
  if (signedUp.done && signedUp.user) await afterUserCreated(ctx, signedUp.user, client)
  if (outcome.kind === 'pending') {
    return { kind: 'session', session: await ctx.tokens.finish(outcome.pending) }
  }
  return outcome
}
