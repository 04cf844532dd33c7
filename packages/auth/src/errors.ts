/**
 * The errors of `@gatehouse/auth`: one base class, {@link AuthError}, whose `code` is one of
 * GoTrue's `error_code` strings, and one subclass per way the API answers it (its HTTP status,
 * as upstream's `apierrors.New…Error` constructors choose it). Code throws them; the one table
 * in `api/http/errors/wire.ts` turns each class into a status and a wire body.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/apierrors/apierrors.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/apierrors/errorcode.go
 * @module
 */

/**
 * GoTrue's closed vocabulary of `error_code` values, the ones this server emits. Clients such as
 * auth-js switch on them.
 */
export const ERROR_CODES = [
  'unknown',
  'unexpected_failure',
  'validation_failed',
  'bad_json',
  'request_entity_too_large',
  'request_timeout',
  'not_found',
  'email_exists',
  'phone_exists',
  'user_already_exists',
  'user_not_found',
  'user_banned',
  'bad_jwt',
  'not_admin',
  'no_authorization',
  'session_not_found',
  'session_expired',
  'refresh_token_not_found',
  'refresh_token_already_used',
  'invalid_credentials',
  'email_not_confirmed',
  'phone_not_confirmed',
  'weak_password',
  'same_password',
  'signup_disabled',
  'email_provider_disabled',
  'phone_provider_disabled',
  'anonymous_provider_disabled',
  'over_request_rate_limit',
  'over_email_send_rate_limit',
  'over_sms_send_rate_limit',
  'captcha_failed',
  'sms_send_failed',
  'mfa_factor_not_found',
  'mfa_factor_name_conflict',
  'mfa_verified_factor_exists',
  'mfa_ip_address_mismatch',
  'mfa_challenge_expired',
  'mfa_verification_failed',
  'mfa_verification_rejected',
  'too_many_enrolled_mfa_factors',
  'insufficient_aal',
  'mfa_totp_enroll_not_enabled',
  'mfa_totp_verify_not_enabled',
  'mfa_phone_enroll_not_enabled',
  'mfa_phone_verify_not_enabled',
  'mfa_webauthn_enroll_not_enabled',
  'mfa_webauthn_verify_not_enabled',
  'mfa_recovery_codes_enroll_disabled',
  'mfa_recovery_codes_verify_disabled',
  'mfa_recovery_codes_locked',
  'mfa_recovery_codes_sole_factor',
  'reauthentication_needed',
  'reauthentication_not_valid',
  'conflict',
  'otp_expired',
  'otp_disabled',
  'flow_state_not_found',
  'flow_state_expired',
  'bad_code_verifier',
  'bad_oauth_callback',
  'bad_oauth_state',
  'provider_email_needs_verification',
  'provider_disabled',
  'identity_already_exists',
  'identity_not_found',
  'single_identity_not_deletable',
  'manual_linking_disabled',
  'user_sso_managed',
  'web3_provider_disabled',
  'web3_unsupported_chain',
  'feature_disabled',
  'custom_provider_not_found',
  'over_custom_provider_quota',
  'email_address_not_authorized',
  'hook_timeout',
  'hook_timeout_after_retry',
  'hook_payload_over_size_limit',
  'hook_payload_invalid_content_type',
  'passkey_disabled',
  'too_many_passkeys',
  'webauthn_challenge_not_found',
  'webauthn_challenge_expired',
  'webauthn_verification_failed',
  'webauthn_credential_exists',
  'flow_state_already_used',
  'saml_provider_disabled',
  'saml_relay_state_not_found',
  'saml_relay_state_expired',
  'saml_idp_not_found',
  'saml_assertion_no_user_id',
  'saml_assertion_no_email',
  'sso_provider_not_found',
  'sso_provider_disabled',
  'saml_metadata_fetch_failed',
  'saml_idp_already_exists',
  'sso_domain_already_exists',
  'saml_entity_id_mismatch',
  'oauth_client_not_found',
  'oauth_authorization_not_found',
  'oauth_consent_not_found',
  'oauth_dynamic_client_registration_disabled',
  // Ours: GoTrue answers a database outage with 500 `unexpected_failure`.
  'database_unavailable',
] as const

/** One of {@link ERROR_CODES}. */
export type ErrorCode = (typeof ERROR_CODES)[number]

/**
 * Every error this package throws on purpose. `code` is GoTrue's `error_code` and `message` the
 * public text (both go on the wire); `cause` is private (logged, never sent). Subclasses say how
 * the API answers it; catch `AuthError` and `switch (error.code)` to narrow.
 *
 * @example
 * ```ts
 * let error!: unknown
 * if (error instanceof AuthError && error.code === 'invalid_credentials') {
 *   // wrong email or password
 * }
 * ```
 */
export class AuthError extends Error {
  /** GoTrue's `error_code`. */
  readonly code: ErrorCode

  /**
   * @param code GoTrue's `error_code`.
   * @param message The public text (`msg` on the wire).
   * @param options `cause`: the private reason, logged with 5xx answers.
   */
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
    this.code = code
  }
}

/**
 * The request is malformed or refused as it stands (HTTP 400), for example `validation_failed`
 * "missing email or phone", `bad_json`, `invalid_credentials`.
 *
 * @example
 * ```text
 * HTTP/1.1 400 Bad Request
 * {"code":400,"error_code":"invalid_credentials","msg":"Invalid login credentials"}
 * ```
 */
export class BadRequestError extends AuthError {}

