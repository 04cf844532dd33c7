import type { ErrorCode } from './error-codes.js'
import type { HttpError } from './http-error.js'

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
 * Maps an {@link HttpError} from `POST /token` to the OAuth 2.0 error a standard client expects
 * (RFC 6749 §5.2). Used for form-encoded token requests, where the caller is a generic OAuth 2.0
 * client rather than auth-js; the wording matches upstream's pre-v2.158 `/token` OAuthErrors.
 *
 * @param error The error as the handler threw it.
 * @returns The status (400, or the original for 5xx/429/409) and the body.
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-5.2
 */
export function toOAuthError(error: HttpError): { status: number; body: OAuthErrorBody } {
  if (error.status >= 500) {
    return {
      status: error.status,
      body: { error: 'server_error', error_description: error.message },
    }
  }
  if (error.message === 'unsupported_grant_type') {
    return { status: 400, body: { error: 'unsupported_grant_type' } }
  }
  if (GRANT_ERRORS.has(error.errorCode)) {
    return { status: 400, body: { error: 'invalid_grant', error_description: error.message } }
  }
  const status = error.status === 429 || error.status === 409 ? error.status : 400
  return { status, body: { error: 'invalid_request', error_description: error.message } }
}
