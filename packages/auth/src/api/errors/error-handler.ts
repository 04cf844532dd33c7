import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { PasswordHashingBusyError } from '../../crypto/password-hasher.js'
import { HttpError } from './http-error.js'
import { toOAuthError } from './oauth-error.js'

/** Header that selects the error shape; auth-js always sends `2024-01-01`. */
export const API_VERSION_HEADER = 'x-supabase-api-version'

/** The first API version with the string-`code` error shape. */
export const API_VERSION_2024_01_01 = '2024-01-01'

/**
 * Whether the request asks for the 2024-01-01 error shape: a valid `YYYY-MM-DD` date in
 * `X-Supabase-Api-Version` that is on or after 2024-01-01.
 */
export function wantsNewErrors(request: FastifyRequest): boolean {
  const header = request.headers[API_VERSION_HEADER]
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined || !/^\d{4}-\d{2}-\d{2}$/.test(value)) return false
  if (Number.isNaN(Date.parse(`${value}T00:00:00Z`))) return false
  return value >= API_VERSION_2024_01_01
}

/** Marks requests whose errors must use the OAuth 2.0 shape (form-encoded `/token`). */
export const OAUTH_ERRORS = Symbol('oauth errors')

function normalise(error: unknown): HttpError {
  if (error instanceof HttpError) return error
  if (error instanceof PasswordHashingBusyError) {
    return new HttpError(429, 'over_request_rate_limit', error.message, {
      cause: error,
      headers: { 'retry-after': '1' },
    })
  }
  const fastifyError = error as Partial<FastifyError> | null
  switch (fastifyError?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HttpError(
        413,
        'request_entity_too_large',
        'Request body too large (max 1048576 bytes)',
      )
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new HttpError(
        400,
        'bad_json',
        'Could not parse request body as JSON: unexpected end of JSON input',
      )
    case 'FST_ERR_VALIDATION':
      return new HttpError(400, 'validation_failed', fastifyError.message ?? 'Invalid request')
    case undefined:
    default:
      break
  }
  if ((error as { code?: unknown } | null)?.code === '55P03') {
    return new HttpError(
      409,
      'conflict',
      'The request conflicts with a concurrent one; try again.',
      {
        cause: error,
      },
    )
  }
  if (typeof fastifyError?.statusCode === 'number' && fastifyError.statusCode < 500) {
    return new HttpError(
      fastifyError.statusCode,
      'validation_failed',
      fastifyError.message ?? 'Bad request',
      {
        cause: error,
      },
    )
  }
  return new HttpError(
    500,
    'unexpected_failure',
    'Unexpected failure, please check server logs for more information',
    { cause: error },
  )
}

/**
 * Renders an error in the shape the request asked for:
 * - form-encoded `/token` requests (generic OAuth 2.0 clients): `{error, error_description}`
 *   (RFC 6749 §5.2);
 * - `X-Supabase-Api-Version` ≥ 2024-01-01: `{code: "<error_code>", message}`, header echoed;
 * - otherwise upstream's `{code: <status>, error_code, msg}` (`error_id` on 5xx).
 * Every form carries the `x-sb-error-code` header; extra fields (`weak_password`) are added.
 */
export function sendError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: HttpError,
): FastifyReply {
  reply.header('x-sb-error-code', error.errorCode)
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value)
  if ((request as unknown as Record<symbol, unknown>)[OAUTH_ERRORS] === true) {
    const oauth = toOAuthError(error)
    return reply.code(oauth.status).header('cache-control', 'no-store').send(oauth.body)
  }
  if (wantsNewErrors(request)) {
    reply.header('x-supabase-api-version', API_VERSION_2024_01_01)
    return reply
      .code(error.status)
      .send({ code: error.errorCode, message: error.message, ...error.extra })
  }
  const body: Record<string, unknown> = {
    code: error.status,
    error_code: error.errorCode,
    msg: error.message,
    ...error.extra,
  }
  if (error.status >= 500) body.error_id = request.id
  return reply.code(error.status).send(body)
}

/**
 * Installs the one error handler and the 404 handler. 5xx causes are logged (never sent); 4xx are
 * logged at debug level.
 */
export function registerErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const httpError = normalise(error)
    if (httpError.status >= 500) {
      request.log.error(
        { err: httpError.cause ?? httpError, error_code: httpError.errorCode },
        httpError.message,
      )
    } else {
      request.log.debug({ error_code: httpError.errorCode }, httpError.message)
    }
    return sendError(request, reply, httpError)
  })
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, new HttpError(404, 'not_found', 'Not Found')),
  )
}
