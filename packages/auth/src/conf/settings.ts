/**
 * The auth server's settings: one field table, {@link settingsTable}, gives {@link loadSettings},
 * its problems and `gatehouse-auth --help`. Each setting `NAME` is read as `AUTHSVC_NAME`, else
 * upstream's `GOTRUE_NAME`; a few also without a prefix.
 *
 * @module
 */
import {
  SettingsError,
  bool,
  decimal,
  defineSettings,
  duration,
  field,
  group,
  integer,
  invalid,
  list,
  oneOf,
  parseMap,
  port,
  parseGoDuration,
  parseOtlpHeaders,
  parseResourceAttributes,
  secondsOrDuration,
  text,
  url,
  type Env,
  type Field,
  type Invalid,
} from '@gatehouse/settings'
import { parseTemplate } from '../mailer/go-template.js'
import type { MailKind, NotificationKind } from '../mailer/mailer.js'
import { compileGlob } from '../services/url-glob.js'

/** The log levels of `LOG_LEVEL` (upstream's logrus names). */
export type LogLevel = 'panic' | 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * External OAuth providers whose `EXTERNAL_<P>_ENABLED` switch is reported by `GET /settings`.
 * The spec's list plus the ones upstream reports.
 */
export const EXTERNAL_PROVIDERS = [
  'apple',
  'azure',
  'bitbucket',
  'discord',
  'facebook',
  'figma',
  'github',
  'gitlab',
  'google',
  'keycloak',
  'linkedin',
  'notion',
  'snapchat',
  'spotify',
  'slack',
  'twitch',
  'twitter',
  'workos',
] as const

/** One of {@link EXTERNAL_PROVIDERS}. */
export type ExternalProvider = (typeof EXTERNAL_PROVIDERS)[number]

/**
 * One external provider's OAuth client (`EXTERNAL_<P>_*`, upstream's `conf.OAuthProviderConfiguration`).
 * Enabled providers must have `clientId`, `secret` and `redirectUri` (checked by {@link loadSettings}).
 */
export interface ProviderSettings {
  /** `EXTERNAL_<P>_ENABLED`. @default false */
  readonly enabled: boolean
  /** `EXTERNAL_<P>_CLIENT_ID`: the OAuth client id (Twitter: the consumer key). */
  readonly clientId: string
  /**
   * `EXTERNAL_<P>_SECRET`: the client secret (Twitter: the consumer secret). For Apple, either
   * the client-secret JWT itself or an ES256 private key (PEM) to sign one with
   * `EXTERNAL_APPLE_TEAM_ID` and `EXTERNAL_APPLE_KEY_ID`.
   */
  readonly secret: string
  /** `EXTERNAL_<P>_REDIRECT_URI`: this server's `/callback` as registered with the provider. */
  readonly redirectUri: string
  /**
   * `EXTERNAL_<P>_URL`: the provider's base URL instead of its public one (upstream `chooseHost`);
   * keycloak: the realm URL (required); gitlab: default `https://gitlab.com`; apple and google:
   * the issuer to discover from. '' for the provider's default.
   */
  readonly url: string
  /**
   * `EXTERNAL_<P>_TRUST_EMAIL`, for the providers of {@link EMAIL_ASSUMED_PROVIDERS} only: trust
   * that the address the provider returns is its user's although the provider does not say it
   * verified it, so that it links the identity to an existing account holding that address.
   * @default false
   */
  readonly trustEmail?: boolean
}

/**
 * Providers that do not say whether they verified the email they return (their modules count it
 * as verified, as upstream does): without `EXTERNAL_<P>_TRUST_EMAIL` it never links to an
 * existing account.
 */
export const EMAIL_ASSUMED_PROVIDERS: readonly ExternalProvider[] = [
  'facebook',
  'figma',
  'linkedin',
  'notion',
  'slack',
  'snapchat',
  'workos',
]

/** `RATE_LIMIT_EMAIL_SENT`: `events` mails per `periodMs` milliseconds; `events` 0 blocks all. */
export interface EmailSendRate {
  readonly events: number
  readonly periodMs: number
}

/**
 * Telemetry settings: upstream's `TRACING_*` and `METRICS_*` (`conf.TracingConfig`,
 * `conf.MetricsConfig`) and the standard OpenTelemetry variables, which are read without a prefix.
 */
export interface TelemetrySettings {
  /** `TRACING_ENABLED`: export a span per request and per SQL statement. @default false */
  readonly tracingEnabled: boolean
  /** `TRACING_EXPORTER`: `opentelemetry` (OTLP), the only one upstream has. */
  readonly tracingExporter: 'opentelemetry'
  /**
   * `TRACING_SAMPLING_RATE` (Gatehouse addition, as the rate limit service's): fraction of new
   * traces sampled, 0 to 1; a caller's `traceparent` sampled flag is followed. @default 1
   */
  readonly tracingSamplingRate: number
  /** `METRICS_ENABLED`. @default false */
  readonly metricsEnabled: boolean
  /** `METRICS_EXPORTER`: `opentelemetry` (OTLP push) or `prometheus` (scrape endpoint). */
  readonly metricsExporter: 'opentelemetry' | 'prometheus'
  /** `OTEL_EXPORTER_PROMETHEUS_HOST`: listen address of the scrape endpoint. @default '0.0.0.0' */
  readonly prometheusHost: string
  /** `OTEL_EXPORTER_PROMETHEUS_PORT`: its port; metrics are served on `/`. @default 9100 */
  readonly prometheusPort: number
  /**
   * `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` or `grpc` (upstream refuses `http/json`).
   * @default 'http/protobuf'
   */
  readonly otlpProtocol: 'http/protobuf' | 'grpc'
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: base URL ('' = `http://localhost:4318`, grpc `:4317`). */
  readonly otlpEndpoint: string
  /** `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: full URL for traces, wins over the base. */
  readonly otlpTracesEndpoint: string
  /** `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`: full URL for metrics, wins over the base. */
  readonly otlpMetricsEndpoint: string
  /** `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,…`, URL-encoded): sent with every export; secret. */
  readonly otlpHeaders: Readonly<Record<string, string>>
  /** `OTEL_EXPORTER_OTLP_TIMEOUT`: export timeout in milliseconds. @default 10000 */
  readonly otlpTimeoutMs: number
  /** `OTEL_METRIC_EXPORT_INTERVAL`: milliseconds between OTLP metric exports. @default 60000 */
  readonly metricExportIntervalMs: number
  /** `OTEL_SERVICE_NAME`: resource attribute `service.name`. @default 'gotrue' */
  readonly serviceName: string
  /** `OTEL_RESOURCE_ATTRIBUTES` (`k=v,…`, URL-encoded): more resource attributes. */
  readonly resourceAttributes: Readonly<Record<string, string>>
  /** `DEBUG` (no prefix): OpenTelemetry SDK diagnostics in the log. @default false */
  readonly debug: boolean
}

