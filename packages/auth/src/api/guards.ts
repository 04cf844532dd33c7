import type { FastifyRequest } from 'fastify'
import type { LimitedOperation } from '../limiter/limiter.js'
import { obj, type Body } from './body.js'
import type { AppContext } from './context.js'
import { clientIp } from './request-context.js'
import { BadRequestError, InternalServerError, TooManyRequestsError } from '../errors.js'

/**
 * Checks `gotrue_meta_security.captcha_token` when captcha protection is on (upstream
 * `verifyCaptcha`); a no-op with the default {@link NoCaptcha}. Admin tokens skip it.
 *
 * @throws {@link AuthError} 400 `captcha_failed`; 500 when the provider cannot be reached.
 */
export async function verifyCaptcha(
  ctx: AppContext,
  request: FastifyRequest,
  body: Body,
): Promise<void> {
  if (!ctx.captcha.enabled) return
  const token = obj(body, 'gotrue_meta_security')?.captcha_token
  if (typeof token !== 'string' || token === '') {
    throw new BadRequestError(
      'captcha_failed',
      'captcha protection: request disallowed (no captcha_token found)',
    )
  }
  let result
  try {
    result = await ctx.captcha.verify(token, clientIp(request, ctx.settings))
  } catch (error) {
    throw new InternalServerError('unexpected_failure', 'captcha verification process failed', {
      cause: error,
    })
  }
  if (!result.success) {
    throw new BadRequestError(
      'captcha_failed',
      `captcha protection: request disallowed (${result.errorCodes.join(', ')})`,
    )
  }
}

/**
 * Takes one request from the client's budget for `operation` (keyed by `RATE_LIMIT_HEADER`).
 *
 * @throws {@link AuthError} 429 `over_request_rate_limit` "Request rate limit reached".
 */
export async function enforceLimit(
  ctx: AppContext,
  request: FastifyRequest,
  operation: LimitedOperation,
): Promise<void> {
  const name = ctx.settings.rateLimitHeader.toLowerCase()
  const header = name === '' ? undefined : request.headers[name]
  const key = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim() ?? ''
  if (!(await ctx.limiter.allow(operation, key, ctx.clock.now()))) {
    throw new TooManyRequestsError('over_request_rate_limit', 'Request rate limit reached')
  }
}
