import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  AuthError,
  BadRequestError,
  ConflictError,
  InternalServerError,
  NotFoundError,
  OAuthJsonError,
  PayloadTooLargeError,
  RequestTimeoutError,
  ServiceUnavailableError,
} from '../../../errors.js'
import { isDatabaseUnavailable, isLockTimeout, isStatementTimeout } from '../../../storage/db.js'
import { headerValue } from '../request-context.js'
import { schemaError, type SchemaPart } from '../schema.js'
import { toOAuthError } from './oauth-error.js'
import { wireErrorOf } from './wire.js'

/** Header that selects the error shape; auth-js always sends `2024-01-01`. */
export const API_VERSION_HEADER = 'x-supabase-api-version'

/** The first API version with the string-`code` error shape. */
export const API_VERSION_2024_01_01 = '2024-01-01'

/**
 * Whether the request asks for the 2024-01-01 error shape: a valid `YYYY-MM-DD` date in
 * `X-Supabase-Api-Version` that is on or after 2024-01-01.
 */
export function wantsNewErrors(request: FastifyRequest): boolean {
  const value = headerValue(request, API_VERSION_HEADER)
  if (value === undefined || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return false
  if (Number.isNaN(Date.parse(`${value}T00:00:00Z`))) return false
  return value >= API_VERSION_2024_01_01
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Answer errors of form-encoded requests in RFC 6749 §5.2's shape (`POST /token`: generic
     * OAuth 2.0 clients send forms, auth-js sends JSON).
     */
    oauthErrors?: boolean
  }
}

/** Whether a request's errors use RFC 6749 §5.2's shape: a form-encoded request to such a route. */
function wantsOAuthErrors(request: FastifyRequest): boolean {
  return request.formEncoded && request.routeOptions.config.oauthErrors === true
}

/**
 * Turns whatever a request failed with into an {@link AuthError}: Fastify's own errors (body too
 * large, bad content length, a route schema's verdict), PostgreSQL's lock timeout (409), a
 * statement cut by the transaction's `statement_timeout` at the request's deadline (504), a
 * database that cannot be reached (503 `database_unavailable`), and anything else as 500
 * `unexpected_failure` (the original kept as `cause`, for the log only).
 */
export function toAuthError(error: unknown): AuthError {
  if (error instanceof AuthError) return error
  const fastifyError = error as (Partial<FastifyError> & { validationContext?: SchemaPart }) | null
  switch (fastifyError?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new PayloadTooLargeError(
        'request_entity_too_large',
        'Request body too large (max 1048576 bytes)',
        { cause: error },
      )
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new BadRequestError(
        'bad_json',
        'Could not parse request body as JSON: unexpected end of JSON input',
        { cause: error },
      )
    case 'FST_ERR_VALIDATION':
      return schemaError(fastifyError.validationContext ?? 'body', fastifyError.validation ?? [])
    case undefined:
    default:
      break
  }
  if (isDatabaseUnavailable(error)) {
    return new ServiceUnavailableError(
      'database_unavailable',
      'The database is unavailable; retry in a moment.',
      { cause: error },
    )
  }
  if (isStatementTimeout(error)) return new RequestTimeoutError({ cause: error })
  if (isLockTimeout(error)) {
    return new ConflictError(
      'conflict',
      'The request conflicts with a concurrent one; try again.',
      {
        cause: error,
      },
    )
  }
  if (typeof fastifyError?.statusCode === 'number' && fastifyError.statusCode < 500) {
    return new BadRequestError('validation_failed', fastifyError.message ?? 'Bad request', {
      cause: error,
    })
  }
  return new InternalServerError(
    'unexpected_failure',
    'Unexpected failure, please check server logs for more information',
    { cause: error },
  )
}

/**
 * Renders an error in the shape the request asked for, with the status, headers and extra fields
 * of its row in `WIRE_ERRORS`:
 * - form-encoded `/token` requests (generic OAuth 2.0 clients): `{error, error_description}`
 *   (RFC 6749 §5.2);
 * - `X-Supabase-Api-Version` ≥ 2024-01-01: `{code: "<error_code>", message}`, header echoed;
 * - otherwise upstream's `{code: <status>, error_code, msg}` (`error_id` on 5xx).
 * Every form carries the `x-sb-error-code` header.
 */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: AuthError,
): FastifyReply {
  if (error instanceof OAuthJsonError) {
    if (error.status === 401) reply.header('www-authenticate', 'Basic realm="oauth"')
    return reply
      .code(error.status)
      .header('cache-control', 'no-store')
      .send({ error: error.error, error_description: error.message })
  }
  const wire = wireErrorOf(error)
  reply.header('x-sb-error-code', error.code)
  for (const [name, value] of Object.entries(wire.headers)) reply.header(name, value)
  if (wantsOAuthErrors(request)) {
    const oauth = toOAuthError(error)
    return reply.code(oauth.status).header('cache-control', 'no-store').send(oauth.body)
  }
  if (wantsNewErrors(request)) {
    reply.header('x-supabase-api-version', API_VERSION_2024_01_01)
    return reply.code(wire.status).send({ code: error.code, message: error.message, ...wire.extra })
  }
  const body: Record<string, unknown> = {
    code: wire.status,
    error_code: error.code,
    msg: error.message,
    ...wire.extra,
  }
  if (wire.status >= 500) body.error_id = request.id
  return reply.code(wire.status).send(body)
}

/**
 * Installs the one error handler and the 404 handler. 5xx causes are logged (never sent); an
 * unavailable database at warn level, without a stack; 4xx at debug level.
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const authError = toAuthError(error)
    if (authError.code === 'database_unavailable') {
      // An outage fails every request alike: one line each, without a stack.
      const cause = authError.cause instanceof Error ? authError.cause.message : undefined
      request.log.warn({ error_code: authError.code, reason: cause }, authError.message)
    } else if (wireErrorOf(authError).status >= 500) {
      request.log.error(
        { err: authError.cause ?? authError, error_code: authError.code },
        authError.message,
      )
    } else {
      request.log.debug({ error_code: authError.code }, authError.message)
    }
    return sendError(request, reply, authError)
  })
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new NotFoundError('not_found', 'Not Found')),
  )
}