/** The validated, frozen configuration of the auth server. Built by {@link loadSettings}. */
export interface Settings {
  /** `SITE_URL`: base URL of the site; required. */
  readonly siteUrl: string
  /** `URI_ALLOW_LIST`: extra permitted `redirect_to` values (globs). @default [] */
  readonly uriAllowList: readonly string[]
  /** `DISABLE_SIGNUP`: users are only created through invites and the admin API. @default false */
  readonly disableSignup: boolean
  /** `API_EXTERNAL_URL`: the URL this server is reached at; required. */
  readonly apiExternalUrl: string
  /** `API_HOST`: listen address. @default '0.0.0.0' */
  readonly apiHost: string
  /** `PORT` (no prefix) or `API_PORT`: listen port. @default 8081 */
  readonly port: number
  /**
   * `API_MAX_REQUEST_DURATION`: longest a request may take, in milliseconds (set as seconds or a
   * Go duration such as `10s`); then 504 `request_timeout`. 0 means no limit. @default 10000
   */
  readonly apiMaxRequestDuration: number
  /** `REQUEST_ID_HEADER`: incoming header whose value becomes the request id. @default '' */
  readonly requestIdHeader: string
  /** `API_OPENAPI_ENABLED`: serve the API's OpenAPI 3.1 document at `/openapi.json`. @default false */
  readonly apiOpenapiEnabled: boolean
  /** `RATE_LIMIT_HEADER`: header identifying the client for rate limits (trusted proxy). */
  readonly rateLimitHeader: string
  /** `SECURITY_SVC_FORWARDED_FOR_ENABLED`: first `Svc-Forwarded-For` value is the client IP. */
  readonly svcForwardedForEnabled: boolean
  readonly db: {
    /** `DB_DRIVER`: must be `postgres`. */
    readonly driver: 'postgres'
    /** `DATABASE_URL` (no prefix) or `DB_DATABASE_URL`: `postgres://…`, `pglite://<dir>` or `pglite://memory`. */
    readonly url: string
    /**
     * `DB_MAX_POOL_SIZE`: maximum open connections; 0 means none set here, so the pool takes half
     * of what the server lets this login open (`derivedPoolSize` in `storage/pg.ts`). @default 0
     */
    readonly maxPoolSize: number
    /** `DB_NAMESPACE`: table-name prefix (`<ns>_users`); empty for none. @default '' */
    readonly namespace: string
    /**
     * `DB_START_RETRY_SECONDS`: how long a start keeps trying, with back-off, to reach a
     * database that refuses connections, times out or is starting up, in seconds; 0 tries once.
     * @default 30
     */
    readonly startRetrySeconds: number
  }
  readonly log: {
    /** `LOG_LEVEL` (no prefix). @default 'info' */
    readonly level: LogLevel
    /** `LOG_FILE`: append logs to this file instead of standard output. @default '' */
    readonly file: string
  }
  /** Traces and metrics (`TRACING_*`, `METRICS_*`, the standard `OTEL_*` variables). */
  readonly telemetry: TelemetrySettings
  readonly jwt: {
    /**
     * `JWT_SECRET`: HS256 signing secret, at least {@link MIN_JWT_SECRET_BYTES} bytes; required
     * unless `JWT_KEYS` holds a signing key.
     */
    readonly secret: string
    /** `JWT_EXP`: access-token lifetime in seconds. @default 3600 */
    readonly exp: number
    /** `JWT_AUD`: default audience. @default '' */
    readonly aud: string
    /** `JWT_ISSUER`: `iss` claim, omitted when empty. @default '' */
    readonly issuer: string
    /** `JWT_ADMIN_GROUP_NAME` (deprecated group support). @default 'admin' */
    readonly adminGroupName: string
    /** `JWT_DEFAULT_GROUP_NAME`: role assigned to new users. @default '' */
    readonly defaultGroupName: string
    /** `JWT_ADMIN_ROLES`: role claim values that grant admin access. @default ['service_role','supabase_admin'] */
    readonly adminRoles: readonly string[]
    /** `JWT_KEYS`: JSON array of private JWKs (RS256 default, ES256, EdDSA, HS256). @default [] */
    readonly keys: readonly Readonly<Record<string, unknown>>[]
    /** `JWT_KEY_ID`: `kid` header of HS256 tokens signed with `JWT_SECRET`. @default '' */
    readonly keyId: string
  }
  readonly password: {
    /** `PASSWORD_MIN_LENGTH` (values below 6 are raised to 6). @default 6 */
    readonly minLength: number
    /** `PASSWORD_REQUIRED_CHARACTERS`, split into sets (`:` separates, `\:` is a literal colon). */
    readonly requiredCharacters: readonly string[]
    /**
     * `PASSWORD_HASH_CONCURRENCY`: bcrypt hashes and checks run at once; 0 means one per CPU core
     * (`os.availableParallelism()`). @default 0
     */
    readonly hashConcurrency: number
    /**
     * `PASSWORD_HASH_QUEUE_SIZE`: hashes and checks waiting for a slot; beyond it requests get 429
     * `over_request_rate_limit`. @default 100
     */
    readonly hashQueueSize: number
  }
  readonly security: {
    /** `SECURITY_REFRESH_TOKEN_ROTATION_ENABLED`: reuse detection. @default true */
    readonly refreshTokenRotationEnabled: boolean
    /** `SECURITY_REFRESH_TOKEN_REUSE_INTERVAL`: seconds (or a Go duration). @default 0 */
    readonly refreshTokenReuseInterval: number
    /** `SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION`. @default false */
    readonly updatePasswordRequireReauthentication: boolean
    /**
     * `SECURITY_MANUAL_LINKING_ENABLED`: signed-in users may link and unlink identities
     * (`/user/identities/*`). @default false
     */
    readonly manualLinkingEnabled: boolean
    /**
     * `SECURITY_MANUAL_LINKING_REQUIRE_SITE_REFERER`: the browser's first request of an identity
     * link (`/authorize?link_ticket=…`) must come from a page of the site (its `Referer` allowed
     * as a `redirect_to` is), so that a link URL sent to someone else's browser cannot attach
     * their provider account to the sender's user. Turn off for native apps that open the link
     * URL in a system browser (no `Referer`). @default true
     */
    readonly manualLinkingRequireSiteReferer: boolean
    /**
     * `SECURITY_OTP_MAX_ATTEMPTS`: wrong answers one one-time code (email or SMS), reauthentication
     * nonce or MFA challenge takes; the last of them invalidates it, and a new one must be
     * requested. An MFA factor takes as many failures (over all its challenges) before each
     * further one makes it back off (1 s, doubling, at most 15 min). Counted in the database, so
     * for every instance. Beyond upstream, which counts nothing. @default 5
     */
    readonly otpMaxAttempts: number
    /** `SECURITY_CAPTCHA_*`: captcha protection of sign-up and sign-in (upstream `security`). */
    readonly captcha: CaptchaSettings
  }
  /** Multi-factor authentication: the `MFA_*` settings. */
  readonly mfa: MfaSettings
  readonly external: {
    /** `EXTERNAL_EMAIL_ENABLED`. @default true */
    readonly emailEnabled: boolean
    /** `EXTERNAL_PHONE_ENABLED`. @default false */
    readonly phoneEnabled: boolean
    /** `EXTERNAL_ANONYMOUS_USERS_ENABLED`. @default false */
    readonly anonymousUsersEnabled: boolean
    /** `EXTERNAL_<P>_ENABLED` for each of {@link EXTERNAL_PROVIDERS}. @default false */
    readonly providers: Readonly<Record<ExternalProvider, boolean>>
    /** `EXTERNAL_<P>_*`: each provider's OAuth client, checked at start when it is enabled. */
    readonly oauth: Readonly<Record<ExternalProvider, ProviderSettings>>
    /** `EXTERNAL_APPLE_TEAM_ID` and `EXTERNAL_APPLE_KEY_ID`: to sign Apple's client secret. */
    readonly apple: { readonly teamId: string; readonly keyId: string }
  }
  readonly mailer: {
    /** `MAILER_AUTOCONFIRM`: email sign-ups are confirmed at once. @default false */
    readonly autoconfirm: boolean
    /**
     * `MAILER_OTP_EXP`: validity of links and OTPs in seconds. @default 3600 (upstream: 86400;
     * see SECURITY.md)
     */
    readonly otpExp: number
    /** `MAILER_OTP_LENGTH`: digits of email one-time codes, clamped to 6..10. @default 6 */
    readonly otpLength: number
    /**
     * `MAILER_SECURE_EMAIL_CHANGE_ENABLED`: an email change must be confirmed from both the
     * current and the new address. @default true
     */
    readonly secureEmailChangeEnabled: boolean
    /**
     * `SMTP_MAX_FREQUENCY`: shortest interval between two mails of one kind to one user, in
     * milliseconds (set as seconds or a Go duration). @default 900000 (the spec's 900 seconds)
     */
    readonly maxFrequency: number
    /**
     * `MAILER_URLPATHS_<KIND>`: path (absolute, or relative to `API_EXTERNAL_URL`) of the link in
     * each mail; magic links use the recovery path (upstream). @default '/verify' each
     */
    readonly urlPaths: {
      readonly invite: string
      readonly confirmation: string
      readonly recovery: string
      readonly emailChange: string
    }
    /**
     * `MAILER_SUBJECTS_<KIND>`: subject templates (Go-template placeholders, see
     * `mailer/template.ts`). Defaults: {@link DEFAULT_SUBJECTS}.
     */
    readonly subjects: Readonly<Record<MailKind, string>>
    /**
     * `MAILER_TEMPLATES_<KIND>`: URL of each kind's HTML template (relative URLs are resolved
     * against `SITE_URL`); empty for the built-in one. @default ''
     */
    readonly templates: Readonly<Record<MailKind, string>>
    /**
     * `MAILER_NOTIFICATIONS_<KIND>_ENABLED`: which change notifications are sent (keys: the
     * camelCase of the kind, see {@link notificationSwitch}). @default false each
     */
    readonly notifications: Readonly<Record<NotificationSwitch, boolean>>
    /**
     * `MAILER_QUEUE_POLL_INTERVAL`: how often each instance looks for due jobs of the mail queue
     * (retries, and jobs queued by other instances or before a restart), in milliseconds; a
     * job queued by a request runs at once. @default 5000
     */
    readonly queuePollInterval: number
  }
  readonly smtp: {
    /** `SMTP_HOST`: the SMTP server; empty means no mail is sent (upstream's noop mailer). */
    readonly host: string
    /** `SMTP_PORT`: 465 is TLS from the start; others upgrade with STARTTLS when offered. @default 587 */
    readonly port: number
    /** `SMTP_USER`: login, empty for none. @default '' */
    readonly user: string
    /** `SMTP_PASS`: password (never logged). @default '' */
    readonly pass: string
    /** `SMTP_ADMIN_EMAIL`: the From address; required when `SMTP_HOST` is set. */
    readonly adminEmail: string
    /** `SMTP_SENDER_NAME`: display name of the From address (`Name <address>`). @default '' */
    readonly senderName: string
  }
  readonly rateLimit: {
    /**
     * `RATE_LIMIT_EMAIL_SENT`: emails the server sends per period, across all users (only while
     * `MAILER_AUTOCONFIRM` is off), as upstream's `N` (per hour) or `N/<duration>`. @default 30/h
     */
    readonly emailSent: EmailSendRate
    /**
     * `RATE_LIMIT_SMS_SENT`: SMS the server sends per period, across all users, as
     * `RATE_LIMIT_EMAIL_SENT`. @default 30/h
     */
    readonly smsSent: EmailSendRate
    /**
     * `RATE_LIMIT_TOKEN_REFRESH`: `POST /token` requests (every grant, as upstream) per client
     * and 5 minutes, burst 30. @default 150
     */
    readonly tokenRefresh: number
    /** `RATE_LIMIT_VERIFY`: `/verify` requests per client and 5 minutes, burst 30. @default 30 */
    readonly verify: number
    /**
     * `RATE_LIMIT_OTP`: requests per client and 5 minutes, burst 30, on each of `/otp`
     * (`/magiclink`), `/recover`, `/resend`, `/signup` and `PUT /user`. @default 30
     */
    readonly otp: number
    /** `RATE_LIMIT_SSO`: SSO requests per client and 5 minutes, burst 30. @default 30 */
    readonly sso: number
    /**
     * `RATE_LIMIT_ANONYMOUS_USERS`: anonymous sign-ins (`POST /signup` without email and phone)
     * per client and hour, burst the same number, as upstream. @default 30
     */
    readonly anonymousUsers: number
    /**
     * `RATE_LIMIT_BACKEND`: where budgets are counted: `memory` (each instance alone, as upstream)
     * or `ratelimit` (a shared `gatehouse-ratelimit` service over gRPC). @default 'memory'
     */
    readonly backend: 'memory' | 'ratelimit'
    /** `RATE_LIMIT_SERVICE_ADDRESS`: `host:port` of the rate limit service's gRPC listener. */
    readonly serviceAddress: string
    /** `RATE_LIMIT_DOMAIN`: the domain of the requests and of the YAML config. */
    readonly domain: string
    /** `RATE_LIMIT_SERVICE_TIMEOUT`: deadline of one decision, in milliseconds. @default 250 */
    readonly serviceTimeout: number
    /**
     * `RATE_LIMIT_SERVICE_COALESCE`: send the decisions of one event-loop turn as one
     * `ShouldRateLimit` call when the service allows it (its `gatehouse-coalesce-max-descriptors`
     * header; not with `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true`): the `coalesce` option of
     * `RateLimitClient`. @default true
     */
    readonly serviceCoalesce: boolean
    /**
     * `RATE_LIMIT_SERVICE_ALGORITHM`: how the service counts a client's budget, and so the
     * descriptors the limiter sends and the config `gatehouse-auth ratelimit-config` prints:
     * `token_bucket` (upstream's bucket exactly, one descriptor; the service's Redis and memory
     * backends) or `fixed_window` (a burst per minute and a rate per hour, two descriptors; for
     * a memcache backend or envoyproxy/ratelimit). @default 'token_bucket'
     */
    readonly serviceAlgorithm: ServiceAlgorithm
    /**
     * `RATE_LIMIT_FAIL_CLOSED`: with the service unreachable, refuse with 503 instead of allowing
     * (logged and counted either way). @default false
     */
    readonly failClosed: boolean
    /**
     * `RATE_LIMIT_PASSWORD_FAILURES`: failed password sign-ins per email or phone before each
     * further one is refused for a growing delay (1 s, doubling, at most 15 min); 0 disables.
     * @default 5
     */
    readonly passwordFailures: number
    /**
     * `RATE_LIMIT_TRUSTED_PROXY_HOPS`: proxies in front of this server that append to the
     * `RATE_LIMIT_HEADER` (or `Svc-Forwarded-For`) list; the client key is the value this many
     * places from the right, the one the outermost trusted proxy appended (the values left of it
     * are the client's own). @default 1
     */
    readonly trustedProxyHops: number
  }
  /**
   * `EXTERNAL_FLOW_STATE_EXPIRY_DURATION`: lifetime of a PKCE flow state in milliseconds (at least
   * 300 s, as upstream). @default 300000
   */
  readonly flowStateExpiryDuration: number
  /**
   * `DB_CLEANUP_INTERVAL`: milliseconds between two runs of each instance's clean-up of expired
   * flow states and MFA challenges (`services/cleanup.ts`); 0 turns it off. @default 600000
   */
  readonly dbCleanupInterval: number
  readonly sms: {
    /** `SMS_AUTOCONFIRM`: phone sign-ups are confirmed at once. @default false */
    readonly autoconfirm: boolean
    /** `SMS_PROVIDER`: who sends SMS messages; `''` sends none. @default '' */
    readonly provider: SmsProviderName | ''
    /** `SMS_OTP_EXP`: validity of SMS codes in seconds. @default 60 */
    readonly otpExp: number
    /** `SMS_OTP_LENGTH`: digits of SMS codes (clamped to 6..10, as upstream). @default 6 */
    readonly otpLength: number
    /**
     * `SMS_MAX_FREQUENCY`: shortest interval between two SMS codes to one user, in milliseconds
     * (set as seconds or a Go duration). @default 60000
     */
    readonly maxFrequency: number
    /** `SMS_TEMPLATE`: the message, a Go template with `{{ .Code }}`. */
    readonly template: string
    /**
     * `SMS_TEST_OTP`: `<phone>:<otp>,…`; these phones (E.164 digits without `+`) get no SMS and
     * their fixed code is used.
     */
    readonly testOtp: Readonly<Record<string, string>>
    /**
     * `SMS_TEST_OTP_VALID_UNTIL`: epoch milliseconds after which `SMS_TEST_OTP` no longer
     * applies (set as an RFC 3339 time); `null` for always.
     */
    readonly testOtpValidUntil: number | null
    readonly twilio: {
      /** `SMS_TWILIO_ACCOUNT_SID`. */
      readonly accountSid: string
      /** `SMS_TWILIO_AUTH_TOKEN` (never logged). */
      readonly authToken: string
      /** `SMS_TWILIO_MESSAGE_SERVICE_SID`: the sender (`From`): a messaging service or a number. */
      readonly messageServiceSid: string
      /** `SMS_TWILIO_CONTENT_SID`: WhatsApp content template whose variable `1` is the code. */
      readonly contentSid: string
      /** `SMS_TWILIO_API_URL`: scheme, host and port replacing `https://api.twilio.com`. */
      readonly apiUrl: string
    }
    readonly twilioVerify: {
      /** `SMS_TWILIO_VERIFY_ACCOUNT_SID`. */
      readonly accountSid: string
      /** `SMS_TWILIO_VERIFY_AUTH_TOKEN` (never logged). */
      readonly authToken: string
      /** `SMS_TWILIO_VERIFY_MESSAGE_SERVICE_SID`: the Verify service SID (`VA…`). */
      readonly messageServiceSid: string
      /** `SMS_TWILIO_VERIFY_API_URL`: scheme, host and port replacing `https://verify.twilio.com`. */
      readonly apiUrl: string
    }
    readonly messagebird: {
      /** `SMS_MESSAGEBIRD_ACCESS_KEY` (never logged). */
      readonly accessKey: string
      /** `SMS_MESSAGEBIRD_ORIGINATOR`: the sender. */
      readonly originator: string
      /** `SMS_MESSAGEBIRD_API_URL`: replaces `https://rest.messagebird.com`. */
      readonly apiUrl: string
    }
    readonly textlocal: {
      /** `SMS_TEXTLOCAL_API_KEY` (never logged). */
      readonly apiKey: string
      /** `SMS_TEXTLOCAL_SENDER`: the sender. */
      readonly sender: string
      /** `SMS_TEXTLOCAL_API_URL`: replaces `https://api.textlocal.in`. */
      readonly apiUrl: string
    }
    readonly vonage: {
      /** `SMS_VONAGE_API_KEY`. */
      readonly apiKey: string
      /** `SMS_VONAGE_API_SECRET` (never logged). */
      readonly apiSecret: string
      /** `SMS_VONAGE_FROM`: the sender. */
      readonly from: string
      /** `SMS_VONAGE_API_URL`: replaces `https://rest.nexmo.com`. */
      readonly apiUrl: string
    }
  }
}

