import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { addAuditLogEntry } from '../models/audit-log.js'
import { insertIdentity, findIdentitiesByUser } from '../models/identity.js'
import {
  findUserOwningEmail,
  findUserOwningPhone,
  insertUser,
  userToJson,
  type User,
} from '../models/user.js'
import { isUniqueViolation } from '../storage/db.js'
import { auditActor } from '../tokens/service.js'
import { jsonBody, obj, queryParam, str, validateEmail, validatePhone } from './body.js'
import { sendConfirmation } from './confirmation.js'
import type { AppContext } from './context.js'
import { verifyCaptcha, enforceLimit } from './guards.js'
import { enforcePasswordPolicy } from './password-policy.js'
import { redirectTarget } from './redirect.js'
import { requestContext } from './request-context.js'
import { BadRequestError, UnprocessableEntityError } from '../errors.js'

/** `channel` values of phone sign-ups. */
const CHANNELS = new Set(['sms', 'whatsapp'])

/**
 * The fake user returned for a duplicate sign-up so that existence is not revealed (upstream
 * `sanitizeUser`): a random id, the request's audience and data, nothing confirmed, no
 * identities. Used for confirmed and unconfirmed accounts alike, in any audience: the account's
 * own record (id, metadata) is never returned.
 */
function fauxUser(
  provider: 'email' | 'phone',
  email: string,
  phone: string,
  aud: string,
  data: Record<string, unknown>,
  now: number,
): Record<string, unknown> {
  const at = new Date(now).toISOString()
  return {
    id: randomUUID(),
    aud,
    role: '',
    email: provider === 'email' ? email : '',
    phone: provider === 'phone' ? phone : '',
    confirmation_sent_at: at,
    app_metadata: { provider, providers: [provider] },
    user_metadata: data,
    identities: [],
    created_at: at,
    updated_at: at,
    is_anonymous: false,
  }
}

/**
 * `POST /signup`: email or phone with password (or anonymous, when enabled).
 *
 * @see ../reference §1.3 "POST /signup"
 */
