/**
 * `@gatehouse/auth`: a user authentication and management server on PostgreSQL, wire-compatible
 * with Supabase Auth (GoTrue), so that `@supabase/auth-js` works against it unchanged.
 *
 * @packageDocumentation
 */
export { buildAuthApp, createAuthApp, type AuthApp, type AuthDeps } from './app.js'
export {
  API_KEY_ISSUED_AT,
  API_KEY_LIFETIME_SECONDS,
  apiKey,
  apiKeys,
  type ApiKeys,
} from './crypto/api-keys.js'
export { startWarnings, type StartWarning } from './conf/start-warnings.js'
export { serviceRoleKey } from './serve.js'
export { systemClock, type Clock } from './clock.js'
export { cryptoRandom, type Random } from './random.js'
export type { FactorJson, IdentityJson, TokenResponse, UserJson } from './api/http/serializers.js'
export {
  loadSettings,
  type CaptchaSettings,
  type HibpSettings,
  type EmailSendRate,
  type LogLevel,
  type MfaSettings,
  type Settings,
} from './conf/settings.js'
export { SettingsError } from '@gatehouse/settings'
export { EXTERNAL_PROVIDERS, type ExternalProvider } from './provider/names.js'
export { SMS_PROVIDERS, type SmsProviderName } from './sms/sms-provider.js'
export { CAPTCHA_PROVIDERS, type CaptchaProviderName } from './security/captcha-providers.js'
export { SERVICE_ALGORITHMS, type ServiceAlgorithm } from './limiter/algorithms.js'
export type { Factor, FactorStatus, FactorType } from './models/factor.js'
export { JwtKeys, JwtKeyError, type JwtKeyConfig, type SigningAlgorithm } from './crypto/jwt.js'
export {
  PasswordHasher,
  PasswordHashingBusyError,
  type PasswordHasherOptions,
  type PasswordHashing,
} from './crypto/password-hasher.js'
export {
  AuthError,
  BadRequestError,
  ConflictError,
  ERROR_CODES,
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
  UnsupportedGrantTypeError,
  UserNotFoundError,
  WeakPasswordError,
  type ErrorCode,
} from './errors.js'
export {
  MAIL_KINDS,
  NOTIFICATION_KINDS,
  NoopMailer,
  type Mailer,
  type MailKind,
  type MailMessage,
  type NotificationKind,
} from './mailer/mailer.js'
export { SmtpMailer, type RenderedMail, type SmtpMailerOptions } from './mailer/smtp.js'
export { NoSmsProvider, type SmsChannel, type SmsProvider } from './sms/sms-provider.js'
export { NoCaptcha, type CaptchaResult, type CaptchaVerifier } from './security/captcha.js'
export {
  RangeApiPwnedPasswords,
  type PwnedPasswords,
  type PwnedPasswordsLog,
  type PwnedVerdict,
  type RangeApiOptions,
} from './security/pwned-passwords.js'
export {
  ALLOWED,
  NoLimiter,
  type LimitDecision,
  type LimitedOperation,
  type Limiter,
} from './limiter/limiter.js'
export { type EmailSendLimiter } from './limiter/email-send-limiter.js'
export {
  DatabaseUnavailableError,
  type Db,
  type PoolStats,
  type Queryable,
  type CommitHook,
  type QueryOptions,
  type Tables,
  type TransactionOptions,
  type Tx,
} from './storage/db.js'
export { noAuthMetrics, type AuthMetrics } from './telemetry/auth-metrics.js'
export { type HookTransportOptions } from './hooks/hooks.js'
export { HTTP_HOOK_LIMITS, type HttpHookLimits } from './hooks/http.js'
export { openDb } from './storage/open.js'
export { migrate } from './storage/migrate.js'
