/**
 * GoTrue's closed vocabulary of `error_code` values (upstream `apierrors/errorcode.go`), the ones
 * this server emits. Clients such as auth-js switch on them.
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
  'reauthentication_needed',
  'reauthentication_not_valid',
  'conflict',
] as const

/** One of {@link ERROR_CODES}. */
export type ErrorCode = (typeof ERROR_CODES)[number]
