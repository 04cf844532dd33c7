import { PasswordHashingBusyError } from '../../../crypto/password-hasher.js'
import {
  AuthError,
  BadRequestError,
  ConflictError,
  ForbiddenError,
  HookAnswerError,
  InternalServerError,
  NotFoundError,
  PayloadTooLargeError,
  RequestRateLimitError,
  RequestTimeoutError,
  ServiceUnavailableError,
  TooManyRequestsError,
  UnauthorizedError,
  UnprocessableEntityError,
  WeakPasswordError,
} from '../../../errors.js'

/** How one error class is answered: its HTTP status, response headers and extra body fields. */
export interface WireMapping<E extends AuthError = AuthError> {
  /** The class; its subclasses share the row unless they have one of their own. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any constructor signature
  readonly error: abstract new (...args: any[]) => E
  /** HTTP status of the answer: fixed, or computed from the error. */
  readonly status: number | ((error: E) => number)
  /** Response headers, such as `Retry-After`: fixed, or computed from the error. */
  readonly headers?:
    Readonly<Record<string, string>> | ((error: E) => Readonly<Record<string, string>>)
  /** Top-level body fields besides the code and message, such as `weak_password`. */
  readonly extra?: (error: E) => Readonly<Record<string, unknown>>
}

function row<E extends AuthError>(mapping: WireMapping<E>): WireMapping {
  return mapping as unknown as WireMapping
}

/** Any other {@link AuthError}: a server failure. */
const UNMAPPED = row({ error: AuthError, status: 500 })

/**
 * The one mapping from error class to answer: every {@link AuthError} is looked up by its class,
 * then its parent classes, so each class answers the same way wherever it is thrown. The wire
 * body itself (`{code, error_code, msg}`, `{code, message}` or RFC 6749's `{error,
 * error_description}`) is chosen per request by the error handler.
 */
export const WIRE_ERRORS: readonly WireMapping[] = [
  row({ error: BadRequestError, status: 400 }),
  row({ error: UnauthorizedError, status: 401 }),
  row({ error: ForbiddenError, status: 403 }),
  row({ error: NotFoundError, status: 404 }),
  row({ error: ConflictError, status: 409 }),
  row({ error: PayloadTooLargeError, status: 413 }),
  row({ error: UnprocessableEntityError, status: 422 }),
  row({
    error: WeakPasswordError,
    status: 422,
    extra: (error) => ({ weak_password: { reasons: error.reasons } }),
  }),
  row({ error: TooManyRequestsError, status: 429 }),
  row({
    error: RequestRateLimitError,
    status: 429,
    headers: (error) => ({ 'retry-after': String(error.retryAfterSeconds) }),
  }),
  row({ error: PasswordHashingBusyError, status: 429, headers: { 'retry-after': '1' } }),
  row({ error: InternalServerError, status: 500 }),
  row({ error: HookAnswerError, status: (error) => error.status }),
  row({ error: ServiceUnavailableError, status: 503 }),
  row({ error: RequestTimeoutError, status: 504 }),
  UNMAPPED,
]

const BY_CLASS: ReadonlyMap<unknown, WireMapping> = new Map(WIRE_ERRORS.map((m) => [m.error, m]))

/** What the wire says for an error: status, headers and the extra body fields. */
export interface WireError {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly extra: Readonly<Record<string, unknown>>
}

const NO_FIELDS: Readonly<Record<string, never>> = Object.freeze({})

/** The {@link WIRE_ERRORS} row of an error: its class's, else its nearest parent class's. */
export function wireErrorOf(error: AuthError): WireError {
  let mapping: WireMapping | undefined
  for (
    let proto: unknown = Object.getPrototypeOf(error);
    mapping === undefined && proto !== null;
    proto = Object.getPrototypeOf(proto)
  ) {
    mapping = BY_CLASS.get((proto as { constructor: unknown }).constructor)
  }
  const found = mapping ?? UNMAPPED
  return {
    status: typeof found.status === 'function' ? found.status(error) : found.status,
    headers:
      (typeof found.headers === 'function' ? found.headers(error) : found.headers) ?? NO_FIELDS,
    extra: found.extra?.(error) ?? NO_FIELDS,
  }
}