/** The `MFA_*` settings (upstream `MFAConfiguration`). */
export interface MfaSettings {
  /** `MFA_TOTP_ENROLL_ENABLED`: TOTP factors can be enrolled. @default true */
  readonly totpEnrollEnabled: boolean
  /** `MFA_TOTP_VERIFY_ENABLED`: TOTP factors can be challenged and verified. @default true */
  readonly totpVerifyEnabled: boolean
  /** `MFA_PHONE_ENROLL_ENABLED`: phone factors can be enrolled. @default false */
  readonly phoneEnrollEnabled: boolean
  /** `MFA_PHONE_VERIFY_ENABLED`: phone factors can be challenged and verified. @default false */
  readonly phoneVerifyEnabled: boolean
  /** `MFA_MAX_ENROLLED_FACTORS`: factors (verified or not) a user may have. @default 10 */
  readonly maxEnrolledFactors: number
  /** `MFA_MAX_VERIFIED_FACTORS`: verified factors a user may have. @default 10 */
  readonly maxVerifiedFactors: number
  /**
   * `MFA_PHONE_MAX_UNVERIFIED_FACTORS`: unverified phone factors a user may have at once (each
   * can be sent an SMS per `MFA_PHONE_MAX_FREQUENCY`); beyond upstream, which only has
   * `MFA_MAX_ENROLLED_FACTORS`. @default 2
   */
  readonly phoneMaxUnverifiedFactors: number
  /** `MFA_CHALLENGE_EXPIRY_DURATION`: seconds a challenge can be verified. @default 300 */
  readonly challengeExpiryDuration: number
  /**
   * `MFA_FACTOR_EXPIRY_DURATION`: milliseconds after which an unverified factor that was never
   * challenged is deleted (at the next enrolment). @default 300000 (`300s`)
   */
  readonly factorExpiryDuration: number
  /**
   * `MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY`: challenge and verify requests per minute and client
   * (each with a burst of 30). @default 15
   */
  readonly rateLimitChallengeAndVerify: number
  /** `MFA_PHONE_OTP_LENGTH`: digits of a phone factor's code, 6 to 10 (else 6). @default 6 */
  readonly phoneOtpLength: number
  /** `MFA_PHONE_TEMPLATE`: the SMS text; `{{ .Code }}` is the code. @default 'Your code is {{ .Code }}' */
  readonly phoneTemplate: string
  /**
   * `MFA_PHONE_MAX_FREQUENCY`: least time between two SMS challenges of one factor, in
   * milliseconds (0 means the default). @default 60000 (`1m`)
   */
  readonly phoneMaxFrequency: number
}

/** The SMS providers of `SMS_PROVIDER` (upstream's names). */
export const SMS_PROVIDERS = [
  'twilio',
  'twilio_verify',
  'messagebird',
  'textlocal',
  'vonage',
] as const

/** One of {@link SMS_PROVIDERS}. */
export type SmsProviderName = (typeof SMS_PROVIDERS)[number]

/** The captcha providers of `SECURITY_CAPTCHA_PROVIDER`. */
export const CAPTCHA_PROVIDERS = ['hcaptcha', 'turnstile'] as const

/** One of {@link CAPTCHA_PROVIDERS}. */
export type CaptchaProviderName = (typeof CAPTCHA_PROVIDERS)[number]

/**
 * How the rate limit service counts a client's budget (`RATE_LIMIT_SERVICE_ALGORITHM`): the
 * service's `token_bucket`, or the two `fixed_window`s that approximate it where the service
 * has no token bucket.
 */
export const SERVICE_ALGORITHMS = ['token_bucket', 'fixed_window'] as const

/** One of {@link SERVICE_ALGORITHMS}. */
export type ServiceAlgorithm = (typeof SERVICE_ALGORITHMS)[number]

