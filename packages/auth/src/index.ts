/**
 * `@gatehouse/auth`: a user authentication and management server on PostgreSQL, wire-compatible
 * with Supabase Auth (GoTrue), so that `@supabase/auth-js` works against it unchanged.
 *
 * @packageDocumentation
 */
export { buildAuthApp, createAuthApp, smsProviderFor, type AuthApp, type AuthDeps } from './app.js'
export { passwordHasherFor } from './server.js'
export { runCli, parseArgs, USAGE, type CliIo } from './cli.js'
export {
  API_KEY_ISSUED_AT,
  API_KEY_LIFETIME_SECONDS,
  apiKey,
  apiKeys,
  type ApiKeys,
} from './tokens/api-keys.js'
export { startWarnings, type StartWarning } from './conf/start-warnings.js'
export {
  databaseFailureLine,
  listenFailureLine,
  migrateCommand,
  serveCommand,
  serviceRoleKey,
  START_FAILURE_EXIT_STATUS,
} from './serve.js'
export { systemClock, type Clock } from './clock.js'
export { cryptoRandom, type Random } from './random.js'
export type { FactorJson, IdentityJson, TokenResponse, UserJson } from './api/http/serializers.js'
export {
  loadSettings,
  parseEmailSendRate,
  parseSmsSendRate,
  parseTestOtp,
  splitRequiredCharacters,
  type CaptchaSettings,
  type EmailSendRate,
  type LogLevel,
  type MfaSettings,
  type Settings,
} from './conf/settings.js'
export { SettingsError } from '@gatehouse/settings'
export { EXTERNAL_PROVIDERS, type ExternalProvider } from './provider/names.js'
export { SMS_PROVIDERS, type SmsProviderName } from './sms/sms-provider.js'
export {
  CAPTCHA_PROVIDERS,
  CAPTCHA_VERIFY_URLS,
  type CaptchaProviderName,
} from './security/captcha-providers.js'
export { SERVICE_ALGORITHMS, type ServiceAlgorithm } from './limiter/algorithms.js'
export {
  generateTotpSecret,
  matchTotpStep,
  totpCode,
  totpUri,
  TOTP_PERIOD,
  TOTP_WINDOW,
} from './crypto/totp.js'
export type { Factor, FactorStatus, FactorType } from './models/factor.js'
export { requireAal2IfVerifiedFactors } from './services/mfa.js'
export { JwtKeys, JwtKeyError, type JwtKeyConfig, type SigningAlgorithm } from './crypto/jwt.js'
export {
  BCRYPT_COST,
  checkPasswordStrength,
  hashPassword,
  verifyPassword,
  type PasswordPolicy,
  type WeakPassword,
  type WeakPasswordReason,
} from './crypto/password.js'
export {
  PasswordHasher,
  PasswordHashingBusyError,
  type PasswordHasherOptions,
  type PasswordHashing,
} from './crypto/password-hasher.js'
export { generateRefreshToken, isWellFormedRefreshToken } from './crypto/refresh-token.js'
export {
  AuthError,
  BadRequestError,
  ConflictError,
  ERROR_CODES,
  ForbiddenError,
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
  WIRE_ERRORS,
  wireErrorOf,
  type WireError,
  type WireMapping,
} from './api/http/errors/wire.js'
export {
  toOAuthError,
  type OAuthErrorBody,
  type OAuthErrorCode,
} from './api/http/errors/oauth-error.js'
export {
  MAIL_KINDS,
  NOTIFICATION_KINDS,
  notificationSwitch,
  NoopMailer,
  type NotificationSwitch,
  type Mailer,
  type MailKind,
  type MailMessage,
  type NotificationKind,
} from './mailer/mailer.js'
export { SmtpMailer, type RenderedMail, type SmtpMailerOptions } from './mailer/smtp.js'
export {
  TemplateFetchError,
  TemplateSource,
  type TemplateSourceOptions,
} from './mailer/template-source.js'
export {
  compileTemplate,
  renderActions,
  renderTemplate,
  templateValues,
  type TemplateValues,
} from './mailer/template.js'
export {
  parseTemplate,
  TemplateExecError,
  TemplateParseError,
  type RenderOptions,
  type Template,
} from './mailer/go-template.js'
export { DEFAULT_SUBJECTS, DEFAULT_TEMPLATES } from './mailer/default-templates.js'
export {
  NoSmsProvider,
  SMS_TIMEOUT_MS,
  type SmsChannel,
  type SmsHttpOptions,
  type SmsProvider,
} from './sms/sms-provider.js'
export { TwilioProvider } from './sms/twilio.js'
export { TwilioVerifyProvider } from './sms/twilio-verify.js'
export { MessagebirdProvider } from './sms/messagebird.js'
export { TextlocalProvider } from './sms/textlocal.js'
export { VonageProvider } from './sms/vonage.js'
export { LoggedSmsProvider } from './sms/logged.js'
export { smsText, TEST_OTP_MESSAGE_ID } from './services/sms.js'
export { postForm, onOrigin, type Fetch, type FormPost, type FormReply } from './form-post.js'
export {
  NoCaptcha,
  SiteverifyCaptcha,
  type CaptchaResult,
  type CaptchaVerifier,
} from './security/captcha.js'
export {
  ALLOWED,
  NoLimiter,
  type LimitDecision,
  type LimitedOperation,
  type Limiter,
} from './limiter/limiter.js'
export { PasswordBackoff, type PasswordBackoffOptions } from './limiter/password-backoff.js'
export { FailureBackoff, type FailureBackoffOptions } from './limiter/failure-backoff.js'
export {
  REQUEST_BURST,
  bucketWindows,
  requestRates,
  sendWindow,
  serviceBucket,
  type ServiceRule,
  type ServiceWindow,
} from './limiter/rates.js'
export {
  DESCRIPTOR,
  rateLimitServiceConfig,
  serviceRules,
  type OperationRules,
  type SendOperation,
  type ServiceRules,
} from './limiter/service-config.js'
export {
  ServiceLimiter,
  type RateLimitTransport,
  type ServiceLimiterOptions,
  type ServiceLimiterStats,
} from './limiter/service-limiter.js'
export { InMemoryEmailSendLimiter, type EmailSendLimiter } from './limiter/email-send-limiter.js'
export { TokenBucketLimiter, type BucketRate } from './limiter/token-bucket.js'
export type { OAuthProvider, ProviderTokens, ProviderUserData } from './provider/oauth-provider.js'
export {
  DatabaseUnavailableError,
  isDatabaseUnavailable,
  isLockTimeout,
  isStatementTimeout,
  isUniqueViolation,
  tableNames,
  type Db,
  type PoolStats,
  type Queryable,
  type CommitHook,
  type QueryOptions,
  type Tables,
  type TransactionOptions,
  type Tx,
} from './storage/db.js'
export { guardedDb, isReadOnlyStatement, type WriteGuard } from './storage/guarded-db.js'
export {
  describeDatabaseError,
  isDatabaseError,
  isTransientStartError,
  waitForDatabase,
  type WaitForDatabaseOptions,
} from './storage/reach.js'
export { RequestDeadline } from './api/http/deadline.js'
export {
  DURATION_BUCKETS,
  meterAuthMetrics,
  noAuthMetrics,
  type AuthMetrics,
  type RequestRecord,
} from './telemetry/auth-metrics.js'
export { CountedMailer, CountedSmsProvider } from './telemetry/counted.js'
export { REQUEST_SPAN_NAME } from './telemetry/request-telemetry.js'
export { tracedDb, operationOf } from './telemetry/traced-db.js'
export {
  buildTelemetry,
  resourceAttributes,
  INSTRUMENTATION_NAME,
  type AuthTelemetry,
} from './telemetry/telemetry.js'
export { openDb } from './storage/open.js'
export { migrate, readMigrations, MIGRATIONS_DIR, type Migration } from './storage/migrate.js'
export { createLogger, LEVEL_WORDS, REDACT_PATHS } from './logger.js'
export { CleanupJob, type CleanupJobOptions, type CleanupResult } from './services/cleanup.js'
export {
  MailQueue,
  DeferJob,
  type JobHandler,
  type MailOutbox,
  type MailQueueOptions,
} from './services/mail-queue.js'
export { maskDatabaseUrl } from './redact.js'
