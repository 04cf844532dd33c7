/**
 * Route guards as Fastify hooks, the counterparts of upstream's per-group middleware
 * (`r.With(api.requireAuthentication)`): a route group adds them once with `addHook`, or a route
 * lists them in its options. Authentication runs at `preValidation` (after the body is read,
 * before the schema judges it: a request without credentials is 401 whatever its body);
 * captcha and rate limits at `preHandler`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/middleware.go
 * @module
 */
import type {
  FastifyInstance,
  FastifyRequest,
  preHandlerHookHandler,
  preValidationAsyncHookHandler,
} from 'fastify'
import type { JWTPayload } from 'jose'
import type { RouteContext } from '../../context.js'
import {
  BadRequestError,
  InternalServerError,
  NotFoundError,
  RequestRateLimitError,
  UnauthorizedError,
} from '../../errors.js'
import type { LimitedOperation } from '../../limiter/limiter.js'
import {
  authenticateUser,
  authorizeAdmin,
  type Authenticated,
} from '../../services/shared/authentication.js'
import { clientIp, clientKey } from './request-context.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The user of the bearer token; set by {@link requireAuthentication}. */
    authenticated: Authenticated | null
    /** The claims of the admin token; set by {@link requireAdmin}. */
    adminClaims: JWTPayload | null
  }
}

/** Decorates requests with the slots the guards fill (once, on the root instance). */
export function registerGuardState(app: FastifyInstance): void {
  app.decorateRequest('authenticated', null)
  app.decorateRequest('adminClaims', null)
}

/**
 * The bearer token of a request (`Authorization` matching `(?i)^bearer (\S+$)`).
 *
 * @throws {@link UnauthorizedError} `no_authorization` "This endpoint requires a valid Bearer
 *   token".
 */
export function bearerToken(request: FastifyRequest): string {
  const match = /^bearer (\S+)$/i.exec(request.headers.authorization ?? '')
  if (!match?.[1]) {
    throw new UnauthorizedError('no_authorization', 'This endpoint requires a valid Bearer token')
  }
  return match[1]
}

/**
 * Guard of user endpoints: the bearer token's user, with its identities and session, becomes
 * `request.authenticated` (read it with {@link authOf}).
 *
 * @see {@link authenticateUser} for the checks and their errors.
 */
export const requireAuthentication: preValidationAsyncHookHandler = async (request) => {
  request.authenticated = await authenticateUser(request.ctx, bearerToken(request))
}

/**
 * Guard of admin endpoints: a token whose role is one of `roles`; its claims become
 * `request.adminClaims`.
 *
 * @param roles Allowed roles. @default `JWT_ADMIN_ROLES`
 * @see {@link authorizeAdmin} for the checks and their errors.
 */
export function requireAdmin(
  ctx: RouteContext,
  roles: readonly string[] = ctx.settings.jwt.adminRoles,
): preValidationAsyncHookHandler {
  return async (request) => {
    request.adminClaims = await authorizeAdmin(request.ctx, bearerToken(request), roles)
  }
}

/** The {@link Authenticated} of a request that passed {@link requireAuthentication}. */
export function authOf(request: FastifyRequest): Authenticated {
  if (!request.authenticated) throw new Error('route is missing requireAuthentication')
  return request.authenticated
}

/** The admin claims of a request that passed {@link requireAdmin}. */
export function adminClaimsOf(request: FastifyRequest): JWTPayload {
  if (!request.adminClaims) throw new Error('route is missing requireAdmin')
  return request.adminClaims
}

/**
 * Takes one request from the client's budget for an operation (upstream `limitHandler`), keyed
 * by {@link clientKey}: the trusted proxy's value of `RATE_LIMIT_HEADER`, or of
 * `Svc-Forwarded-For` when `SECURITY_SVC_FORWARDED_FOR_ENABLED`. A request without a key is not limited, as upstream.
 * This is the one hook that applies request limits; routes list it in their `preHandler`.
 *
 * @param operation The operation, or a function choosing it per request (`undefined`: no limit).
 * @throws {@link RequestRateLimitError} 429 `over_request_rate_limit` "Request rate limit
 *   reached" with `Retry-After`; `ServiceUnavailableError` 503 when the rate limit service
 *   is unreachable under `RATE_LIMIT_FAIL_CLOSED`.
 */
export function rateLimit(
  ctx: RouteContext,
  operation: LimitedOperation | ((request: FastifyRequest) => LimitedOperation | undefined),
): preHandlerHookHandler {
  return (request, _reply, done) => {
    const op = typeof operation === 'function' ? operation(request) : operation
    const key = op === undefined ? undefined : clientKey(request, ctx.settings)
    if (op === undefined || key === undefined) {
      done()
      return
    }
    ctx.limiter.allow(op, key, ctx.clock.now()).then((decision) => {
      done(decision.allowed ? undefined : new RequestRateLimitError(decision.retryAfterSeconds))
    }, done)
  }
}

/** The captcha token of a request: `captcha_token`, else `gotrue_meta_security.captcha_token`. */
function captchaToken(request: FastifyRequest): string {
  const body = request.body
  if (typeof body !== 'object' || body === null) return ''
  const { captcha_token: direct, gotrue_meta_security: meta } = body as {
    captcha_token?: unknown
    gotrue_meta_security?: unknown
  }
  const nested =
    typeof meta === 'object' && meta !== null
      ? (meta as { captcha_token?: unknown }).captcha_token
      : undefined
  const token = typeof direct === 'string' && direct.trim() !== '' ? direct : nested
  return typeof token === 'string' ? token.trim() : ''
}

/** Whether the request carries a valid token of an admin role (`JWT_ADMIN_ROLES`). */
async function hasAdminToken(request: FastifyRequest): Promise<boolean> {
  if (request.headers.authorization === undefined) return false
  try {
    const { ctx } = request
    await authorizeAdmin(ctx, bearerToken(request), ctx.settings.jwt.adminRoles)
    return true
  } catch {
    return false
  }
}

async function checkCaptcha(ctx: RouteContext, request: FastifyRequest): Promise<void> {
  if (await hasAdminToken(request)) return
  const token = captchaToken(request)
  if (token === '') {
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
 * Checks the captcha token (`captcha_token`, else `gotrue_meta_security.captcha_token`, as
 * auth-js sends it) when captcha protection is on (upstream `verifyCaptcha`); with the default
 * `NoCaptcha`, when `applies` says no, or for a request bearing a valid token of a
 * `JWT_ADMIN_ROLES` role (a service_role key), the request passes at once.
 *
 * @param applies Whether the request needs a captcha. @default every request
 * @throws {@link BadRequestError} `captcha_failed`; {@link InternalServerError} when the provider
 *   cannot be reached.
 */
export function verifyCaptcha(
  ctx: RouteContext,
  applies: (request: FastifyRequest) => boolean = () => true,
): preHandlerHookHandler {
  return (request, _reply, done) => {
    if (!ctx.captcha.enabled || !applies(request)) {
      done()
      return
    }
    checkCaptcha(ctx, request).then(() => {
      done()
    }, done)
  }
}

/** `SAML_ENABLED` off: 404 `saml_provider_disabled` "SAML 2.0 is disabled" (upstream `requireSAMLEnabled`). */
export function requireSamlEnabled(ctx: RouteContext): preValidationAsyncHookHandler {
  return () =>
    ctx.settings.saml.enabled
      ? Promise.resolve()
      : Promise.reject(new NotFoundError('saml_provider_disabled', 'SAML 2.0 is disabled'))
}