/** Each captcha provider's siteverify endpoint (upstream `security.GetCaptchaURL`). */
export const CAPTCHA_VERIFY_URLS: Readonly<Record<CaptchaProviderName, string>> = {
  hcaptcha: 'https://hcaptcha.com/siteverify',
  turnstile: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
}

/** `SECURITY_CAPTCHA_*`. */
export interface CaptchaSettings {
  /** `SECURITY_CAPTCHA_ENABLED`. @default false */
  readonly enabled: boolean
  /** `SECURITY_CAPTCHA_PROVIDER` (case-insensitive). @default 'hcaptcha' */
  readonly provider: CaptchaProviderName
  /** `SECURITY_CAPTCHA_SECRET`: the site's secret key (never logged); required when enabled. */
  readonly secret: string
  /** `SECURITY_CAPTCHA_TIMEOUT`: milliseconds a siteverify call may take. @default 10000 */
  readonly timeout: number
  /**
   * `SECURITY_CAPTCHA_VERIFY_URL`: the whole siteverify URL (tests, proxies). @default the
   * provider's, {@link CAPTCHA_VERIFY_URLS}
   */
  readonly verifyUrl: string
}

/**
 * Thrown by {@link loadSettings}: the toolkit's `SettingsError` (`code` `ERR_INVALID_SETTINGS`,
 * every problem in `problems`, one a line as `NAME: problem (got "…")`), under the name this
 * package has always exported.
 */
export { SettingsError as ConfigError }

const LOG_LEVELS: readonly LogLevel[] = [
  'panic',
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
]
/** Shortest `JWT_SECRET` accepted, in bytes (UTF-8): 256 bits, the HMAC-SHA-256 key size. */
export const MIN_JWT_SECRET_BYTES = 32

/**
 * Splits `PASSWORD_REQUIRED_CHARACTERS` into character sets: `:` separates sets and `\:` stands
 * for a literal colon. Empty sets are dropped.
 *
 * @param value The raw setting, for example `abc…z:ABC…Z:0123456789`.
 */
export function splitRequiredCharacters(value: string): string[] {
  const sets: string[] = []
  let current = ''
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]
    if (ch === '\\' && value[i + 1] === ':') {
      current += ':'
      i++
    } else if (ch === ':') {
      sets.push(current)
      current = ''
    } else {
      current += ch ?? ''
    }
  }
  sets.push(current)
  return sets.filter((s) => s !== '')
}

/** `JWT_KEYS`: a JSON array of private JWKs (or one JWK). */
function parseKeys(value: string): readonly Readonly<Record<string, unknown>>[] | Invalid {
  if (value === '') return []
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    return invalid('must be a JSON array of JWKs', { echo: false })
  }
  const list: unknown[] = Array.isArray(parsed) ? parsed : [parsed]
  const problems = list.flatMap((key, index) =>
    typeof key === 'object' && key !== null && typeof (key as { kty?: unknown }).kty === 'string'
      ? []
      : [`key ${String(index)} is not a JWK (an object with "kty")`],
  )
  return problems.length > 0
    ? invalid(problems, { echo: false })
    : (list as Readonly<Record<string, unknown>>[])
}

/** The default `EXTERNAL_<P>_URL` of providers that have one. */
const PROVIDER_DEFAULT_URLS: Partial<Record<ExternalProvider, string>> = {
  gitlab: 'https://gitlab.com',
}

function providerGroup(p: ExternalProvider) {
  const name = `EXTERNAL_${p.toUpperCase()}`
  return group({
    enabled: bool(`${name}_ENABLED`, { help: `${p} sign-in` }),
    clientId: text(`${name}_CLIENT_ID`, { help: `${p} OAuth client id; required when enabled` }),
    secret: text(`${name}_SECRET`, {
      secret: true,
      help: `${p} OAuth client secret; required when enabled`,
    }),
    redirectUri: url(`${name}_REDIRECT_URI`, {
      help: `this server's /callback as registered at ${p}; required when enabled`,
    }),
    url: url(`${name}_URL`, {
      ...(PROVIDER_DEFAULT_URLS[p] === undefined ? {} : { default: PROVIDER_DEFAULT_URLS[p] }),
      help:
        p === 'keycloak'
          ? 'the realm URL; required when enabled'
          : p === 'apple' || p === 'google'
            ? `issuer to discover ${p} from instead of its public one`
            : `${p} base URL instead of its public one`,
    }),
    ...(EMAIL_ASSUMED_PROVIDERS.includes(p)
      ? {
          trustEmail: bool(`${name}_TRUST_EMAIL`, {
            help: `link ${p} sign-ins to existing accounts by email, although ${p} does not say it verified it`,
          }),
        }
      : {}),
  })
}

/** `EXTERNAL_<PROVIDER>_*` for each of {@link EXTERNAL_PROVIDERS}. */
const providerFields = Object.fromEntries(EXTERNAL_PROVIDERS.map((p) => [p, providerGroup(p)])) as {
  [P in ExternalProvider]: ReturnType<typeof providerGroup>
}

/** Every kind of mail, in upstream's order: the six flow mails, then the seven notifications. */
export const MAIL_KINDS = [
  'invite',
  'confirmation',
  'recovery',
  'magic_link',
  'email_change',
  'reauthentication',
  'password_changed_notification',
  'email_changed_notification',
  'phone_changed_notification',
  'identity_linked_notification',
  'identity_unlinked_notification',
  'mfa_factor_enrolled_notification',
  'mfa_factor_unenrolled_notification',
] as const satisfies readonly MailKind[]

/** The notification kinds of {@link MAIL_KINDS}. */
export const NOTIFICATION_KINDS = MAIL_KINDS.filter((kind): kind is NotificationKind =>
  kind.endsWith('_notification'),
)

/**
 * The switch of a notification kind in `Settings.mailer.notifications`: the camelCase of its
 * `MAILER_NOTIFICATIONS_<KIND>_ENABLED` (`passwordChanged`, …, `mfaFactorUnenrolled`).
 */
export type NotificationSwitch =
  | 'passwordChanged'
  | 'emailChanged'
  | 'phoneChanged'
  | 'identityLinked'
  | 'identityUnlinked'
  | 'mfaFactorEnrolled'
  | 'mfaFactorUnenrolled'

/**
 * The {@link NotificationSwitch} of a notification kind.
 *
 * @example `notificationSwitch('mfa_factor_enrolled_notification')` is `'mfaFactorEnrolled'`.
 */
export function notificationSwitch(kind: NotificationKind): NotificationSwitch {
  return kind
    .replace(/_notification$/, '')
    .replace(/_([a-z])/g, (_m, ch: string) => ch.toUpperCase()) as NotificationSwitch
}

/**
 * Default `MAILER_SUBJECTS_<KIND>`: the spec's table (upstream's current defaults for the six
 * flow mails).
 */
export const DEFAULT_SUBJECTS: Readonly<Record<MailKind, string>> = Object.freeze({
  invite: "You've been invited",
  confirmation: 'Confirm your email address',
  recovery: 'Reset your password',
  magic_link: 'Your sign-in link',
  email_change: 'Confirm your new email address',
  reauthentication: '{{ .Token }} is your verification code',
  password_changed_notification: 'Your password was changed',
  email_changed_notification: 'Your email address was changed',
  phone_changed_notification: 'Your phone number was changed',
  identity_linked_notification: 'A new sign-in method was linked to your account',
  identity_unlinked_notification: 'A sign-in method was removed from your account',
  mfa_factor_enrolled_notification: 'A new verification method was added to your account',
  mfa_factor_unenrolled_notification: 'A verification method was removed from your account',
})

const human = (kind: string): string => kind.replaceAll('_', ' ')

/** `MAILER_SUBJECTS_<KIND>` for every kind. */
const subjectFields = Object.fromEntries(
  MAIL_KINDS.map((kind) => [
    kind,
    text(`MAILER_SUBJECTS_${kind.toUpperCase()}`, {
      default: DEFAULT_SUBJECTS[kind],
      help: `subject of the ${human(kind)} mail`,
      // A Go template: one that does not parse is refused at start, not at the first send.
      check: (value) => {
        try {
          parseTemplate(value)
          return undefined
        } catch (error) {
          return invalid(`is not a valid template: ${(error as Error).message}`)
        }
      },
    }),
  ]),
) as Record<MailKind, Field<string>>

/** `MAILER_TEMPLATES_<KIND>` for every kind. */
const templateFields = Object.fromEntries(
  MAIL_KINDS.map((kind) => [
    kind,
    text(`MAILER_TEMPLATES_${kind.toUpperCase()}`, {
      help: `URL of the ${human(kind)} HTML template`,
      note: 'built-in template',
    }),
  ]),
) as Record<MailKind, Field<string>>

/** `MAILER_NOTIFICATIONS_<KIND>_ENABLED` for the notification kinds. */
const notificationFields = Object.fromEntries(
  NOTIFICATION_KINDS.map((kind) => [
    notificationSwitch(kind),
    bool(`MAILER_NOTIFICATIONS_${kind.replace(/_notification$/, '').toUpperCase()}_ENABLED`, {
      help: `send the ${human(kind)} mail`,
    }),
  ]),
) as Record<NotificationSwitch, Field<boolean>>

