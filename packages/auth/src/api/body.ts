import type { FastifyInstance, FastifyRequest } from 'fastify'
import { BadRequestError } from '../errors.js'

/** 400 `bad_json` "Could not parse request body as JSON: <detail>". */
function badJson(detail: string): BadRequestError {
  return new BadRequestError('bad_json', `Could not parse request body as JSON: ${detail}`)
}

/** Upstream's body limit: 1 MiB. */
export const BODY_LIMIT = 1_048_576

/** A parsed request body: JSON object or form fields. */
export type Body = Record<string, unknown>

const FORM = /^application\/x-www-form-urlencoded\b/i

/** Marker for a request whose body was empty. */
const EMPTY = Symbol('empty body')

/** Set on requests whose body was parsed as form fields. */
const FORM_BODY = Symbol('form body')

/**
 * Whether the request body was form-encoded (`application/x-www-form-urlencoded`), as a generic
 * OAuth 2.0 client sends token requests (RFC 6749 §4.3, §6). A JSON object sent with the form
 * content type (curl's default) is parsed as JSON and does not count.
 */
export function isFormEncoded(request: FastifyRequest): boolean {
  return (request as unknown as Record<symbol, unknown>)[FORM_BODY] === true
}

/**
 * Registers the one body parser: form-encoded bodies become an object of strings; every other
 * content type is parsed as JSON (upstream ignores the content type). An empty body is kept as
 * "empty" so that endpoints which need none (`/logout`) accept it.
 */
export function registerBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(
    '*',
    { parseAs: 'string', bodyLimit: BODY_LIMIT },
    (request, raw, done) => {
      const text = typeof raw === 'string' ? raw : raw.toString('utf8')
      if (text.trim() === '') {
        done(null, EMPTY)
        return
      }
      if (FORM.test(request.headers['content-type'] ?? '') && !text.trimStart().startsWith('{')) {
        ;(request as unknown as Record<symbol, unknown>)[FORM_BODY] = true
        done(null, Object.fromEntries(new URLSearchParams(text)))
        return
      }
      try {
        done(null, JSON.parse(text) as unknown)
      } catch (error) {
        done(badJson(error instanceof Error ? error.message : 'invalid JSON'), undefined)
      }
    },
  )
}

/**
 * The request body as an object (upstream `retrieveRequestParams`): empty → 400 `bad_json`
 * ("unexpected end of JSON input"), JSON `null` → `{}`, a non-object → 400 `bad_json`.
 * Unknown fields are kept and ignored by callers.
 *
 * @throws {@link AuthError} `bad_json`.
 */
export function jsonBody(request: FastifyRequest): Body {
  const body = request.body
  if (body === EMPTY || body === undefined) throw badJson('unexpected end of JSON input')
  if (body === null) return {}
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw badJson(`cannot unmarshal ${Array.isArray(body) ? 'array' : typeof body} into an object`)
  }
  return body as Body
}

/** Like {@link jsonBody}, but an empty body is `{}` (for endpoints whose body is optional). */
export function optionalBody(request: FastifyRequest): Body {
  return request.body === EMPTY || request.body === undefined ? {} : jsonBody(request)
}

/**
 * A string field: absent or `null` → `''` (Go's zero value).
 *
 * @throws {@link AuthError} `bad_json` when the field has another type.
 */
export function str(body: Body, name: string): string {
  const value = body[name]
  if (value === undefined || value === null) return ''
  if (typeof value !== 'string') throw typeError(name, value, 'string')
  return value
}

/**
 * A boolean field: absent or `null` → `undefined`. Form bodies may say `true`/`false`.
 *
 * @throws {@link AuthError} `bad_json` when the field has another type.
 */
export function bool(body: Body, name: string): boolean | undefined {
  const value = body[name]
  if (value === undefined || value === null) return undefined
  if (value === 'true' || value === 'false') return value === 'true'
  if (typeof value !== 'boolean') throw typeError(name, value, 'bool')
  return value
}

/**
 * An object field (metadata): absent or `null` → `undefined`.
 *
 * @throws {@link AuthError} `bad_json` when the field is not an object.
 */
export function obj(body: Body, name: string): Record<string, unknown> | undefined {
  const value = body[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'object' || Array.isArray(value)) throw typeError(name, value, 'object')
  return value as Record<string, unknown>
}

function typeError(name: string, value: unknown, expected: string): Error {
  const got = Array.isArray(value) ? 'array' : typeof value
  return badJson(`json: cannot unmarshal ${got} into field ${name} of type ${expected}`)
}

/** A query-string parameter as a string (`''` when absent; first value when repeated). */
export function queryParam(request: FastifyRequest, name: string): string {
  const query = request.query as Record<string, unknown> | undefined
  const value = query?.[name]
  if (Array.isArray(value)) return typeof value[0] === 'string' ? value[0] : ''
  return typeof value === 'string' ? value : ''
}

const EMAIL =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/

/**
 * Validates and lower-cases an email address (upstream `validateEmail`).
 *
 * @throws {@link AuthError} 400 `validation_failed`: "An email address is required", "An email
 *   address is too long", "Unable to validate email address: invalid format".
 */
export function validateEmail(email: string): string {
  if (email === '') throw new BadRequestError('validation_failed', 'An email address is required')
  if (email.length > 255)
    throw new BadRequestError('validation_failed', 'An email address is too long')
  if (!EMAIL.test(email))
    throw new BadRequestError(
      'validation_failed',
      'Unable to validate email address: invalid format',
    )
  return email.toLowerCase()
}

/**
 * Normalises and validates a phone number: spaces and `+` are removed, then it must be E.164
 * digits (`^[1-9][0-9]{1,14}$`). Stored without `+`.
 *
 * @throws {@link AuthError} 400 `validation_failed` "Invalid phone number format (E.164 required)".
 */
export function validatePhone(phone: string): string {
  const digits = phone.replace(/[\s+]/g, '')
  if (!/^[1-9][0-9]{1,14}$/.test(digits)) {
    throw new BadRequestError('validation_failed', 'Invalid phone number format (E.164 required)')
  }
  return digits
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether a string is a UUID (any version). */
export function isUuid(value: string): boolean {
  return UUID.test(value)
}
