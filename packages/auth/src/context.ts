import type { CustomProviders } from './provider/custom.js'
import type { CustomIdTokenIssuers } from './provider/id-token.js'
import type { Clock } from './clock.js'
import type { Settings } from './conf/settings.js'
import type { JwtKeys } from './crypto/jwt.js'
import type { PasswordHasher } from './crypto/password-hasher.js'
import type { Hooks } from './hooks/hooks.js'
import type { EmailSendLimiter } from './limiter/email-send-limiter.js'
import type { Limiter } from './limiter/limiter.js'
import type { PasswordBackoff } from './limiter/password-backoff.js'
import type { Mailer } from './mailer/mailer.js'
import type { ProviderRegistry } from './provider/registry.js'
import type { SessionClient } from './models/session.js'
import type { Random } from './random.js'
import type { CaptchaVerifier } from './security/captcha.js'
import type { PwnedPasswords } from './security/pwned-passwords.js'
import type { AuditTrail } from './services/shared/audit-trail.js'
import type { MailOutbox } from './services/shared/mail-queue.js'
import type { SmsProvider } from './sms/sms-provider.js'
import type { Db } from './storage/db.js'
import type { AuthMetrics } from './telemetry/auth-metrics.js'
import type { TokenService } from './sessions/token-service.js'

/**
 * What every route group and service needs: the settings and the injected services. Built once,
 * by `AuthApp.start()` (`app.ts`), the one place where implementations are chosen. A request's
 * work sees it as `request.ctx`, whose `db` runs under the request's deadline
 * (`api/http/request-app-context.ts`).
 */
export interface AppContext {
  readonly settings: Settings
  /**
   * The database. In a request's `ctx`, under the request's deadline (`guardedDb`): nothing is
   * sent once the request was answered with its timeout.
   */
  readonly db: Db
  readonly clock: Clock
  readonly random: Random
  readonly keys: JwtKeys
  readonly tokens: TokenService
  /** bcrypt with bounded concurrency: every password hash and check goes through it. */
  readonly passwords: PasswordHasher
  readonly mailer: Mailer
  readonly sms: SmsProvider
  readonly captcha: CaptchaVerifier
  /** Request rate limits per operation and client (`RATE_LIMIT_*`, `RATE_LIMIT_BACKEND`). */
  readonly limiter: Limiter
  /** The server-wide budget of emails sent (`RATE_LIMIT_EMAIL_SENT`). */
  readonly emailLimiter: EmailSendLimiter
  /** Per-account back-off of failed password sign-ins (`RATE_LIMIT_PASSWORD_FAILURES`). */
  readonly passwordBackoff: PasswordBackoff
  /** The enabled external OAuth providers. */
  readonly providers: ProviderRegistry
  /**
   * Where `custom:<name>` providers of the `id_token` grant come from (the custom provider store
   * plugs in here); without it they are answered "Custom OAuth providers are disabled".
   */
  readonly customIdTokenIssuers?: CustomIdTokenIssuers | undefined
  /** The custom OAuth/OIDC providers (`custom:<name>`): their transport, guard and secret box. */
  readonly customProviders?: CustomProviders | undefined
  /** The server-wide budget of SMS messages sent (`RATE_LIMIT_SMS_SENT`). */
  readonly smsLimiter: EmailSendLimiter
  /** The counters (`METRICS_ENABLED`); does nothing when metrics are off. */
  readonly metrics: AuthMetrics
  /** The durable mail queue: work that requests hand off (see `services/shared/mail-queue.ts`). */
  readonly mailQueue: MailOutbox
  /**
   * Where audit events go: the logs, and `audit_log_entries` unless `AUDIT_LOG_DISABLE_POSTGRES`
   * (see `services/shared/audit-trail.ts`).
   */
  readonly audit: AuditTrail
  /** The auth hooks (`HOOK_*`); {@link Hooks.enabled} says which are on. */
  readonly hooks: Hooks
  /** The leaked-password lookup (`PASSWORD_HIBP_*`); absent when `PASSWORD_HIBP_ENABLED` is off. */
  readonly pwnedPasswords?: PwnedPasswords | undefined
}

/**
 * What a route group is given when it registers its routes: the {@link AppContext} without its
 * database. A handler's or hook's database work goes through `request.ctx`, the context under the
 * request's deadline, so that no statement of a request escapes it.
 */
export type RouteContext = Omit<AppContext, 'db'>

/** Who a request comes from: recorded on sessions and in audit entries. */
export interface RequestContext extends SessionClient {
  /** Audience of the request (`X-JWT-AUD` header, else `JWT_AUD`). */
  readonly aud: string
  /**
   * The request's `Accept-Language` (at most 512 characters; `''` or absent when none): the
   * language of the mails and SMS it causes after `user_metadata.locale` (see `locale.ts`).
   */
  readonly acceptLanguage?: string
}