/** `MAILER_URLPATHS_<KIND>`: a path such as `/verify`. */
function urlPath(kind: string): Field<string> {
  return text(`MAILER_URLPATHS_${kind}`, {
    default: '/verify',
    help: `path of the ${kind.toLowerCase().replace('_', ' ')} link`,
    check: (value) =>
      /^[^\s?#]+$/.test(value) ? undefined : 'must be a path, without spaces, ? or #',
  })
}

/**
 * Parses `RATE_LIMIT_EMAIL_SENT` as upstream's `Rate`: `N` (per hour, fractions allowed) or
 * `N/<Go duration>`.
 */
export function parseEmailSendRate(value: string): EmailSendRate | Invalid {
  return parseSendRate(value, 'emails')
}

/** `RATE_LIMIT_SMS_SENT`, in the format of {@link parseEmailSendRate}. */
export function parseSmsSendRate(value: string): EmailSendRate | Invalid {
  return parseSendRate(value, 'SMS messages')
}

function parseSendRate(value: string, noun: string): EmailSendRate | Invalid {
  const [count = '', period, ...rest] = value.split('/')
  const problem = invalid(`must be a number of ${noun} per hour, or N/<duration> such as 10/5m`)
  if (rest.length > 0 || !/^\d+(\.\d+)?$/.test(count.trim())) return problem
  let periodMs = 3_600_000
  if (period !== undefined) {
    try {
      periodMs = parseGoDuration(period.trim())
    } catch {
      return problem
    }
    if (!(periodMs > 0)) return problem
  }
  return { events: Number(count.trim()), periodMs }
}

/**
 * Parses `SMS_TEST_OTP`, `<phone>:<otp>,…` (upstream's map syntax): phones are stored as E.164
 * digits without `+`, codes must be digits.
 */
export function parseTestOtp(value: string): Readonly<Record<string, string>> | Invalid {
  let map: Record<string, string>
  try {
    map = parseMap(value)
  } catch {
    return invalid('must be <phone>:<otp> pairs separated by commas')
  }
  const out: Record<string, string> = {}
  for (const [phone, otp] of Object.entries(map)) {
    const digits = phone.trim().replace(/^\+/, '')
    if (!/^\d{1,15}$/.test(digits) || !/^\d{1,10}$/.test(otp.trim())) {
      return invalid('must be <phone>:<otp> pairs of digits, such as 15551234567:123456')
    }
    out[digits] = otp.trim()
  }
  return out
}

/** A provider base URL: only its scheme, host and port are used. */
function providerUrl(name: string, fallback: string, provider: string): Field<string> {
  return url(name, {
    default: fallback,
    help: `scheme, host and port of the ${provider} API (the path is kept)`,
  })
}

type SmsCredential =
  | 'twilioAccountSid'
  | 'twilioAuthToken'
  | 'twilioMessageServiceSid'
  | 'twilioVerifyAccountSid'
  | 'twilioVerifyAuthToken'
  | 'twilioVerifyMessageServiceSid'
  | 'messagebirdAccessKey'
  | 'messagebirdOriginator'
  | 'textlocalApiKey'
  | 'textlocalSender'
  | 'vonageApiKey'
  | 'vonageApiSecret'
  | 'vonageFrom'

/** Credentials the chosen `SMS_PROVIDER` needs but does not have, as field names. */
function requiredSmsCredentials(
  v: { readonly smsProvider: string } & Readonly<Record<SmsCredential, string>>,
): [string, SmsCredential][] {
  const needs: Readonly<Record<string, readonly SmsCredential[]>> = {
    twilio: ['twilioAccountSid', 'twilioAuthToken', 'twilioMessageServiceSid'],
    twilio_verify: [
      'twilioVerifyAccountSid',
      'twilioVerifyAuthToken',
      'twilioVerifyMessageServiceSid',
    ],
    messagebird: ['messagebirdAccessKey', 'messagebirdOriginator'],
    textlocal: ['textlocalApiKey', 'textlocalSender'],
    vonage: ['vonageApiKey', 'vonageApiSecret', 'vonageFrom'],
  }
  return (needs[v.smsProvider] ?? [])
    .filter((name) => v[name] === '')
    .map((name): [string, SmsCredential] => [v.smsProvider, name])
}

/**
 * Every setting the server reads, in `--help` order (the README's), with its names and default
 * written once. Names get the prefixes `AUTHSVC_` then `GOTRUE_`; a second name (`PORT`,
 * `DATABASE_URL`, `LOG_LEVEL`) is also read as written.
 */
export const settingsTable = defineSettings(
  {
    siteUrl: url('SITE_URL', {
      required: true,
      help: 'base URL of the site; its URLs may be redirect_to targets',
    }),
    apiExternalUrl: url('API_EXTERNAL_URL', {
      required: true,
      help: 'URL this server is reached at',
    }),
    dbDriver: field(
      'DB_DRIVER',
      (value) => (value === 'postgres' ? value : invalid('must be postgres')),
      { required: 'required; must be postgres', help: 'must be postgres' },
    ),
    dbUrl: text(['DB_DATABASE_URL', 'DATABASE_URL'], {
      required: true,
      secret: true,
      help: 'postgres://…, pglite://<dir> or pglite://memory',
      check: (value) =>
        /^(postgres(ql)?|pglite):\/\//.test(value)
          ? undefined
          : invalid('must start with postgres://, postgresql:// or pglite://', { echo: false }),
    }),
    jwtSecret: text('JWT_SECRET', {
      secret: true,
      help: `HS256 secret, at least ${String(MIN_JWT_SECRET_BYTES)} bytes; required unless JWT_KEYS signs`,
    }),
    uriAllowList: list('URI_ALLOW_LIST', {
      help: 'extra redirect_to globs, comma-separated',
      check: (globs) => {
        const problems = globs.flatMap((glob) => {
          try {
            compileGlob(glob)
            return []
          } catch (error) {
            return [error instanceof Error ? error.message : String(error)]
          }
        })
        return problems.length > 0 ? invalid(problems) : undefined
      },
    }),
    disableSignup: bool('DISABLE_SIGNUP', {
      help: 'users only through invites and the admin API',
    }),
    apiHost: text('API_HOST', { default: '0.0.0.0', help: 'listen address' }),
    port: integer(['API_PORT', 'PORT'], { default: '8081', help: 'listen port' }),
    apiMaxRequestDuration: secondsOrDuration('API_MAX_REQUEST_DURATION', {
      unit: 'ms',
      default: '10s',
      help: 'longest a request may take; then 504',
    }),
    requestIdHeader: text('REQUEST_ID_HEADER', { help: 'header whose value is the request id' }),
    apiOpenapiEnabled: bool('API_OPENAPI_ENABLED', {
      help: 'serve the OpenAPI document at /openapi.json',
    }),
    rateLimitHeader: text('RATE_LIMIT_HEADER', {
      help: 'header naming the client for rate limits',
    }),
    svcForwardedForEnabled: bool('SECURITY_SVC_FORWARDED_FOR_ENABLED', {
      help: 'first Svc-Forwarded-For value is the client IP',
    }),
    dbMaxPoolSize: integer('DB_MAX_POOL_SIZE', {
      default: '0',
      help: 'PostgreSQL connections',
      note: 'half of what the server allows',
    }),
    dbStartRetrySeconds: integer('DB_START_RETRY_SECONDS', {
      default: '30',
      help: 'seconds a start retries a database that is down; 0: once',
    }),
    dbNamespace: text('DB_NAMESPACE', {
      help: 'table-name prefix: <ns>_users, …',
      check: (value) =>
        value === '' || /^[a-z_][a-z0-9_]{0,30}$/.test(value)
          ? undefined
          : 'must be lower-case letters, digits and underscores',
    }),
    logLevel: field(
      ['LOG_LEVEL', 'LOG_LEVEL'],
      (value) => {
        const level = value.toLowerCase() === 'warning' ? 'warn' : value.toLowerCase()
        return (
          LOG_LEVELS.find((l) => l === level) ?? invalid(`must be one of ${LOG_LEVELS.join(', ')}`)
        )
      },
      { default: 'info', help: LOG_LEVELS.join(', ') },
    ),
    logFile: text('LOG_FILE', { help: 'append JSON logs to this file, not standard output' }),
    tracingEnabled: bool('TRACING_ENABLED', { help: 'a span per request and SQL statement' }),
    tracingExporter: oneOf('TRACING_EXPORTER', ['opentelemetry'], {
      default: 'opentelemetry',
      help: 'opentelemetry (OTLP)',
    }),
    tracingSamplingRate: decimal('TRACING_SAMPLING_RATE', {
      default: '1',
      min: 0,
      max: 1,
      help: 'fraction of new traces sampled',
    }),
    metricsEnabled: bool('METRICS_ENABLED', { help: 'HTTP, auth and database pool metrics' }),
    metricsExporter: oneOf('METRICS_EXPORTER', ['opentelemetry', 'prometheus'], {
      default: 'opentelemetry',
      help: 'opentelemetry (OTLP push) or prometheus (scrape endpoint)',
    }),
    prometheusHost: text(['OTEL_EXPORTER_PROMETHEUS_HOST', 'OTEL_EXPORTER_PROMETHEUS_HOST'], {
      default: '0.0.0.0',
      help: 'Prometheus scrape endpoint address',
    }),
    prometheusPort: port(['OTEL_EXPORTER_PROMETHEUS_PORT', 'OTEL_EXPORTER_PROMETHEUS_PORT'], {
      default: '9100',
      help: 'Prometheus scrape endpoint port (path /)',
    }),
    otlpProtocol: oneOf(
      ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'],
      ['http/protobuf', 'grpc'],
      { default: 'http/protobuf', help: 'http/protobuf or grpc' },
    ),
    otlpEndpoint: text(['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'], {
      help: 'OTLP base URL',
    }),
    otlpTracesEndpoint: text(
      ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
      { help: 'OTLP traces URL' },
    ),
    otlpMetricsEndpoint: text(
      ['OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'],
      { help: 'OTLP metrics URL' },
    ),
    otlpHeaders: field(
      ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_HEADERS'],
      parseOtlpHeaders,
      { secret: true, help: 'k=v,… sent with every export' },
    ),
    otlpTimeoutMs: integer(['OTEL_EXPORTER_OTLP_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT'], {
      default: '10000',
      min: 1,
      max: 600_000,
      help: 'export timeout, ms',
    }),
    metricExportIntervalMs: integer(
      ['OTEL_METRIC_EXPORT_INTERVAL', 'OTEL_METRIC_EXPORT_INTERVAL'],
      { default: '60000', min: 100, max: 86_400_000, help: 'OTLP metric export interval, ms' },
    ),
    serviceName: text(['OTEL_SERVICE_NAME', 'OTEL_SERVICE_NAME'], {
      default: 'gotrue',
      help: 'service.name',
    }),
    resourceAttributes: field(
      ['OTEL_RESOURCE_ATTRIBUTES', 'OTEL_RESOURCE_ATTRIBUTES'],
      parseResourceAttributes,
      { help: 'k=v,… resource attributes' },
    ),
    debug: bool(['DEBUG', 'DEBUG'], { help: 'OpenTelemetry SDK diagnostics in the log' }),
    jwtExp: integer('JWT_EXP', { default: '3600', min: 1, help: 'access-token lifetime, seconds' }),
    jwtAud: text('JWT_AUD', { help: 'default audience' }),
    jwtIssuer: text('JWT_ISSUER', { help: 'iss claim, omitted when empty' }),
    jwtDefaultGroupName: text('JWT_DEFAULT_GROUP_NAME', { help: 'role of new users' }),
    jwtAdminRoles: list('JWT_ADMIN_ROLES', {
      default: 'service_role,supabase_admin',
      help: 'roles allowed on the admin API',
    }),
    jwtAdminGroupName: text('JWT_ADMIN_GROUP_NAME', {
      default: 'admin',
      help: 'accepted for compatibility',
    }),
    jwtKeys: field('JWT_KEYS', parseKeys, {
      secret: true,
      help: 'JSON array of private JWKs; the "sign" one signs',
    }),
    jwtKeyId: text('JWT_KEY_ID', { help: 'kid of HS256 tokens' }),
    passwordMinLength: integer('PASSWORD_MIN_LENGTH', {
      default: '6',
      help: 'minimum password length in bytes, 6 or more',
    }),
    passwordRequiredCharacters: field(
      'PASSWORD_REQUIRED_CHARACTERS',
      (value) => splitRequiredCharacters(value),
      { help: 'character sets separated by : (\\: is a colon)' },
    ),
    passwordHashConcurrency: integer('PASSWORD_HASH_CONCURRENCY', {
      default: '0',
      help: 'bcrypt hashes and checks at once',
      note: 'one per CPU core',
    }),
    passwordHashQueueSize: integer('PASSWORD_HASH_QUEUE_SIZE', {
      default: '100',
      help: 'bcrypt hashes and checks waiting; beyond: 429',
    }),
    refreshTokenRotationEnabled: bool('SECURITY_REFRESH_TOKEN_ROTATION_ENABLED', {
      default: 'true',
      help: 'refresh-token reuse detection',
    }),
    refreshTokenReuseInterval: secondsOrDuration('SECURITY_REFRESH_TOKEN_REUSE_INTERVAL', {
      unit: 's',
      default: '0',
      help: 'seconds a revoked refresh token may be used again',
    }),
    updatePasswordRequireReauthentication: bool(
      'SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION',
      { help: 'password changes need a recent sign-in' },
    ),
    mfaTotpEnrollEnabled: bool('MFA_TOTP_ENROLL_ENABLED', {
      default: 'true',
      help: 'TOTP factors can be enrolled',
    }),
    mfaTotpVerifyEnabled: bool('MFA_TOTP_VERIFY_ENABLED', {
      default: 'true',
      help: 'TOTP factors can be challenged and verified',
    }),
    mfaPhoneEnrollEnabled: bool('MFA_PHONE_ENROLL_ENABLED', {
      help: 'phone factors can be enrolled',
    }),
    mfaPhoneVerifyEnabled: bool('MFA_PHONE_VERIFY_ENABLED', {
      help: 'phone factors can be challenged and verified',
    }),
    mfaMaxEnrolledFactors: integer('MFA_MAX_ENROLLED_FACTORS', {
      default: '10',
      help: 'factors a user may have',
    }),
    mfaMaxVerifiedFactors: integer('MFA_MAX_VERIFIED_FACTORS', {
      default: '10',
      help: 'verified factors a user may have',
    }),
    mfaPhoneMaxUnverifiedFactors: integer('MFA_PHONE_MAX_UNVERIFIED_FACTORS', {
      default: '2',
      min: 1,
      help: 'unverified phone factors a user may have at once',
    }),
    mfaChallengeExpiryDuration: decimal('MFA_CHALLENGE_EXPIRY_DURATION', {
      default: '300',
      help: 'seconds a challenge can be verified',
    }),
    mfaFactorExpiryDuration: duration('MFA_FACTOR_EXPIRY_DURATION', {
      default: '300s',
      help: 'age at which unverified, unchallenged factors are deleted',
    }),
    mfaRateLimitChallengeAndVerify: decimal('MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY', {
      default: '15',
      help: 'challenge and verify requests per minute and client (burst 30)',
    }),
    mfaPhoneOtpLength: integer('MFA_PHONE_OTP_LENGTH', {
      default: '6',
      help: 'digits of phone factor codes, 6 to 10',
    }),
    mfaPhoneTemplate: text('MFA_PHONE_TEMPLATE', {
      default: 'Your code is {{ .Code }}',
      help: 'SMS text of phone factor codes; {{ .Code }} is the code',
    }),
    mfaPhoneMaxFrequency: duration('MFA_PHONE_MAX_FREQUENCY', {
      default: '1m',
      help: 'least time between two SMS challenges of a factor',
    }),
    otpMaxAttempts: integer('SECURITY_OTP_MAX_ATTEMPTS', {
      default: '5',
      min: 1,
      help: 'wrong answers a one-time code, nonce or MFA challenge takes before it is invalidated',
    }),
    manualLinkingEnabled: bool('SECURITY_MANUAL_LINKING_ENABLED', {
      help: 'users may link and unlink identities',
    }),
    manualLinkingRequireSiteReferer: bool('SECURITY_MANUAL_LINKING_REQUIRE_SITE_REFERER', {
      default: 'true',
      help: "an identity link must be opened from the site's pages (Referer); off for native apps",
    }),
    emailEnabled: bool('EXTERNAL_EMAIL_ENABLED', {
      default: 'true',
      help: 'email sign-up and sign-in',
    }),
    phoneEnabled: bool('EXTERNAL_PHONE_ENABLED', {
      help: 'phone sign-up and sign-in',
    }),
    anonymousUsersEnabled: bool('EXTERNAL_ANONYMOUS_USERS_ENABLED', {
      help: 'anonymous sign-ups',
    }),
    providers: group(providerFields),
    appleTeamId: text('EXTERNAL_APPLE_TEAM_ID', {
      help: 'Apple team id, to sign the client secret with a PEM EXTERNAL_APPLE_SECRET',
    }),
    appleKeyId: text('EXTERNAL_APPLE_KEY_ID', {
      help: 'Apple key id, to sign the client secret with a PEM EXTERNAL_APPLE_SECRET',
    }),
    mailerAutoconfirm: bool('MAILER_AUTOCONFIRM', {
      help: 'email sign-ups confirmed at once',
    }),
    mailerOtpExp: integer('MAILER_OTP_EXP', {
      default: '3600',
      min: 1,
      help: 'validity of email links and codes, seconds',
    }),
    mailerOtpLength: integer('MAILER_OTP_LENGTH', {
      default: '6',
      help: 'digits of email codes, 6 to 10',
    }),
    mailerSecureEmailChangeEnabled: bool('MAILER_SECURE_EMAIL_CHANGE_ENABLED', {
      default: 'true',
      help: 'email changes confirmed from both addresses',
    }),
    mailerUrlPaths: group({
      invite: urlPath('INVITE'),
      confirmation: urlPath('CONFIRMATION'),
      recovery: urlPath('RECOVERY'),
      emailChange: urlPath('EMAIL_CHANGE'),
    }),
    mailerSubjects: group(subjectFields),
    mailerTemplates: group(templateFields),
    notifications: group(notificationFields),
    smtpHost: text('SMTP_HOST', { help: 'SMTP server; empty: no mail is sent' }),
    smtpPort: port('SMTP_PORT', { default: '587', help: 'SMTP port; 465 is TLS' }),
    smtpUser: text('SMTP_USER', { help: 'SMTP login' }),
    smtpPass: text('SMTP_PASS', { secret: true, help: 'SMTP password' }),
    smtpAdminEmail: text('SMTP_ADMIN_EMAIL', {
      help: 'From address; required with SMTP_HOST',
      check: (value) =>
        value === '' || /^[^\s@<>]+@[^\s@<>]+$/.test(value)
          ? undefined
          : 'must be an email address (name@domain)',
    }),
    smtpSenderName: text('SMTP_SENDER_NAME', { help: 'From name' }),
    smtpMaxFrequency: secondsOrDuration('SMTP_MAX_FREQUENCY', {
      unit: 'ms',
      default: '900',
      help: 'shortest interval between two mails of a kind to a user',
    }),
    mailerQueuePollInterval: duration('MAILER_QUEUE_POLL_INTERVAL', {
      default: '5s',
      positive: true,
      help: "how often the mail queue looks for retries and other instances' jobs",
    }),
    rateLimitEmailSent: field('RATE_LIMIT_EMAIL_SENT', parseEmailSendRate, {
      default: '30',
      help: 'emails sent per hour (N) or per duration (N/10m)',
    }),
    rateLimitTokenRefresh: decimal('RATE_LIMIT_TOKEN_REFRESH', {
      default: '150',
      min: 0,
      help: 'POST /token requests per client and 5 min (burst 30)',
    }),
    rateLimitVerify: decimal('RATE_LIMIT_VERIFY', {
      default: '30',
      min: 0,
      help: '/verify requests per client and 5 min (burst 30)',
    }),
    rateLimitOtp: decimal('RATE_LIMIT_OTP', {
      default: '30',
      min: 0,
      help: '/otp, /recover, /resend, /signup, PUT /user per client and 5 min',
    }),
    rateLimitSso: decimal('RATE_LIMIT_SSO', {
      default: '30',
      min: 0,
      help: 'SSO requests per client and 5 min (burst 30)',
    }),
    rateLimitBackend: oneOf('RATE_LIMIT_BACKEND', ['memory', 'ratelimit'], {
      default: 'memory',
      help: 'memory (per instance) or ratelimit (shared service)',
    }),
    rateLimitServiceAddress: text('RATE_LIMIT_SERVICE_ADDRESS', {
      default: '127.0.0.1:8081',
      help: 'gRPC host:port of gatehouse-ratelimit',
      check: (value) =>
        /^\S+:\d{1,5}$/.test(value) ? undefined : 'must be host:port, such as 127.0.0.1:8081',
    }),
    rateLimitDomain: text('RATE_LIMIT_DOMAIN', {
      default: 'gatehouse-auth',
      help: 'rate limit service domain',
      check: (value) => (value === '' ? 'must not be empty' : undefined),
    }),
    rateLimitServiceTimeout: duration('RATE_LIMIT_SERVICE_TIMEOUT', {
      default: '250ms',
      positive: true,
      help: 'deadline of one rate limit decision',
    }),
    rateLimitServiceCoalesce: bool('RATE_LIMIT_SERVICE_COALESCE', {
      default: 'true',
      help: 'one gRPC call per event-loop turn when the service allows it',
    }),
    rateLimitServiceAlgorithm: oneOf('RATE_LIMIT_SERVICE_ALGORITHM', SERVICE_ALGORITHMS, {
      default: 'token_bucket',
      help: 'token_bucket (service on Redis or memory) or fixed_window (memcache, envoy)',
    }),
    rateLimitFailClosed: bool('RATE_LIMIT_FAIL_CLOSED', {
      help: 'service unreachable: 503 instead of allowing',
    }),
    rateLimitPasswordFailures: integer('RATE_LIMIT_PASSWORD_FAILURES', {
      default: '5',
      min: 0,
      help: 'failed passwords per account before back-off; 0: off',
    }),
    rateLimitTrustedProxyHops: integer('RATE_LIMIT_TRUSTED_PROXY_HOPS', {
      default: '1',
      min: 1,
      help: 'proxies appending to RATE_LIMIT_HEADER; its key is this many values from the right',
    }),
    dbCleanupInterval: duration('DB_CLEANUP_INTERVAL', {
      default: '10m',
      help: 'how often expired flow states and MFA challenges are deleted; 0: never',
    }),
    flowStateExpiryDuration: secondsOrDuration('EXTERNAL_FLOW_STATE_EXPIRY_DURATION', {
      unit: 'ms',
      default: '300',
      help: 'lifetime of a PKCE flow state (300s at least)',
    }),
    smsAutoconfirm: bool('SMS_AUTOCONFIRM', {
      help: 'phone sign-ups confirmed at once',
    }),
    smsProvider: text('SMS_PROVIDER', {
      help: `who sends SMS: ${SMS_PROVIDERS.join(', ')}`,
      check: (value) =>
        value === '' || (SMS_PROVIDERS as readonly string[]).includes(value)
          ? undefined
          : `must be one of ${SMS_PROVIDERS.join(', ')}`,
    }),
    smsOtpExp: integer('SMS_OTP_EXP', {
      default: '60',
      min: 1,
      help: 'validity of SMS codes, seconds',
    }),
    smsOtpLength: integer('SMS_OTP_LENGTH', { default: '6', help: 'digits of SMS codes, 6 to 10' }),
    smsMaxFrequency: secondsOrDuration('SMS_MAX_FREQUENCY', {
      unit: 'ms',
      default: '60',
      help: 'shortest interval between two SMS codes to a user',
    }),
    smsTemplate: text('SMS_TEMPLATE', {
      default: 'Your code is {{ .Code }}',
      help: 'the SMS text; {{ .Code }} is the code',
    }),
    smsTestOtpValidUntil: field(
      'SMS_TEST_OTP_VALID_UNTIL',
      (value): number | null | Invalid => {
        if (value === '') return null
        const ms = Date.parse(value)
        return /^\d{4}-\d\d-\d\dT/.test(value) && Number.isFinite(ms)
          ? ms
          : invalid('must be an RFC 3339 time such as 2030-01-01T00:00:00Z')
      },
      { help: 'SMS_TEST_OTP applies until this time', note: 'always' },
    ),
    smsTestOtp: field('SMS_TEST_OTP', parseTestOtp, {
      help: '<phone>:<otp>,…: these phones get no SMS and this code',
    }),
    twilioAccountSid: text('SMS_TWILIO_ACCOUNT_SID', { help: 'Twilio account SID' }),
    twilioAuthToken: text('SMS_TWILIO_AUTH_TOKEN', { secret: true, help: 'Twilio auth token' }),
    twilioMessageServiceSid: text('SMS_TWILIO_MESSAGE_SERVICE_SID', {
      help: 'Twilio sender: messaging service SID or number',
    }),
    twilioContentSid: text('SMS_TWILIO_CONTENT_SID', {
      help: 'Twilio WhatsApp content template (variable 1 = code)',
    }),
    twilioApiUrl: providerUrl('SMS_TWILIO_API_URL', 'https://api.twilio.com', 'Twilio'),
    twilioVerifyAccountSid: text('SMS_TWILIO_VERIFY_ACCOUNT_SID', {
      help: 'Twilio Verify account SID',
    }),
    twilioVerifyAuthToken: text('SMS_TWILIO_VERIFY_AUTH_TOKEN', {
      secret: true,
      help: 'Twilio Verify auth token',
    }),
    twilioVerifyMessageServiceSid: text('SMS_TWILIO_VERIFY_MESSAGE_SERVICE_SID', {
      help: 'Twilio Verify service SID (VA…)',
    }),
    twilioVerifyApiUrl: providerUrl(
      'SMS_TWILIO_VERIFY_API_URL',
      'https://verify.twilio.com',
      'Twilio Verify',
    ),
    messagebirdAccessKey: text('SMS_MESSAGEBIRD_ACCESS_KEY', {
      secret: true,
      help: 'MessageBird access key',
    }),
    messagebirdOriginator: text('SMS_MESSAGEBIRD_ORIGINATOR', { help: 'MessageBird sender' }),
    messagebirdApiUrl: providerUrl(
      'SMS_MESSAGEBIRD_API_URL',
      'https://rest.messagebird.com',
      'MessageBird',
    ),
    textlocalApiKey: text('SMS_TEXTLOCAL_API_KEY', { secret: true, help: 'Textlocal API key' }),
    textlocalSender: text('SMS_TEXTLOCAL_SENDER', { help: 'Textlocal sender' }),
    textlocalApiUrl: providerUrl('SMS_TEXTLOCAL_API_URL', 'https://api.textlocal.in', 'Textlocal'),
    vonageApiKey: text('SMS_VONAGE_API_KEY', { help: 'Vonage API key' }),
    vonageApiSecret: text('SMS_VONAGE_API_SECRET', { secret: true, help: 'Vonage API secret' }),
    vonageFrom: text('SMS_VONAGE_FROM', { help: 'Vonage sender' }),
    vonageApiUrl: providerUrl('SMS_VONAGE_API_URL', 'https://rest.nexmo.com', 'Vonage'),
    rateLimitSmsSent: field('RATE_LIMIT_SMS_SENT', parseSmsSendRate, {
      default: '30',
      help: 'SMS messages sent per hour (N) or per duration (N/10m)',
    }),
    rateLimitAnonymousUsers: decimal('RATE_LIMIT_ANONYMOUS_USERS', {
      default: '30',
      min: 0,
      help: 'anonymous sign-ins per client and hour (burst as many)',
    }),
    captchaEnabled: bool('SECURITY_CAPTCHA_ENABLED', {
      help: 'captcha on sign-up, sign-in, /otp, /magiclink, /recover, /resend',
    }),
    captchaProvider: oneOf('SECURITY_CAPTCHA_PROVIDER', CAPTCHA_PROVIDERS, {
      default: 'hcaptcha',
      help: CAPTCHA_PROVIDERS.join(' or '),
    }),
    captchaSecret: text('SECURITY_CAPTCHA_SECRET', {
      secret: true,
      help: 'captcha secret key; required when enabled',
    }),
    captchaTimeout: secondsOrDuration('SECURITY_CAPTCHA_TIMEOUT', {
      unit: 'ms',
      default: '10s',
      help: 'longest a siteverify call may take',
    }),
    captchaVerifyUrl: url('SECURITY_CAPTCHA_VERIFY_URL', {
      help: 'whole siteverify URL (tests, proxies)',
      note: "the provider's",
    }),
  },
  // AUTHSVC_ wins over GOTRUE_ (and both over an unprefixed name), as it always has.
  { prefixes: ['AUTHSVC_', 'GOTRUE_'], conflicts: 'first' },
)

type SettingsReadOf = ReturnType<typeof settingsTable.read>

/**
 * Checks every enabled provider's client (upstream `OAuthProviderConfiguration.ValidateOAuth`):
 * client id, secret and redirect URI set; keycloak's realm URL set; Apple's PEM key with its
 * team and key ids.
 */
function checkProviders(
  read: SettingsReadOf,
  providers: SettingsReadOf['values']['providers'],
): void {
  for (const p of EXTERNAL_PROVIDERS) {
    const config = providers[p]
    if (!config.enabled) continue
    const fields = settingsTable.fields.providers.fields[p].fields
    const needed = `required when EXTERNAL_${p.toUpperCase()}_ENABLED is true`
    if (config.clientId === '') read.report(fields.clientId, needed)
    if (config.secret === '') read.report(fields.secret, needed)
    if (config.redirectUri === '') read.report(fields.redirectUri, needed)
    if (p === 'keycloak' && config.url === '') {
      read.report(fields.url, `${needed} (the realm URL)`)
    }
  }
  const apple = providers.apple
  const { appleTeamId, appleKeyId } = settingsTable.fields
  if (apple.enabled && apple.secret.includes('-----BEGIN')) {
    const values = read.values
    if (values.appleTeamId === '')
      read.report(appleTeamId, 'required with a PEM EXTERNAL_APPLE_SECRET')
    if (values.appleKeyId === '')
      read.report(appleKeyId, 'required with a PEM EXTERNAL_APPLE_SECRET')
  }
}

/**
 * Builds the settings from environment variables (pure: reads only `env`).
 *
 * Each setting `NAME` is read as `AUTHSVC_NAME`, else `GOTRUE_NAME` (upstream's prefix); the
 * spec's "(no prefix)" variables (`PORT`, `DATABASE_URL`, `LOG_LEVEL`) are also read without a
 * prefix, after the prefixed forms `API_PORT`, `DB_DATABASE_URL` and `LOG_LEVEL`.
 *
 * @param env Variables, typically `{ ...dotEnvFile, ...process.env }`.
 * @returns Deep-frozen settings.
 * @throws {@link ConfigError} Listing every problem (missing required values, bad numbers, …).
 */
export function loadSettings(env: Env): Settings {
  const read = settingsTable.read(env)
  const v = read.values
  const { jwtSecret } = settingsTable.fields
  if (v.jwtSecret === '' && v.jwtKeys.length === 0) {
    read.report(jwtSecret, 'required unless AUTHSVC_JWT_KEYS holds a signing key')
  } else if (v.jwtSecret !== '' && Buffer.byteLength(v.jwtSecret) < MIN_JWT_SECRET_BYTES) {
    // HS256 with a short secret can be brute-forced offline from any token the server issued.
    read.report(jwtSecret, `must be at least ${String(MIN_JWT_SECRET_BYTES)} bytes long`)
  }
  checkProviders(read, v.providers)
  if (v.captchaEnabled && v.captchaSecret.trim() === '') {
    read.report(
      settingsTable.fields.captchaSecret,
      'required when AUTHSVC_SECURITY_CAPTCHA_ENABLED is on',
    )
  }
  for (const [provider, name] of requiredSmsCredentials(v)) {
    read.report(settingsTable.fields[name], `required when AUTHSVC_SMS_PROVIDER is ${provider}`)
  }
  if (v.smtpHost !== '' && v.smtpAdminEmail === '') {
    read.report(settingsTable.fields.smtpAdminEmail, 'required when AUTHSVC_SMTP_HOST is set')
  }
  return read.finish<Settings>({
    siteUrl: v.siteUrl,
    uriAllowList: v.uriAllowList,
    disableSignup: v.disableSignup,
    apiExternalUrl: v.apiExternalUrl,
    apiHost: v.apiHost,
    port: v.port,
    apiMaxRequestDuration: v.apiMaxRequestDuration,
    requestIdHeader: v.requestIdHeader,
    apiOpenapiEnabled: v.apiOpenapiEnabled,
    rateLimitHeader: v.rateLimitHeader,
    svcForwardedForEnabled: v.svcForwardedForEnabled,
    db: {
      driver: 'postgres',
      url: v.dbUrl,
      maxPoolSize: v.dbMaxPoolSize,
      namespace: v.dbNamespace,
      startRetrySeconds: v.dbStartRetrySeconds,
    },
    log: { level: v.logLevel, file: v.logFile },
    telemetry: {
      tracingEnabled: v.tracingEnabled,
      tracingExporter: v.tracingExporter,
      tracingSamplingRate: v.tracingSamplingRate,
      metricsEnabled: v.metricsEnabled,
      metricsExporter: v.metricsExporter,
      prometheusHost: v.prometheusHost,
      prometheusPort: v.prometheusPort,
      otlpProtocol: v.otlpProtocol,
      otlpEndpoint: v.otlpEndpoint,
      otlpTracesEndpoint: v.otlpTracesEndpoint,
      otlpMetricsEndpoint: v.otlpMetricsEndpoint,
      otlpHeaders: { ...v.otlpHeaders },
      otlpTimeoutMs: v.otlpTimeoutMs,
      metricExportIntervalMs: v.metricExportIntervalMs,
      serviceName: v.serviceName,
      resourceAttributes: { ...v.resourceAttributes },
      debug: v.debug,
    },
    jwt: {
      secret: v.jwtSecret,
      exp: v.jwtExp,
      aud: v.jwtAud,
      issuer: v.jwtIssuer,
      adminGroupName: v.jwtAdminGroupName,
      defaultGroupName: v.jwtDefaultGroupName,
      adminRoles: v.jwtAdminRoles,
      keys: v.jwtKeys,
      keyId: v.jwtKeyId,
    },
    password: {
      minLength: Math.max(6, v.passwordMinLength),
      requiredCharacters: v.passwordRequiredCharacters,
      hashConcurrency: v.passwordHashConcurrency,
      hashQueueSize: v.passwordHashQueueSize,
    },
    security: {
      refreshTokenRotationEnabled: v.refreshTokenRotationEnabled,
      refreshTokenReuseInterval: v.refreshTokenReuseInterval,
      updatePasswordRequireReauthentication: v.updatePasswordRequireReauthentication,
      manualLinkingEnabled: v.manualLinkingEnabled,
      manualLinkingRequireSiteReferer: v.manualLinkingRequireSiteReferer,
      otpMaxAttempts: v.otpMaxAttempts,
      captcha: {
        enabled: v.captchaEnabled,
        provider: v.captchaProvider,
        secret: v.captchaSecret.trim(),
        timeout: v.captchaTimeout,
        verifyUrl: v.captchaVerifyUrl || CAPTCHA_VERIFY_URLS[v.captchaProvider],
      },
    },
    mfa: {
      totpEnrollEnabled: v.mfaTotpEnrollEnabled,
      totpVerifyEnabled: v.mfaTotpVerifyEnabled,
      phoneEnrollEnabled: v.mfaPhoneEnrollEnabled,
      phoneVerifyEnabled: v.mfaPhoneVerifyEnabled,
      maxEnrolledFactors: v.mfaMaxEnrolledFactors,
      maxVerifiedFactors: v.mfaMaxVerifiedFactors,
      phoneMaxUnverifiedFactors: v.mfaPhoneMaxUnverifiedFactors,
      challengeExpiryDuration: v.mfaChallengeExpiryDuration,
      factorExpiryDuration: v.mfaFactorExpiryDuration,
      rateLimitChallengeAndVerify: v.mfaRateLimitChallengeAndVerify,
      // Upstream falls back to 6 digits outside 6..10, and to 1m for a zero frequency.
      phoneOtpLength: v.mfaPhoneOtpLength < 6 || v.mfaPhoneOtpLength > 10 ? 6 : v.mfaPhoneOtpLength,
      phoneTemplate: v.mfaPhoneTemplate === '' ? 'Your code is {{ .Code }}' : v.mfaPhoneTemplate,
      phoneMaxFrequency: v.mfaPhoneMaxFrequency === 0 ? 60_000 : v.mfaPhoneMaxFrequency,
    },
    external: {
      emailEnabled: v.emailEnabled,
      phoneEnabled: v.phoneEnabled,
      anonymousUsersEnabled: v.anonymousUsersEnabled,
      providers: Object.fromEntries(
        EXTERNAL_PROVIDERS.map((p) => [p, v.providers[p].enabled]),
      ) as Record<ExternalProvider, boolean>,
      oauth: { ...v.providers },
      apple: { teamId: v.appleTeamId, keyId: v.appleKeyId },
    },
    mailer: {
      autoconfirm: v.mailerAutoconfirm,
      otpExp: v.mailerOtpExp,
      otpLength: Math.min(10, Math.max(6, v.mailerOtpLength)),
      secureEmailChangeEnabled: v.mailerSecureEmailChangeEnabled,
      urlPaths: { ...v.mailerUrlPaths },
      subjects: { ...v.mailerSubjects },
      templates: { ...v.mailerTemplates },
      maxFrequency: v.smtpMaxFrequency,
      notifications: { ...v.notifications },
      queuePollInterval: v.mailerQueuePollInterval,
    },
    smtp: {
      host: v.smtpHost,
      port: v.smtpPort,
      user: v.smtpUser,
      pass: v.smtpPass,
      adminEmail: v.smtpAdminEmail,
      senderName: v.smtpSenderName,
    },
    rateLimit: {
      emailSent: v.rateLimitEmailSent,
      smsSent: v.rateLimitSmsSent,
      tokenRefresh: v.rateLimitTokenRefresh,
      verify: v.rateLimitVerify,
      otp: v.rateLimitOtp,
      sso: v.rateLimitSso,
      anonymousUsers: v.rateLimitAnonymousUsers,
      backend: v.rateLimitBackend,
      serviceAddress: v.rateLimitServiceAddress,
      domain: v.rateLimitDomain,
      serviceTimeout: v.rateLimitServiceTimeout,
      serviceCoalesce: v.rateLimitServiceCoalesce,
      serviceAlgorithm: v.rateLimitServiceAlgorithm,
      failClosed: v.rateLimitFailClosed,
      passwordFailures: v.rateLimitPasswordFailures,
      trustedProxyHops: v.rateLimitTrustedProxyHops,
    },
    flowStateExpiryDuration: Math.max(300_000, v.flowStateExpiryDuration),
    dbCleanupInterval: v.dbCleanupInterval,
    sms: {
      autoconfirm: v.smsAutoconfirm,
      provider: v.smsProvider as SmsProviderName | '',
      otpExp: v.smsOtpExp,
      otpLength: Math.min(10, Math.max(6, v.smsOtpLength)),
      maxFrequency: v.smsMaxFrequency,
      template: v.smsTemplate,
      testOtp: v.smsTestOtp,
      testOtpValidUntil: v.smsTestOtpValidUntil,
      twilio: {
        accountSid: v.twilioAccountSid,
        authToken: v.twilioAuthToken,
        messageServiceSid: v.twilioMessageServiceSid,
        contentSid: v.twilioContentSid,
        apiUrl: v.twilioApiUrl,
      },
      twilioVerify: {
        accountSid: v.twilioVerifyAccountSid,
        authToken: v.twilioVerifyAuthToken,
        messageServiceSid: v.twilioVerifyMessageServiceSid,
        apiUrl: v.twilioVerifyApiUrl,
      },
      messagebird: {
        accessKey: v.messagebirdAccessKey,
        originator: v.messagebirdOriginator,
        apiUrl: v.messagebirdApiUrl,
      },
      textlocal: {
        apiKey: v.textlocalApiKey,
        sender: v.textlocalSender,
        apiUrl: v.textlocalApiUrl,
      },
      vonage: {
        apiKey: v.vonageApiKey,
        apiSecret: v.vonageApiSecret,
        from: v.vonageFrom,
        apiUrl: v.vonageApiUrl,
      },
    },
  })
}
