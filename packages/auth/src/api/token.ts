import type { FastifyInstance, FastifyRequest } from 'fastify'
import { checkPasswordStrength } from '../crypto/password.js'
import { isWellFormedRefreshToken } from '../crypto/refresh-token.js'
import { findUserByEmail, findUserByPhone, isBanned, type User } from '../models/user.js'
import type { TokenResponse } from '../tokens/service.js'
import { isFormEncoded, jsonBody, queryParam, str, type Body } from './body.js'
import type { AppContext } from './context.js'
import { OAUTH_ERRORS } from './errors/error-handler.js'
import { enforceLimit, verifyCaptcha } from './guards.js'
import { requestContext } from './request-context.js'
import { BadRequestError, UnprocessableEntityError, UnsupportedGrantTypeError } from '../errors.js'

/** A bcrypt hash of a random string, compared against when the user is unknown (even timing). */
const DUMMY_HASH = '$2b$10$j7JTc//0K8Zwwl6p53y8fet1YiZyM11XI1EgYVwfWCQUOT1dnG.06'

function invalidCredentials(): BadRequestError {
  return new BadRequestError('invalid_credentials', 'Invalid login credentials')
}

async function passwordGrant(
  ctx: AppContext,
  request: FastifyRequest,
  body: Body,
): Promise<TokenResponse> {
  const { settings } = ctx
  await verifyCaptcha(ctx, request, body)
  const rc = requestContext(request, settings)
  let email = str(body, 'email')
  let phone = str(body, 'phone')
  const username = str(body, 'username')
  if (email === '' && phone === '' && username !== '') {
    // RFC 6749 §4.3.2: `username`; an address with "@" is an email, anything else a phone.
    if (username.includes('@')) email = username
    else phone = username
  }
  const password = str(body, 'password')
  if (email !== '' && phone !== '') {
    throw new BadRequestError(
      'validation_failed',
      'Only an email address or phone number should be provided on login.',
    )
  }
  let user: User | undefined
  if (email !== '') {
    if (!settings.external.emailEnabled) {
      throw new UnprocessableEntityError('email_provider_disabled', 'Email logins are disabled')
    }
    user = await findUserByEmail(ctx.db, email.toLowerCase(), rc.aud)
  } else if (phone !== '') {
    if (!settings.external.phoneEnabled) {
      throw new UnprocessableEntityError('phone_provider_disabled', 'Phone logins are disabled')
    }
    user = await findUserByPhone(ctx.db, phone.replace(/[\s+]/g, ''), rc.aud)
  } else {
    throw new BadRequestError('validation_failed', 'missing email or phone')
  }
  // The hash (or the dummy one) is always checked first: who does not know the password learns
  // nothing about the account, not even that it is banned.
  const ok = await ctx.passwords.verify(
    password,
    user?.encryptedPassword || DUMMY_HASH,
    request.deadline,
  )
  if (!user || user.encryptedPassword === '' || !ok) throw invalidCredentials()
  if (isBanned(user, ctx.clock.now())) throw new BadRequestError('user_banned', 'User is banned')
  if (email !== '' && user.emailConfirmedAt === null) {
    throw new BadRequestError('email_not_confirmed', 'Email not confirmed')
  }
  if (phone !== '' && user.phoneConfirmedAt === null) {
    throw new BadRequestError('phone_not_confirmed', 'Phone not confirmed')
  }
  const signedIn = user
  const pending = await ctx.db.transaction((tx) =>
    ctx.tokens.startSession(tx, signedIn, 'password', rc),
  )
  const response = await ctx.tokens.finish(pending)
  const weak = checkPasswordStrength(password, settings.password)
  if (weak) response.weak_password = { reasons: weak.reasons }
  return response
}

async function refreshGrant(
  ctx: AppContext,
  request: FastifyRequest,
  body: Body,
): Promise<TokenResponse> {
  const token = str(body, 'refresh_token')
  if (!isWellFormedRefreshToken(token))
    throw new BadRequestError('validation_failed', 'Refresh token is not valid')
  return ctx.tokens.refresh(ctx.db, token, requestContext(request, ctx.settings))
}

/**
 * `POST /token` with `grant_type` `password` or `refresh_token`. The grant type comes from the
 * query (auth-js) or the form body (RFC 6749 §4.3, §6). Form-encoded requests are treated as a
 * generic OAuth 2.0 client's: `username` is accepted for the email or phone, client credentials
 * (HTTP Basic or `client_id`/`client_secret` fields) are ignored, and errors use the RFC 6749
 * §5.2 shape. Responses carry `Cache-Control: no-store` (RFC 6749 §5.1).
 *
 * @see ../reference §1.3 "POST /token", §4
 */
export function tokenRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.post('/token', async (request, reply) => {
    if (isFormEncoded(request)) (request as unknown as Record<symbol, unknown>)[OAUTH_ERRORS] = true
    const body = jsonBody(request)
    const grantType = queryParam(request, 'grant_type') || str(body, 'grant_type')
    let response: TokenResponse
    switch (grantType) {
      case 'password':
        await enforceLimit(ctx, request, 'token')
        response = await passwordGrant(ctx, request, body)
        break
      case 'refresh_token':
        await enforceLimit(ctx, request, 'token_refresh')
        response = await refreshGrant(ctx, request, body)
        break
      default:
        throw new UnsupportedGrantTypeError()
    }
    return reply.header('cache-control', 'no-store').send(response)
  })
}