/**
 * A refusal upstream answers as an OAuth error object, `400 {"error", "error_description"}`,
 * whatever the API version and without `error_code` (upstream `apierrors.OAuthError`): the
 * `id_token` grant's refusals ("invalid request", "Bad ID token"). Its `code` is for logs and
 * metrics only.
 */
export class OAuthJsonError extends BadRequestError {
  /** The `error` member (upstream's words, `invalid request`, `invalid nonce`). */
  readonly error: string

  /** The HTTP status: 400, or 401 for `invalid_client` (RFC 6749 §5.2). */
  readonly status: 400 | 401

  constructor(
    error: string,
    description: string,
    options?: { cause?: unknown; status?: 400 | 401 },
  ) {
    super('validation_failed', description, options)
    this.error = error
    this.status = options?.status ?? 400
  }
}

/** No credentials where they are required (HTTP 401): `no_authorization`. */
export class UnauthorizedError extends AuthError {}

/**
 * Credentials that are refused (HTTP 403): `bad_jwt`, `not_admin`, `user_banned`,
 * `session_not_found`, …
 */
export class ForbiddenError extends AuthError {}

/** What the request names does not exist (HTTP 404): `user_not_found`, `not_found`. */
export class NotFoundError extends AuthError {}

/** The user of a lookup does not exist (HTTP 404 `user_not_found` "User not found"). */
export class UserNotFoundError extends NotFoundError {
  constructor() {
    super('user_not_found', 'User not found')
  }
}

/** The request collides with a concurrent one (HTTP 409 `conflict`); retrying may succeed. */
export class ConflictError extends AuthError {}

/** The body is larger than the 1 MiB limit (HTTP 413 `request_entity_too_large`). */
export class PayloadTooLargeError extends AuthError {}

/**
 * The request is well-formed but cannot be carried out in the current state (HTTP 422):
 * `email_exists`, `signup_disabled`, `same_password`, …
 */
export class UnprocessableEntityError extends AuthError {}

/**
 * A password that breaks the policy (HTTP 422 `weak_password`); the answer carries
 * `weak_password: { reasons }`, which auth-js turns into `AuthWeakPasswordError`.
 */
export class WeakPasswordError extends UnprocessableEntityError {
  /** Why the password is weak: upstream's `weak_password.reasons`. */
  readonly reasons: readonly string[]

  constructor(message: string, reasons: readonly string[]) {
    super('weak_password', message)
    this.reasons = reasons
  }
}

/** Too many requests (HTTP 429): `over_request_rate_limit`, `over_email_send_rate_limit`. */
export class TooManyRequestsError extends AuthError {}

/**
 * A client over its request budget (HTTP 429 `over_request_rate_limit` "Request rate limit
 * reached", upstream's `limitHandler`), answered with `Retry-After`.
 */
export class RequestRateLimitError extends TooManyRequestsError {
  /** Whole seconds until a request may succeed (the `Retry-After` header), at least 1. */
  readonly retryAfterSeconds: number

  /** @param retryAfterSeconds Seconds until a retry may succeed; raised to at least 1. */
  constructor(retryAfterSeconds: number) {
    super('over_request_rate_limit', 'Request rate limit reached')
    this.retryAfterSeconds = Math.max(1, Math.ceil(retryAfterSeconds))
  }
}

/**
 * A service this server depends on per request is unreachable (HTTP 503, retryable for auth-js):
 * the database (`database_unavailable`), or the rate limit service under
 * `RATE_LIMIT_FAIL_CLOSED` (`unexpected_failure`).
 */
export class ServiceUnavailableError extends AuthError {}

/** Something failed on the server (HTTP 500 `unexpected_failure`); `cause` says what. */
export class InternalServerError extends AuthError {}

/** The request ran out of `API_MAX_REQUEST_DURATION` (HTTP 504 `request_timeout`). */
export class RequestTimeoutError extends AuthError {
  /** @param options `cause`: what was cut (a statement cancelled by its timeout). */
  constructor(options?: { cause?: unknown }) {
    super(
      'request_timeout',
      'Processing this request timed out, please retry after a moment.',
      options,
    )
  }
}

/**
 * `POST /token` with a `grant_type` this server does not offer: upstream's HTTP 400
 * `invalid_credentials` "unsupported_grant_type", and RFC 6749 §5.2 `unsupported_grant_type` for
 * form-encoded requests.
 */
export class UnsupportedGrantTypeError extends BadRequestError {
  constructor() {
    super('invalid_credentials', 'unsupported_grant_type')
  }
}

/**
 * An auth hook answered an error object `{ "error": { "http_code": 403, "message": "…" } }`:
 * the request fails with that status and message, as upstream's `hookserrors.Check` does
 * (`error_code` `unexpected_failure` for a 500, else `unknown`; a missing or out-of-range
 * `http_code` is a 500).
 *
 * @example
 * ```text
 * HTTP/1.1 403 Forbidden
 * {"code":403,"error_code":"unknown","msg":"Sign-ups from this domain are closed"}
 * ```
 */
export class HookAnswerError extends AuthError {
  /** The HTTP status the hook chose (400 to 599). */
  readonly status: number

  /**
   * @param status The hook's `http_code`; anything but an integer from 400 to 599 becomes 500.
   * @param message The hook's `message` (sent as is).
   */
  constructor(status: number, message: string) {
    const bounded = Number.isInteger(status) && status >= 400 && status <= 599 ? status : 500
    super(bounded === 500 ? 'unexpected_failure' : 'unknown', message)
    this.status = bounded
  }
}
