import type { ErrorCode } from './error-codes.js'

/**
 * An API error with a public and a private half (upstream `HTTPError`): `status`, `errorCode` and
 * the public `message` go on the wire; `cause` is only logged. Handlers throw it; the one Fastify
 * error handler renders it (see `error-handler.ts`).
 *
 * @example
 * ```ts
 * throw new HttpError(400, 'invalid_credentials', 'Invalid login credentials')
 * ```
 */
export class HttpError extends Error {
  /** HTTP status code. */
  readonly status: number
  /** GoTrue `error_code`. */
  readonly errorCode: ErrorCode
  /** Extra top-level fields of the body, such as `weak_password: { reasons }`. */
  readonly extra: Readonly<Record<string, unknown>>
  /** Response headers to add, such as `Retry-After`. */
  readonly headers: Readonly<Record<string, string>>

  constructor(
    status: number,
    errorCode: ErrorCode,
    message: string,
    options: {
      cause?: unknown
      extra?: Record<string, unknown>
      headers?: Record<string, string>
    } = {},
  ) {
    super(message, { cause: options.cause })
    this.name = 'HttpError'
    this.status = status
    this.errorCode = errorCode
    this.extra = options.extra ?? {}
    this.headers = options.headers ?? {}
  }
}

/** 400 `validation_failed` (upstream's most common error). */
export function validationFailed(message: string): HttpError {
  return new HttpError(400, 'validation_failed', message)
}

/** 400 `bad_json` "Could not parse request body as JSON: <detail>". */
export function badJson(detail: string): HttpError {
  return new HttpError(400, 'bad_json', `Could not parse request body as JSON: ${detail}`)
}