export function signupRoutes(app: FastifyInstance, ctx: AppContext): void {
  const { settings } = ctx
  app.post('/signup', async (request, reply) => {
    const body = jsonBody(request)
    await verifyCaptcha(ctx, request, body)
    await enforceLimit(ctx, request, 'signup')
    const rc = requestContext(request, settings)
    let email = str(body, 'email')
    let phone = str(body, 'phone')
    const password = str(body, 'password')
    const data = obj(body, 'data') ?? {}

    if (email === '' && phone === '') {
      if (!settings.external.anonymousUsersEnabled) {
        throw new UnprocessableEntityError(
          'anonymous_provider_disabled',
          'Anonymous sign-ins are disabled',
        )
      }
      const pending = await ctx.db.transaction(async (tx) => {
        const now = ctx.clock.now()
        const user = await insertUser(tx, {
          id: randomUUID(),
          aud: rc.aud,
          role: settings.jwt.defaultGroupName,
          userMetadata: data,
          isAnonymous: true,
          createdAt: new Date(now),
        })
        await addAuditLogEntry(
          tx,
          {
            actor: auditActor(user),
            action: 'user_signedup',
            traits: { provider: 'anonymous' },
            ip: rc.ip,
          },
          now,
        )
        return ctx.tokens.startSession(tx, user, 'anonymous', rc, false)
      })
      return reply.send(await ctx.tokens.finish(pending))
    }

    if (settings.disableSignup) {
      throw new UnprocessableEntityError('signup_disabled', 'Signups not allowed for this instance')
    }
    if (password === '')
      throw new BadRequestError('validation_failed', 'Signup requires a valid password')
    enforcePasswordPolicy(settings, password)
    if (email !== '' && phone !== '') {
      throw new BadRequestError(
        'validation_failed',
        'Only an email address or phone number should be provided on signup.',
      )
    }
    const provider = email !== '' ? 'email' : 'phone'
    if (provider === 'phone') {
      const channel = str(body, 'channel') || 'sms'
      if (!CHANNELS.has(channel)) {
        throw new BadRequestError(
          'validation_failed',
          "Invalid channel, supported values are 'sms' or 'whatsapp'. 'whatsapp' is only supported if Twilio or Twilio Verify is used as the provider.",
        )
      }
    }
    const challenge = str(body, 'code_challenge')
    const challengeMethod = str(body, 'code_challenge_method')
    if ((challenge === '') !== (challengeMethod === '')) {
      throw new BadRequestError(
        'validation_failed',
        'PKCE flow requires code_challenge_method and code_challenge',
      )
    }
    if (provider === 'phone' && challenge !== '') {
      throw new BadRequestError('validation_failed', 'PKCE not supported for phone signups')
    }
    if (provider === 'email') {
      if (!settings.external.emailEnabled) {
        throw new BadRequestError('email_provider_disabled', 'Email signups are disabled')
      }
      email = validateEmail(email)
    } else {
      if (!settings.external.phoneEnabled) {
        throw new BadRequestError('phone_provider_disabled', 'Phone signups are disabled')
      }
      phone = validatePhone(phone)
    }
    const autoconfirm =
      provider === 'email' ? settings.mailer.autoconfirm : settings.sms.autoconfirm
    const redirectTo = redirectTarget(settings, queryParam(request, 'redirect_to'))
    const encryptedPassword = await ctx.passwords.hash(password, request.deadline)

    /**
     * The answer to a sign-up of an email or phone that is taken: the faux user (or, for a phone
     * under SMS auto-confirm, 400 as the spec says). Never the account itself.
     */
    const duplicate = () => {
      if (provider === 'phone' && settings.sms.autoconfirm) {
        throw new BadRequestError('user_already_exists', 'User already registered')
      }
      return {
        kind: 'user' as const,
        json: fauxUser(provider, email, phone, rc.aud, data, ctx.clock.now()),
      }
    }

    let result
    try {
      result = await ctx.db.transaction(async (tx) => {
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
          if (existing.aud === rc.aud && !confirmed) {
            // The owner lost the confirmation: send it again (the account is not changed).
            await sendConfirmation(ctx, tx, existing, 'confirmation', redirectTo)
          }
          await addAuditLogEntry(
            tx,
            {
              actor: auditActor(existing),
              action:
                existing.aud === rc.aud && !confirmed
                  ? 'user_confirmation_requested'
                  : 'user_repeated_signup',
              traits: { provider },
              ip: rc.ip,
            },
            now,
          )
          return answer
        }
        const id = randomUUID()
        const identityData = {
          ...data,
          sub: id,
          ...(provider === 'email' ? { email } : { phone }),
          email_verified: provider === 'email' && autoconfirm,
          phone_verified: provider === 'phone' && autoconfirm,
        }
        let user: User = await insertUser(tx, {
          id,
          aud: rc.aud,
          role: settings.jwt.defaultGroupName,
          email: provider === 'email' ? email : '',
          phone: provider === 'phone' ? phone : '',
          encryptedPassword,
          appMetadata: { provider, providers: [provider] },
          userMetadata: identityData,
          emailConfirmedAt: provider === 'email' && autoconfirm ? new Date(now) : null,
          phoneConfirmedAt: provider === 'phone' && autoconfirm ? new Date(now) : null,
          createdAt: new Date(now),
        })
        await insertIdentity(tx, { providerId: id, userId: id, provider, identityData }, now)
        await addAuditLogEntry(
          tx,
          { actor: auditActor(user), action: 'user_signedup', traits: { provider }, ip: rc.ip },
          now,
        )
        if (autoconfirm) {
          return {
            kind: 'session' as const,
            pending: await ctx.tokens.startSession(tx, user, 'password', rc, false),
          }
        }
        user = await sendConfirmation(ctx, tx, user, 'confirmation', redirectTo)
        return {
          kind: 'user' as const,
          json: userToJson(user, await findIdentitiesByUser(tx, id)),
        }
      })
    } catch (error) {
      // A concurrent sign-up took the email or phone between our lookup and our insert.
      if (!isUniqueViolation(error, ctx.db.t.users)) throw error
      result = duplicate()
    }
    if (result.kind === 'session') return reply.send(await ctx.tokens.finish(result.pending))
    return reply.send(result.json)
  })
}
