import { UnsupportedGrantTypeError, type AuthError, type ErrorCode } from '../../../errors.js'
import { wireErrorOf } from './wire.js'

/** RFC 6749 §5.2 error codes used by the token endpoint. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'server_error'

/** The RFC 6749 §5.2 error body: `{ error, error_description }`. */
export interface OAuthErrorBody {
  error: OAuthErrorCode
  error_description?: string
}

/** GoTrue codes that mean the grant itself (credentials, refresh token, session) is invalid. */
const GRANT_ERRORS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'invalid_credentials',
  'email_not_confirmed',
  'phone_not_confirmed',
  'user_banned',
  'refresh_token_not_found',
  'refresh_token_already_used',
  'session_not_found',
  'session_expired',
])

/**
 * Maps an error of `POST /token` to the OAuth 2.0 error a standard client expects (RFC 6749
 * §5.2). Used for form-encoded token requests, where the caller is a generic OAuth 2.0 client
 * rather than auth-js; the wording matches upstream's pre-v2.158 `/token` OAuthErrors. Decided by
 * class and code: {@link UnsupportedGrantTypeError} is `unsupported_grant_type`, credential and
 * token failures are `invalid_grant`, server failures `server_error`, the rest `invalid_request`.
 *
 * @param error The error as the handler threw it.
 * @returns The status (400, or the original for 5xx, 429 and 409) and the body.
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-5.2
 */
export function toOAuthError(error: AuthError): { status: number; body: OAuthErrorBody } {
  const { status } = wireErrorOf(error)
  if (status >= 500) {
    return { status, body: { error: 'server_error', error_description: error.message } }
  }
  if (error instanceof UnsupportedGrantTypeError) {
    return { status: 400, body: { error: 'unsupported_grant_type' } }
  }
  if (GRANT_ERRORS.has(error.code)) {
    return { status: 400, body: { error: 'invalid_grant', error_description: error.message } }
  }
  return {
    status: status === 429 || status === 409 ? status : 400,
    body: { error: 'invalid_request', error_description: error.message },
  }
}
