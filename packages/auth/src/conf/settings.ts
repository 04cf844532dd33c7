/**
 * The auth server's settings: one field table, {@link settingsTable}, gives {@link loadSettings},
 * its problems, `gatehouse-auth --help` and the {@link Settings} type. Each setting `NAME` is read
 * as `AUTHSVC_NAME`, else upstream's `GOTRUE_NAME`; a few also without a prefix.
 *
 * The table has the settings' shape: one group per section (`db`, `jwt`, `mailer`, `sms.twilio`,
 * `external.github`, …), each entry with its TSDoc, which the derived type carries. A section's
 * rules across fields are one `check…` function beside its group (upstream's per-section
 * `Validate()`); clamps and fallbacks are the field's parser or a computed default.
 *
 * @module
 */
import { createPrivateKey, type KeyObject } from 'node:crypto'
import {
  Invalid,
  bool,
  decimal,
  defineSettings,
  duration,
  family,
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
  type Fields,
  type Group,
  type SettingsOf,
  type SettingsRead,
  type Values,
} from '@gatehouse/settings'
import { parseTemplate } from '../mailer/go-template.js'
import { DEFAULT_SUBJECTS } from '../mailer/default-templates.js'
import {
  MAIL_KINDS,
  NOTIFICATION_KINDS,
  notificationSwitch,
  type MailKind,
  type NotificationSwitch,
} from '../mailer/mailer.js'
import { CAPTCHA_VERIFY_URLS, CAPTCHA_PROVIDERS } from '../security/captcha-providers.js'
import { SERVICE_ALGORITHMS } from '../limiter/algorithms.js'
import { EXTERNAL_PROVIDERS, type ExternalProvider } from '../provider/names.js'
import { SMS_PROVIDERS, type SmsProviderName } from '../sms/sms-provider.js'
import { compileGlob } from '../url-glob.js'
import { canonicalLocale } from '../locale.js'
import { HOOK_POINTS, parseHookSecrets, parseHookUri, type HookPoint } from '../hooks/config.js'

/** The log levels of `LOG_LEVEL` (upstream's logrus names). */
export type LogLevel = 'panic' | 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

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

/** `RATE_LIMIT_EMAIL_SENT`: `events` mails per `periodMs` milliseconds; `events` 0 blocks all. */
export interface EmailSendRate {
  readonly events: number
  readonly periodMs: number
}

/** What a section's check reports its problems through: the table read's `report`. */
type Report = Pick<SettingsRead<unknown>, 'report'>

/**
 * `base` with its parsed value passed through `adjust`: upstream's clamps and fallbacks, which
 * change a value instead of refusing it.
 */
function adjusted<T>(base: Field<T>, adjust: (value: T) => T): Field<T> {
  return Object.freeze({
    ...base,
    parse: (text: string): T | Invalid => {
      const value = base.parse(text)
      return value instanceof Invalid ? value : adjust(value)
    },
  })
}

/** A field read in seconds (as upstream's integer settings), its value in milliseconds. */
function secondsInMs(base: Field<number>): Field<number> {
  return adjusted(base, (seconds) => seconds * 1000)
}

/** Clamps an integer into `min..max` (upstream's clamped lengths). */
const clamp =
  (min: number, max: number) =>
  (value: number): number =>
    Math.min(max, Math.max(min, value))

/** Reports `message` for each of `keys` whose value in a group is empty. */
function requireSet<F extends Fields>(
  read: Report,
  section: Group<F>,
  values: Values<F>,
  keys: readonly (keyof F & string)[],
  message: string,
): void {
  for (const key of keys) {
    const entry = section.fields[key]
    if (values[key] === '' && entry?.kind === 'field') read.report(entry, message)
  }
}

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

// ---------------------------------------------------------------------------------------------
// Sections, in table order.

/** `DB_*`: the database (upstream `conf.DBConfiguration`). */
const db = group({
  /** `DB_DRIVER`: must be `postgres`. */
  driver: field(
    'DB_DRIVER',
    (value) => (value === 'postgres' ? value : invalid('must be postgres')),
    { required: 'required; must be postgres', help: 'Must be `postgres`.' },
  ),
  /**
   * `DATABASE_URL` (no prefix) or `DB_DATABASE_URL`: `postgres://…`, `pglite://<dir>` or
   * `pglite://memory`.
   */
  url: text(['DB_DATABASE_URL', 'DATABASE_URL'], {
    required: true,
    secret: true,
    help: 'The database: `postgres://…`, `pglite://<dir>` (embedded, created if missing) or `pglite://memory`.',
    check: (value) =>
      /^(postgres(ql)?|pglite):\/\//.test(value)
        ? undefined
        : invalid('must start with postgres://, postgresql:// or pglite://', { echo: false }),
  }),
  /**
   * `DB_MAX_POOL_SIZE`: maximum open connections; 0 means none set here, so the pool takes half
   * of what the server lets this login open (`derivedPoolSize` in `storage/pg.ts`). @default 0
   */
  maxPoolSize: integer('DB_MAX_POOL_SIZE', {
    default: '0',
    help: "Maximum PostgreSQL connections. With `0`, half of what the server lets this login open: `max_connections` less reserved slots, or the role's or database's `CONNECTION LIMIT` if lower, at least 1. Requests beyond the pool wait for a connection. For throughput, a few connections per PostgreSQL core beat one per client (each request holds its connection for one or two round trips; more backends committing at once only wait on each other): on a 2-core machine 16 gave 15% more refreshes/s than 50 (`bench/auth/README.md`).",
    note: 'half of what the server allows',
  }),
  /**
   * `DB_START_RETRY_SECONDS`: how long a start keeps trying, with back-off, to reach a
   * database that refuses connections, times out or is starting up, in milliseconds (set in
   * seconds); 0 tries once. @default 30000
   */
  startRetryMs: secondsInMs(
    integer('DB_START_RETRY_SECONDS', {
      default: '30',
      help: 'Seconds a start keeps trying to reach a PostgreSQL that refuses connections, does not answer or is starting up; `0`: once. It retries with back-off (0.25 s doubling up to 5 s), then the server exits with one line naming `DATABASE_URL` and the cause. An unknown host, database or role, or a refused password, is reported at once.',
    }),
  ),
  /** `DB_NAMESPACE`: table-name prefix (`<ns>_users`); empty for none. @default '' */
  namespace: text('DB_NAMESPACE', {
    help: "Table-name prefix (`<ns>_users`, …); the schema is the connection's `search_path`.",
    check: (value) =>
      value === '' || /^[a-z_][a-z0-9_]{0,30}$/.test(value)
        ? undefined
        : 'must be lower-case letters, digits and underscores',
  }),
  /**
   * `DB_CLEANUP_INTERVAL`: milliseconds between two runs of each instance's clean-up of expired
   * flow states, MFA challenges and sessions ended by `SESSIONS_*` (`services/cleanup.ts`); 0
   * turns it off. @default 600000
   */
  cleanupIntervalMs: duration('DB_CLEANUP_INTERVAL', {
    default: '10m',
    help: 'How often each instance deletes expired PKCE flow states and MFA challenges, and sessions ended by `SESSIONS_TIMEBOX` or `SESSIONS_INACTIVITY_TIMEOUT`; `0` turns it off. Flow states go after `MAILER_OTP_EXP` plus `EXTERNAL_FLOW_STATE_EXPIRY_DURATION`, challenges after `MFA_CHALLENGE_EXPIRY_DURATION`, sessions 24 h after they ended (as upstream), at most 10 000 rows of each per run. Beyond upstream for flow states and challenges.',
  }),
})

/**
 * `OAUTH_SERVER_*`: the server as an OAuth 2.1 authorization server and OpenID provider for the
 * app's own users (upstream `conf.OAuthServerConfiguration`).
 */
const oauthServer = group({
  /** `OAUTH_SERVER_ENABLED`: serve `/oauth/*` and `/admin/oauth/*`. @default false */
  enabled: bool('OAUTH_SERVER_ENABLED', {
    help: 'Be an OAuth 2.1 authorization server for the users: `/oauth/*`, `/admin/oauth/clients`, `/user/oauth/grants`; off: those answer `404 feature_disabled` "OAuth server is disabled".',
  }),
  /**
   * `OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION`: anyone may register a client at `POST
   * /oauth/clients/register` (RFC 7591). @default false
   */
  allowDynamicRegistration: bool('OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION', {
    help: 'Anyone may register a client at `POST /oauth/clients/register` (RFC 7591), limited by `RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER`; off: `403 oauth_dynamic_client_registration_disabled`.',
  }),
  /**
   * `OAUTH_SERVER_AUTHORIZATION_PATH`: the app's consent page, a path under `SITE_URL` where
   * `/oauth/authorize` sends the browser with `authorization_id`. @default ''
   */
  authorizationPath: text('OAUTH_SERVER_AUTHORIZATION_PATH', {
    help: "The app's consent page, a path under `SITE_URL` (`/oauth/consent`): `/oauth/authorize` sends the browser there with `?authorization_id=…`.",
  }),
  /**
   * `OAUTH_SERVER_AUTHORIZATION_TTL`: how long an authorization request waits for consent, and
   * its code for the token request, in milliseconds (a Go duration). @default 600000
   */
  authorizationTtlMs: duration('OAUTH_SERVER_AUTHORIZATION_TTL', {
    default: '10m',
    help: 'How long an authorization request waits for consent and its code for `POST /oauth/token`, as a Go duration.',
  }),
  /** `OAUTH_SERVER_DEFAULT_SCOPE`: the scope of a request without `scope`. @default 'email' */
  defaultScope: text('OAUTH_SERVER_DEFAULT_SCOPE', {
    default: 'email',
    help: 'The scope of an authorization request without `scope`.',
  }),
})

/** `JWT_*`: access tokens (upstream `conf.JWTConfiguration`). */
const jwt = group({
  /**
   * `JWT_SECRET`: HS256 signing secret, at least {@link MIN_JWT_SECRET_BYTES} bytes; required
   * unless `JWT_KEYS` holds a signing key.
   */
  secret: text('JWT_SECRET', {
    secret: true,
    help: `HS256 signing secret, at least ${String(MIN_JWT_SECRET_BYTES)} bytes; required unless \`JWT_KEYS\` has a signing key. Shorter ones are refused at start.`,
  }),
  /** `JWT_EXP`: access-token lifetime in milliseconds (set in seconds). @default 3600000 */
  expMs: secondsInMs(
    integer('JWT_EXP', { default: '3600', min: 1, help: 'Access-token lifetime in seconds.' }),
  ),
  /** `JWT_AUD`: default audience. @default '' */
  aud: text('JWT_AUD', {
    help: 'Default audience: `aud` of new users (Supabase uses `authenticated`).',
  }),
  /** `JWT_ISSUER`: `iss` claim, omitted when empty. @default '' */
  issuer: text('JWT_ISSUER', { help: '`iss` claim, omitted when empty.' }),
  /** `JWT_DEFAULT_GROUP_NAME`: role assigned to new users. @default '' */
  defaultGroupName: text('JWT_DEFAULT_GROUP_NAME', {
    help: '`role` of new users (Supabase uses `authenticated`).',
  }),
  /** `JWT_ADMIN_ROLES`: role claim values that grant admin access. */
  adminRoles: list('JWT_ADMIN_ROLES', {
    default: 'service_role,supabase_admin',
    help: 'Roles allowed on the admin API, comma-separated.',
  }),
  /** `JWT_ADMIN_GROUP_NAME` (deprecated group support). @default 'admin' */
  adminGroupName: text('JWT_ADMIN_GROUP_NAME', {
    default: 'admin',
    help: 'Accepted for compatibility; group claims are not issued.',
  }),
  /** `JWT_KEYS`: JSON array of private JWKs (RS256 default, ES256, EdDSA, HS256). @default [] */
  keys: field('JWT_KEYS', parseKeys, {
    secret: true,
    help: 'JSON array of private JWKs; the one with `"sign"` in `key_ops` (or the only one) signs. RSA → RS256, EC → ES256, OKP → EdDSA unless `alg` says otherwise.',
  }),
  /** `JWT_KEY_ID`: `kid` header of HS256 tokens signed with `JWT_SECRET`. @default '' */
  keyId: text('JWT_KEY_ID', { help: '`kid` of HS256 tokens signed with `JWT_SECRET`.' }),
})

/** `JWT_SECRET` is needed unless `JWT_KEYS` signs, and must be long enough when set. */
function checkJwt(read: Report, v: Values<typeof jwt.fields>): void {
  if (v.secret === '' && v.keys.length === 0) {
    read.report(jwt.fields.secret, 'required unless AUTHSVC_JWT_KEYS holds a signing key')
  } else if (v.secret !== '' && Buffer.byteLength(v.secret) < MIN_JWT_SECRET_BYTES) {
    // HS256 with a short secret can be brute-forced offline from any token the server issued.
    read.report(jwt.fields.secret, `must be at least ${String(MIN_JWT_SECRET_BYTES)} bytes long`)
  }
}

/** `LOG_*`: logging. */
const log = group({
  /** `LOG_LEVEL` (no prefix). @default 'info' */
  level: field(
    ['LOG_LEVEL', 'LOG_LEVEL'],
    (value) => {
      const level = value.toLowerCase() === 'warning' ? 'warn' : value.toLowerCase()
      return (
        LOG_LEVELS.find((l) => l === level) ?? invalid(`must be one of ${LOG_LEVELS.join(', ')}`)
      )
    },
    {
      default: 'info',
      help: `Least severe level logged: ${LOG_LEVELS.map((l) => `\`${l}\``).join(', ')} (\`warning\` is \`warn\`).`,
    },
  ),
  /** `LOG_FILE`: append logs to this file instead of standard output. @default '' */
  file: text('LOG_FILE', {
    help: "Append JSON logs to this file instead of standard output. Each line's `level` is a word, as GoTrue's logrus writes it: `trace`, `debug`, `info`, `warning`, `error`, `fatal`.",
  }),
  /**
   * `AUDIT_LOG_DISABLE_POSTGRES`: audit events are only logged, not written to
   * `audit_log_entries` (upstream `AuditLogConfiguration.DisablePostgres`). @default false
   */
  auditDisablePostgres: bool('AUDIT_LOG_DISABLE_POSTGRES', {
    help: 'Audit events go to the logs only (each is always logged at `info` as `audit_event`), not to `audit_log_entries`; `GET /admin/audit` then lists none of them. See [Audit log](#audit-log).',
  }),
})

/**
 * Traces and metrics: upstream's `TRACING_*` and `METRICS_*` (`conf.TracingConfig`,
 * `conf.MetricsConfig`) and the standard OpenTelemetry variables, which are read without a prefix.
 */
const telemetry = group({
  /** `TRACING_ENABLED`: export a span per request and per SQL statement. @default false */
  tracingEnabled: bool('TRACING_ENABLED', {
    help: 'Export a span per request and per SQL statement over OTLP ([Telemetry](#telemetry)).',
  }),
  /** `TRACING_EXPORTER`: `opentelemetry` (OTLP), the only one upstream has. */
  tracingExporter: oneOf('TRACING_EXPORTER', ['opentelemetry'], {
    default: 'opentelemetry',
    help: 'The only exporter, `opentelemetry` (OTLP), as upstream.',
  }),
  /**
   * `TRACING_SAMPLING_RATE` (Gatehouse addition, as the rate limit service's): fraction of new
   * traces sampled, 0 to 1; a caller's `traceparent` sampled flag is followed. @default 1
   */
  tracingSamplingRate: decimal('TRACING_SAMPLING_RATE', {
    default: '1',
    min: 0,
    max: 1,
    help: "Fraction (0 to 1) of new traces sampled; a caller's `traceparent` sampled flag is followed. Gatehouse addition, as the rate limit service's.",
  }),
  /** `METRICS_ENABLED`. @default false */
  metricsEnabled: bool('METRICS_ENABLED', { help: 'HTTP server, auth and database pool metrics.' }),
  /** `METRICS_EXPORTER`: `opentelemetry` (OTLP push) or `prometheus` (scrape endpoint). */
  metricsExporter: oneOf('METRICS_EXPORTER', ['opentelemetry', 'prometheus'], {
    default: 'opentelemetry',
    help: '`opentelemetry` (OTLP push every `OTEL_METRIC_EXPORT_INTERVAL`) or `prometheus` (scrape endpoint).',
  }),
  /** `OTEL_EXPORTER_PROMETHEUS_HOST`: listen address of the scrape endpoint. @default '0.0.0.0' */
  prometheusHost: text(['OTEL_EXPORTER_PROMETHEUS_HOST', 'OTEL_EXPORTER_PROMETHEUS_HOST'], {
    default: '0.0.0.0',
    help: 'Listen address of the Prometheus endpoint (no prefix; see [SECURITY.md](../../SECURITY.md)).',
  }),
  /** `OTEL_EXPORTER_PROMETHEUS_PORT`: its port; metrics are served on `/`. @default 9100 */
  prometheusPort: port(['OTEL_EXPORTER_PROMETHEUS_PORT', 'OTEL_EXPORTER_PROMETHEUS_PORT'], {
    default: '9100',
    help: 'Port of the Prometheus endpoint; metrics are served on path `/`.',
  }),
  /** `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` or `grpc` (upstream refuses `http/json`). */
  otlpProtocol: oneOf(
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'],
    ['http/protobuf', 'grpc'],
    { default: 'http/protobuf', help: '`http/protobuf` or `grpc` (upstream refuses `http/json`).' },
  ),
  /** `OTEL_EXPORTER_OTLP_ENDPOINT`: base URL ('' = `http://localhost:4318`, grpc `:4317`). */
  otlpEndpoint: text(['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_ENDPOINT'], {
    help: "OTLP base URL; empty: the exporter's default, `http://localhost:4318` (grpc `:4317`). HTTP exports go to `/v1/traces` and `/v1/metrics` under it.",
  }),
  /** `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`: full URL for traces, wins over the base. */
  otlpTracesEndpoint: text(
    ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
    { help: 'Full URL for traces, used as is (wins over the base URL).' },
  ),
  /** `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`: full URL for metrics, wins over the base. */
  otlpMetricsEndpoint: text(
    ['OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', 'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT'],
    { help: 'Full URL for metrics, used as is (wins over the base URL).' },
  ),
  /** `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,…`, URL-encoded): sent with every export; secret. */
  otlpHeaders: field(
    ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_HEADERS'],
    parseOtlpHeaders,
    { secret: true, help: '`k=v,…` (URL-encoded) sent with every export; secret (never logged).' },
  ),
  /** `OTEL_EXPORTER_OTLP_TIMEOUT`: export timeout in milliseconds. @default 10000 */
  otlpTimeoutMs: integer(['OTEL_EXPORTER_OTLP_TIMEOUT', 'OTEL_EXPORTER_OTLP_TIMEOUT'], {
    default: '10000',
    min: 1,
    max: 600_000,
    help: 'Export timeout, milliseconds.',
  }),
  /** `OTEL_METRIC_EXPORT_INTERVAL`: milliseconds between OTLP metric exports. @default 60000 */
  metricExportIntervalMs: integer(['OTEL_METRIC_EXPORT_INTERVAL', 'OTEL_METRIC_EXPORT_INTERVAL'], {
    default: '60000',
    min: 100,
    max: 86_400_000,
    help: 'Milliseconds between OTLP metric exports.',
  }),
  /** `OTEL_SERVICE_NAME`: resource attribute `service.name`. @default 'gotrue' */
  serviceName: text(['OTEL_SERVICE_NAME', 'OTEL_SERVICE_NAME'], {
    default: 'gotrue',
    help: 'Resource attribute `service.name`.',
  }),
  /** `OTEL_RESOURCE_ATTRIBUTES` (`k=v,…`, URL-encoded): more resource attributes. */
  resourceAttributes: field(
    ['OTEL_RESOURCE_ATTRIBUTES', 'OTEL_RESOURCE_ATTRIBUTES'],
    parseResourceAttributes,
    { help: '`k=v,…` (URL-encoded): more resource attributes; `auth.version` is always added.' },
  ),
  /** `DEBUG` (no prefix): OpenTelemetry SDK diagnostics in the log. @default false */
  debug: bool(['DEBUG', 'DEBUG'], {
    help: 'OpenTelemetry SDK diagnostics in the log (no prefix).',
  }),
})

/** `PASSWORD_HIBP_BLOOM_*`: the bloom filter of known-pwned hashes (upstream `HIBPBloomConfiguration`). */
const hibpBloom = group({
  /** `PASSWORD_HIBP_BLOOM_ENABLED`: remember pwned hashes the range API returned. @default false */
  enabled: bool('PASSWORD_HIBP_BLOOM_ENABLED', {
    help: 'Remember the pwned hashes of each range answer in an in-memory bloom filter, so a known-pwned password is refused without asking again. Safe passwords are always asked.',
  }),
  /** `PASSWORD_HIBP_BLOOM_ITEMS`: hashes the filter is sized for. @default 100000 */
  items: integer('PASSWORD_HIBP_BLOOM_ITEMS', {
    default: '100000',
    min: 1,
    max: 10_000_000,
    help: 'Hashes the bloom filter is sized for (1 to 10 000 000; 100 000 at the default rate take about 300 KB); it is emptied when 80 % full.',
  }),
  /**
   * `PASSWORD_HIBP_BLOOM_FALSE_POSITIVES`: the filter's false-positive rate at `items` hashes (the
   * chance a safe password is refused as pwned). @default 0.0000099
   */
  falsePositives: decimal('PASSWORD_HIBP_BLOOM_FALSE_POSITIVES', {
    default: '0.0000099',
    min: 1e-12,
    max: 0.5,
    help: 'False-positive rate of the bloom filter when full: the chance a safe password is refused as pwned.',
  }),
})

/** `PASSWORD_HIBP_*`: leaked-password protection (upstream `HIBPConfiguration`). */
const hibp = group({
  /** `PASSWORD_HIBP_ENABLED`: refuse passwords found by the Pwned Passwords range API. @default false */
  enabled: bool('PASSWORD_HIBP_ENABLED', {
    help: 'Refuse passwords the Pwned Passwords range API knows (`422 weak_password`, reason `pwned`) on sign-up, password change (`PUT /user`) and admin user update (`PUT /admin/users/{id}`), as upstream; a password sign-in reports it in `weak_password` (see [Leaked passwords](#leaked-passwords)).',
  }),
  /**
   * `PASSWORD_HIBP_FAIL_CLOSED`: when the range API cannot be asked, refuse the password (500
   * `unexpected_failure`) instead of allowing it. @default false
   */
  failClosed: bool('PASSWORD_HIBP_FAIL_CLOSED', {
    help: 'When the range API fails, times out or answers garbage, refuse with `500 unexpected_failure` instead of allowing the password (the default, logged as a warning).',
  }),
  /** `PASSWORD_HIBP_USER_AGENT`: the `User-Agent` of range API calls. @default upstream's */
  userAgent: text('PASSWORD_HIBP_USER_AGENT', {
    default: 'https://github.com/supabase/gotrue',
    help: '`User-Agent` sent to the range API (its rules ask for one naming the application).',
  }),
  /**
   * `PASSWORD_HIBP_API_URL`: base URL of the range API; `/range/<prefix>` is appended. Beyond
   * upstream (tests, proxies, a self-hosted mirror). @default 'https://api.pwnedpasswords.com'
   */
  apiUrl: url('PASSWORD_HIBP_API_URL', {
    default: 'https://api.pwnedpasswords.com',
    help: 'Base URL of the range API, to which `/range/<first 5 hex of the SHA-1>` is appended (tests, proxies, a mirror). Beyond upstream.',
  }),
  /**
   * `PASSWORD_HIBP_TIMEOUT`: milliseconds a range API call may take (set as seconds or a Go
   * duration). Beyond upstream, which fixes 5 s. @default 5000
   */
  timeoutMs: secondsOrDuration('PASSWORD_HIBP_TIMEOUT', {
    unit: 'ms',
    default: '5s',
    help: 'Longest a range API call may take, as seconds or a Go duration; then the fail-open/closed rule applies. Beyond upstream (fixed 5 s).',
  }),
  bloom: hibpBloom,
})

/** `PASSWORD_*`: password rules and hashing. */
const password = group({
  /** `PASSWORD_MIN_LENGTH`: minimum length in bytes; values below 6 are raised to 6. @default 6 */
  minLength: adjusted(
    integer('PASSWORD_MIN_LENGTH', {
      default: '6',
      help: 'Minimum password length in bytes; lower values are raised to 6.',
    }),
    (value) => Math.max(6, value),
  ),
  /** `PASSWORD_REQUIRED_CHARACTERS`, split into sets (`:` separates, `\:` is a literal colon). */
  requiredCharacters: field(
    'PASSWORD_REQUIRED_CHARACTERS',
    (value) => splitRequiredCharacters(value),
    {
      help: 'Character sets separated by `:` (`\\:` is a literal colon); one character of each is required.',
    },
  ),
  /**
   * `PASSWORD_HASH_CONCURRENCY`: bcrypt hashes and checks run at once; 0 means one per CPU core
   * (`os.availableParallelism()`). @default 0
   */
  hashConcurrency: integer('PASSWORD_HASH_CONCURRENCY', {
    default: '0',
    help: 'bcrypt hashes and checks running at once.',
    note: 'one per CPU core',
  }),
  /**
   * `PASSWORD_HASH_QUEUE_SIZE`: hashes and checks waiting for a slot; beyond it requests get 429
   * `over_request_rate_limit`. @default 100
   */
  hashQueueSize: integer('PASSWORD_HASH_QUEUE_SIZE', {
    default: '100',
    help: 'bcrypt hashes and checks waiting for a slot; beyond it `429 over_request_rate_limit` with `Retry-After: 1`.',
  }),
  hibp,
})

/** `MFA_*`: multi-factor authentication (upstream `conf.MFAConfiguration`). */
const mfa = group({
  /** `MFA_TOTP_ENROLL_ENABLED`: TOTP factors can be enrolled. @default true */
  totpEnrollEnabled: bool('MFA_TOTP_ENROLL_ENABLED', {
    default: 'true',
    help: 'TOTP factors can be enrolled (else `422 mfa_totp_enroll_not_enabled`).',
  }),
  /** `MFA_TOTP_VERIFY_ENABLED`: TOTP factors can be challenged and verified. @default true */
  totpVerifyEnabled: bool('MFA_TOTP_VERIFY_ENABLED', {
    default: 'true',
    help: 'TOTP factors can be challenged and verified.',
  }),
  /** `MFA_PHONE_ENROLL_ENABLED`: phone factors can be enrolled. @default false */
  phoneEnrollEnabled: bool('MFA_PHONE_ENROLL_ENABLED', {
    help: 'Phone factors can be enrolled.',
  }),
  /** `MFA_PHONE_VERIFY_ENABLED`: phone factors can be challenged and verified. @default false */
  phoneVerifyEnabled: bool('MFA_PHONE_VERIFY_ENABLED', {
    help: 'Phone factors can be challenged and verified.',
  }),
  /** `MFA_WEB_AUTHN_ENROLL_ENABLED`: WebAuthn factors can be enrolled. @default false */
  webAuthnEnrollEnabled: bool('MFA_WEB_AUTHN_ENROLL_ENABLED', {
    help: 'WebAuthn factors (security keys, platform authenticators) can be enrolled (else `422 mfa_webauthn_enroll_not_enabled`). Needs the `WEBAUTHN_RP_*` settings.',
  }),
  /** `MFA_WEB_AUTHN_VERIFY_ENABLED`: WebAuthn factors can be challenged and verified. @default false */
  webAuthnVerifyEnabled: bool('MFA_WEB_AUTHN_VERIFY_ENABLED', {
    help: 'WebAuthn factors can be challenged and verified.',
  }),
  /**
   * `MFA_RECOVERY_CODES_ENROLL_ENABLED`: users with an `aal2` session can generate, regenerate
   * and delete their recovery codes. @default false
   */
  recoveryCodesEnrollEnabled: bool('MFA_RECOVERY_CODES_ENROLL_ENABLED', {
    help: 'Users with an `aal2` session can generate, regenerate and delete their MFA recovery codes (else `422 mfa_recovery_codes_enroll_disabled`).',
  }),
  /** `MFA_RECOVERY_CODES_VERIFY_ENABLED`: a recovery code raises a session to `aal2`. @default false */
  recoveryCodesVerifyEnabled: bool('MFA_RECOVERY_CODES_VERIFY_ENABLED', {
    help: 'A recovery code can be used instead of a factor to raise a session to `aal2` (else `422 mfa_recovery_codes_verify_disabled`).',
  }),
  /** `MFA_RECOVERY_CODES_COUNT`: codes in a generated set, 5 to 20. @default 10 */
  recoveryCodesCount: integer('MFA_RECOVERY_CODES_COUNT', {
    default: '10',
    min: 5,
    max: 20,
    help: 'Codes in a set of MFA recovery codes, 5 to 20.',
  }),
  /** `MFA_MAX_ENROLLED_FACTORS`: factors (verified or not) a user may have. @default 10 */
  maxEnrolledFactors: integer('MFA_MAX_ENROLLED_FACTORS', {
    default: '10',
    help: 'Factors (verified or not) a user may have.',
  }),
  /** `MFA_MAX_VERIFIED_FACTORS`: verified factors a user may have. @default 10 */
  maxVerifiedFactors: integer('MFA_MAX_VERIFIED_FACTORS', {
    default: '10',
    help: 'Verified factors a user may have.',
  }),
  /**
   * `MFA_PHONE_MAX_UNVERIFIED_FACTORS`: unverified phone factors a user may have at once (each
   * can be sent an SMS per `MFA_PHONE_MAX_FREQUENCY`); beyond upstream, which only has
   * `MFA_MAX_ENROLLED_FACTORS`. @default 2
   */
  phoneMaxUnverifiedFactors: integer('MFA_PHONE_MAX_UNVERIFIED_FACTORS', {
    default: '2',
    min: 1,
    help: 'Unverified phone factors a user may have at once (else `422 too_many_enrolled_mfa_factors`).',
  }),
  /**
   * `MFA_CHALLENGE_EXPIRY_DURATION`: how long a challenge can be verified, in milliseconds (set
   * in seconds). @default 300000
   */
  challengeExpiryMs: secondsInMs(
    decimal('MFA_CHALLENGE_EXPIRY_DURATION', {
      default: '300',
      help: 'Seconds (a decimal number) a challenge can be verified.',
    }),
  ),
  /**
   * `MFA_FACTOR_EXPIRY_DURATION`: milliseconds after which an unverified factor that was never
   * challenged is deleted (at the next enrolment). @default 300000 (`300s`)
   */
  factorExpiryMs: duration('MFA_FACTOR_EXPIRY_DURATION', {
    default: '300s',
    help: 'Go duration after which an unverified factor that was never challenged is deleted (at the next enrolment).',
  }),
  /**
   * `MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY`: challenge and verify requests per minute and client
   * (each with a burst of 30). @default 15
   */
  rateLimitChallengeAndVerify: decimal('MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY', {
    default: '15',
    help: 'Challenge and verify requests a minute per client (`RATE_LIMIT_HEADER`), each with a burst of 30.',
  }),
  /** `MFA_PHONE_OTP_LENGTH`: digits of a phone factor's code, 6 to 10 (else 6, as upstream). */
  phoneOtpLength: adjusted(
    integer('MFA_PHONE_OTP_LENGTH', {
      default: '6',
      help: 'Digits of phone codes, 6 to 10; other values mean 6.',
    }),
    (value) => (value < 6 || value > 10 ? 6 : value),
  ),
  /** `MFA_PHONE_TEMPLATE`: the SMS text; `{{ .Code }}` is the code. */
  phoneTemplate: text('MFA_PHONE_TEMPLATE', {
    default: 'Your code is {{ .Code }}',
    help: 'SMS text of phone codes; `{{ .Code }}` is the code.',
  }),
  /**
   * `MFA_PHONE_MAX_FREQUENCY`: least time between two SMS challenges of one factor, in
   * milliseconds (0 means the default, as upstream). @default 60000 (`1m`)
   */
  phoneMaxFrequencyMs: adjusted(
    duration('MFA_PHONE_MAX_FREQUENCY', {
      default: '1m',
      help: 'Least time (Go duration) between two SMS challenges of one factor; `0` means `1m`.',
    }),
    (ms) => (ms === 0 ? 60_000 : ms),
  ),
})

/** `PASSKEY_*`: passwordless sign-in with passkeys (upstream `PasskeyConfiguration`). */
const passkey = group({
  /** `PASSKEY_ENABLED`: serve the `/passkeys` routes. @default false */
  enabled: bool('PASSKEY_ENABLED', {
    help: 'Serve the `/passkeys` routes: register passkeys, sign in with one (else `404 passkey_disabled`). Needs the `WEBAUTHN_RP_*` settings.',
  }),
  /** `PASSKEY_MAX_PASSKEYS_PER_USER`: passkeys one user may register. @default 10 */
  maxPasskeysPerUser: integer('PASSKEY_MAX_PASSKEYS_PER_USER', {
    default: '10',
    min: 1,
    help: 'Passkeys one user may register (else `422 too_many_passkeys`).',
  }),
})

/** `WEBAUTHN_*`: the relying party passkeys and WebAuthn factors are bound to. */
const webauthn = group({
  /** `WEBAUTHN_RP_ID`: the relying party id, a registrable domain of the site (`example.com`). */
  rpId: text('WEBAUTHN_RP_ID', {
    help: "The relying party id: the site's domain (`example.com`, `localhost`); credentials are bound to it. Required with `PASSKEY_ENABLED`.",
  }),
  /** `WEBAUTHN_RP_DISPLAY_NAME`: the name authenticators show. */
  rpDisplayName: text('WEBAUTHN_RP_DISPLAY_NAME', {
    help: 'The name authenticators show for the site. Required with `PASSKEY_ENABLED`.',
  }),
  /** `WEBAUTHN_RP_ORIGINS`: the origins ceremonies may come from (`https://app.example.com`). */
  rpOrigins: list('WEBAUTHN_RP_ORIGINS', {
    help: 'Origins (comma-separated, such as `https://app.example.com`) the WebAuthn ceremonies may run on; any other is refused. Required with `PASSKEY_ENABLED`.',
  }),
  /**
   * `WEBAUTHN_CHALLENGE_EXPIRY_DURATION`: how long a registration or sign-in challenge can be
   * answered, in milliseconds. @default 300000 (`5m`)
   */
  challengeExpiryMs: duration('WEBAUTHN_CHALLENGE_EXPIRY_DURATION', {
    default: '5m',
    help: 'Go duration a WebAuthn challenge can be answered (once); then `400 webauthn_challenge_expired`.',
  }),
})

/**
 * Passkeys need the relying party: an error at start, where upstream only logs a warning and
 * then fails every ceremony.
 */
function checkWebauthn(
  read: Report,
  v: Values<typeof webauthn.fields>,
  used: { passkey: boolean; mfa: boolean },
): void {
  if (!used.passkey && !used.mfa) return
  const message = used.passkey
    ? 'required when PASSKEY_ENABLED is on'
    : 'required when MFA_WEB_AUTHN_ENROLL_ENABLED or MFA_WEB_AUTHN_VERIFY_ENABLED is on'
  requireSet(read, webauthn, v, ['rpId', 'rpDisplayName'], message)
  if (v.rpOrigins.length === 0) read.report(webauthn.fields.rpOrigins, message)
}

/** `SECURITY_CAPTCHA_*`: captcha protection of sign-up and sign-in (upstream `security`). */
const captcha = group({
  /** `SECURITY_CAPTCHA_ENABLED`. @default false */
  enabled: bool('SECURITY_CAPTCHA_ENABLED', {
    help: 'Captcha on sign-up (also anonymous), password and Web3 sign-in, `/otp`, `/magiclink`, `/recover` and `/resend` (see [Captcha](#captcha)).',
  }),
  /** `SECURITY_CAPTCHA_PROVIDER` (case-insensitive). @default 'hcaptcha' */
  provider: oneOf('SECURITY_CAPTCHA_PROVIDER', CAPTCHA_PROVIDERS, {
    default: 'hcaptcha',
    help: `${CAPTCHA_PROVIDERS.map((p) => `\`${p}\``).join(' or ')} (any case).`,
  }),
  /** `SECURITY_CAPTCHA_SECRET`: the site's secret key, trimmed (never logged). */
  secret: adjusted(
    text('SECURITY_CAPTCHA_SECRET', {
      secret: true,
      help: "The site's secret key (never logged); required when enabled.",
    }),
    (value) => value.trim(),
  ),
  /** `SECURITY_CAPTCHA_TIMEOUT`: milliseconds a siteverify call may take. @default 10000 */
  timeoutMs: secondsOrDuration('SECURITY_CAPTCHA_TIMEOUT', {
    unit: 'ms',
    default: '10s',
    help: 'Longest a siteverify call may take, as seconds or a Go duration; then `500`.',
  }),
  /**
   * `SECURITY_CAPTCHA_VERIFY_URL`: the whole siteverify URL (tests, proxies). @default the
   * provider's, {@link CAPTCHA_VERIFY_URLS}
   */
  verifyUrl: url('SECURITY_CAPTCHA_VERIFY_URL', {
    help: 'The whole siteverify URL (tests, proxies).',
    computedDefault: `the provider's: ${Object.values(CAPTCHA_VERIFY_URLS)
      .map((u) => `\`${u}\``)
      .join(' or ')}`,
  }),
})

/** An enabled captcha needs its secret. */
function checkCaptcha(read: Report, v: Values<typeof captcha.fields>): void {
  if (v.enabled && v.secret === '') {
    read.report(captcha.fields.secret, 'required when AUTHSVC_SECURITY_CAPTCHA_ENABLED is on')
  }
}

/** `SECURITY_*`: refresh tokens, reauthentication, identity linking, attempts, captcha. */
const security = group({
  /** `SECURITY_REFRESH_TOKEN_ROTATION_ENABLED`: reuse detection. @default true */
  refreshTokenRotationEnabled: bool('SECURITY_REFRESH_TOKEN_ROTATION_ENABLED', {
    default: 'true',
    help: 'Refresh-token reuse detection.',
  }),
  /**
   * `SECURITY_REFRESH_TOKEN_REUSE_INTERVAL`: how long a revoked refresh token may still be used,
   * in milliseconds (set as seconds or a Go duration). @default 0
   */
  refreshTokenReuseIntervalMs: secondsOrDuration('SECURITY_REFRESH_TOKEN_REUSE_INTERVAL', {
    unit: 'ms',
    default: '0',
    help: 'Time in which a revoked refresh token may be exchanged again, as seconds or a Go duration such as `10s`.',
  }),
  /** `SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION`. @default false */
  updatePasswordRequireReauthentication: bool('SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION', {
    help: 'Password changes in a session older than 24 h need the `nonce` mailed by `GET /reauthenticate`.',
  }),
  /**
   * `SECURITY_OTP_MAX_ATTEMPTS`: wrong answers one one-time code (email or SMS), reauthentication
   * nonce or MFA challenge takes; the last of them invalidates it, and a new one must be
   * requested. An MFA factor takes as many failures (over all its challenges) before each
   * further one makes it back off (1 s, doubling, at most 15 min). Counted in the database, so
   * for every instance. Beyond upstream, which counts nothing. @default 5
   */
  otpMaxAttempts: integer('SECURITY_OTP_MAX_ATTEMPTS', {
    default: '5',
    min: 1,
    help: 'Wrong answers one email or SMS code, reauthentication nonce or MFA challenge takes; the last invalidates it. A new one must then be requested. An MFA factor takes as many failures, then backs off (1 s, doubling, at most 15 min). Counted in the database, for every instance. Beyond upstream.',
  }),
  /**
   * `SECURITY_MANUAL_LINKING_ENABLED`: signed-in users may link and unlink identities
   * (`/user/identities/*`). @default false
   */
  manualLinkingEnabled: bool('SECURITY_MANUAL_LINKING_ENABLED', {
    help: 'Signed-in users may link and unlink identities (`/user/identities/*`).',
  }),
  /**
   * `SECURITY_MANUAL_LINKING_REQUIRE_SITE_REFERER`: the browser's first request of an identity
   * link (`/authorize?link_ticket=…`) must come from a page of the site (its `Referer` allowed
   * as a `redirect_to` is), so that a link URL sent to someone else's browser cannot attach
   * their provider account to the sender's user. Turn off for native apps that open the link
   * URL in a system browser (no `Referer`). @default true
   */
  manualLinkingRequireSiteReferer: bool('SECURITY_MANUAL_LINKING_REQUIRE_SITE_REFERER', {
    default: 'true',
    help: "An identity link must be opened from a page of the site; turn off for native apps. The link's first navigation (`/authorize?link_ticket=…`) must carry a `Referer` allowed as a `redirect_to` is; a native app opens the link in a system browser, without one.",
  }),
  /**
   * `SECURITY_ALLOW_PRIVATE_URLS`: URLs an administrator registers (custom providers' issuers
   * and endpoints, SAML metadata URLs) may resolve to loopback, link-local and private addresses, and use `http` to
   * a loopback host. For tests and closed networks. @default false
   */
  allowPrivateUrls: bool('SECURITY_ALLOW_PRIVATE_URLS', {
    help: 'URLs an administrator registers (custom OAuth/OIDC providers, a SAML `metadata_url`) may resolve to loopback, link-local, private, unique-local or CGNAT addresses, and use `http` to a loopback host. Off: they must be `https` and every address they resolve to public, checked at registration and again at each connection. For tests and closed networks.',
  }),
  /** `SECURITY_CAPTCHA_*`: captcha protection of sign-up and sign-in (upstream `security`). */
  captcha,
})

/** `CUSTOM_OAUTH_*`: OAuth 2.0 and OIDC providers added at run time (upstream `CustomOAuth`). */
const customOauth = group({
  /** `CUSTOM_OAUTH_ENABLED`: the admin API and sign-in with `custom:<name>`. @default true */
  enabled: bool('CUSTOM_OAUTH_ENABLED', {
    default: 'true',
    help: 'Custom OAuth/OIDC providers: `/admin/custom-providers` and sign-in with `custom:<name>` ([Custom providers](#custom-oauth-and-oidc-providers)).',
  }),
  /** `CUSTOM_OAUTH_MAX_PROVIDERS`: most custom providers; `0`: no limit. @default 0 */
  maxProviders: integer('CUSTOM_OAUTH_MAX_PROVIDERS', {
    default: '0',
    min: 0,
    help: 'Most custom providers that may exist; `0`: no limit. One more is refused with `over_custom_provider_quota`.',
  }),
  /**
   * `CUSTOM_OAUTH_ENCRYPTION_KEY`: the secret the key encrypting client secrets (AES-256-GCM)
   * is derived from; empty: `JWT_SECRET`. @default ''
   */
  encryptionKey: text('CUSTOM_OAUTH_ENCRYPTION_KEY', {
    secret: true,
    help: "Secret the AES-256-GCM key that encrypts custom providers' client secrets is derived from (HKDF-SHA-256); empty: `JWT_SECRET`. Changing it makes stored client secrets unreadable.",
  }),
})

/**
 * `SESSIONS_*`: how long a session lasts and how many a user keeps (upstream
 * `conf.SessionsConfiguration`). Durations are Go durations, read in milliseconds; `0` (the
 * default) turns a limit off, where upstream refuses `0` at start and leaves the limit unset.
 */
const sessions = group({
  /**
   * `SESSIONS_TIMEBOX`: longest a session lasts from its sign-in, in milliseconds; then its
   * refresh is refused (400 `session_expired`). 0: no limit. @default 0
   */
  timeboxMs: duration('SESSIONS_TIMEBOX', {
    default: '0',
    help: 'Longest a session lasts from its sign-in, as a Go duration such as `24h`; then refreshing it answers `400 session_expired` (and an admin request with its access token `403 session_expired`). `0`: no limit.',
  }),
  /**
   * `SESSIONS_INACTIVITY_TIMEOUT`: longest a session may go without a refresh, in milliseconds;
   * then its refresh is refused (400 `session_expired`, `… (Inactivity)`). 0: no limit.
   * @default 0
   */
  inactivityTimeoutMs: duration('SESSIONS_INACTIVITY_TIMEOUT', {
    default: '0',
    help: 'Longest a session may go unrefreshed (since its sign-in or last refresh), as a Go duration; then refreshing it answers `400 session_expired` (`Invalid Refresh Token: Session Expired (Inactivity)`). `0`: no limit.',
  }),
  /**
   * `SESSIONS_ALLOW_LOW_AAL`: how long a session below the user's highest possible assurance
   * level (`aal1` while the user has a verified MFA factor) lasts from its sign-in, in
   * milliseconds; its access tokens expire by then and its refresh is refused after. 0: no
   * limit. @default 0
   */
  allowLowAalMs: duration('SESSIONS_ALLOW_LOW_AAL', {
    default: '0',
    help: 'How long an `aal1` session of a user with a verified MFA factor lasts from its sign-in, as a Go duration; its access tokens expire by then, and refreshing it afterwards answers `400 session_expired` (`… (Low AAL: User Needs MFA Verification)`). `0`: no limit.',
  }),
  /**
   * `SESSIONS_SINGLE_PER_USER`: a user keeps one active session (per tag): refreshing a session
   * is refused while another valid session of the user (with the same tag) was signed in or
   * refreshed later. @default false
   */
  singlePerUser: bool('SESSIONS_SINGLE_PER_USER', {
    help: 'One active session per user (per tag of `SESSIONS_TAGS`): refreshing a session answers `400 session_expired` (`… (Revoked by Newer Login)`) once another valid session of the user was signed in or refreshed later.',
  }),
  /**
   * `SESSIONS_TAGS`: the session tags `SESSIONS_SINGLE_PER_USER` counts separately; a session
   * whose `tag` is empty or not listed counts as the first. @default []
   */
  tags: list('SESSIONS_TAGS', {
    help: "Session tags, comma-separated, that `SESSIONS_SINGLE_PER_USER` keeps one session each of; a session whose `tag` column is empty or not listed counts as the first tag's.",
  }),
})

/** What each hook point is for, in its settings' help. */
const HOOK_PURPOSES: Readonly<Record<HookPoint, string>> = {
  customAccessToken: 'changes the claims of every access token before it is signed',
  sendEmail: 'sends every auth mail instead of SMTP',
  sendSms: 'sends every SMS code instead of the SMS provider',
  mfaVerificationAttempt: 'decides after each MFA code check whether to go on or reject',
  passwordVerificationAttempt: 'decides after each password check whether to go on or reject',
  beforeUserCreated: 'may refuse a user before it is created',
  afterUserCreated: 'is told of each user created, once its creation is committed',
}

/** `HOOK_<NAME>_*`: one auth hook (upstream `conf.ExtensibilityPointConfiguration`). */
function hookFields(point: HookPoint) {
  const stem = `HOOK_${HOOK_POINTS[point].stem}`
  return group({
    /** `HOOK_<NAME>_ENABLED`: call the hook. @default false */
    enabled: bool(`${stem}_ENABLED`, {
      help: `Call the hook, which ${HOOK_PURPOSES[point]} (see [Hooks](#hooks)); needs \`${stem}_URI\`.`,
    }),
    /**
     * `HOOK_<NAME>_URI`: `https://…`, `http://` on a loopback host, or
     * `pg-functions://postgres/<schema>/<function>`; `null` when unset.
     */
    uri: field(`${stem}_URI`, parseHookUri, {
      help: 'Where the hook is: an `https://` endpoint, `http://` on `localhost`, `127.0.0.1` or `[::1]` only, or `pg-functions://postgres/<schema>/<function>`.',
    }),
    /** `HOOK_<NAME>_SECRETS`: the base64 keys of the `v1,whsec_…` secrets (never logged). */
    secrets: field(`${stem}_SECRETS`, parseHookSecrets, {
      secret: true,
      help: 'Standard Webhooks secrets `v1,whsec_<base64>` signing an HTTP hook, separated by `|` during a rotation (each request is signed with all); required for an HTTP hook (never logged).',
    }),
  })
}

/** `HOOK_*`: the seven auth hooks (upstream `conf.HookConfiguration`). */
const hook = group({
  customAccessToken: hookFields('customAccessToken'),
  sendEmail: hookFields('sendEmail'),
  sendSms: hookFields('sendSms'),
  mfaVerificationAttempt: hookFields('mfaVerificationAttempt'),
  passwordVerificationAttempt: hookFields('passwordVerificationAttempt'),
  beforeUserCreated: hookFields('beforeUserCreated'),
  afterUserCreated: hookFields('afterUserCreated'),
})

/** An enabled hook needs its URI, and an HTTP hook its secrets. */
function checkHooks(read: Report, v: Values<typeof hook.fields>): void {
  for (const point of Object.keys(HOOK_POINTS) as HookPoint[]) {
    const fields = hook.fields[point].fields
    const { enabled, uri, secrets } = v[point]
    const on = `when AUTHSVC_HOOK_${HOOK_POINTS[point].stem}_ENABLED is on`
    if (enabled && uri === null) read.report(fields.uri, `required ${on}`)
    if (enabled && uri?.kind === 'http' && secrets.length === 0) {
      read.report(fields.secrets, `required ${on} with an http(s) URI`)
    }
  }
}

/** The default `EXTERNAL_<P>_URL` of providers that have one. */
const PROVIDER_DEFAULT_URLS: Readonly<Partial<Record<string, string>>> = {
  gitlab: 'https://gitlab.com',
}

/**
 * `EXTERNAL_<P>_*`: one provider's OAuth client (upstream `conf.OAuthProviderConfiguration`).
 *
 * @param p The provider, or `<provider>` for the README's family rows.
 */
function providerFields(p: string) {
  const name = `EXTERNAL_${p.toUpperCase()}`
  return {
    /** `EXTERNAL_<P>_ENABLED`. @default false */
    enabled: bool(`${name}_ENABLED`, {
      help: `Sign-in with this provider; reported by \`/settings\`. The providers: ${EXTERNAL_PROVIDERS.join(', ')}.`,
    }),
    /**
     * `EXTERNAL_<P>_CLIENT_ID`: the OAuth client id (Twitter: the consumer key); several,
     * comma-separated, for the `id_token` grant, of which the code flow uses the first.
     */
    clientId: text(`${name}_CLIENT_ID`, {
      help: 'The OAuth client id (Twitter: the consumer key); required when enabled. The `id_token` grant accepts tokens issued to any of several ids separated by commas (the web client and each native app); the code flow uses the first.',
    }),
    /**
     * `EXTERNAL_<P>_SECRET`: the client secret (Twitter: the consumer secret). For Apple, either
     * the client-secret JWT itself or an ES256 private key (PEM) to sign one with
     * `EXTERNAL_APPLE_TEAM_ID` and `EXTERNAL_APPLE_KEY_ID`.
     */
    secret: text(`${name}_SECRET`, {
      secret: true,
      help: 'The OAuth client secret (Twitter: the consumer secret; Apple: the client-secret JWT, or an ES256 PEM key to sign one); required when enabled.',
    }),
    /** `EXTERNAL_<P>_REDIRECT_URI`: this server's `/callback` as registered with the provider. */
    redirectUri: url(`${name}_REDIRECT_URI`, {
      help: "This server's `/callback` as registered with the provider; required when enabled.",
    }),
    /**
     * `EXTERNAL_<P>_URL`: the provider's base URL instead of its public one (upstream
     * `chooseHost`); keycloak: the realm URL (required); gitlab: default `https://gitlab.com`;
     * apple and google: the issuer to discover from. '' for the provider's default.
     */
    url: url(`${name}_URL`, {
      ...(PROVIDER_DEFAULT_URLS[p] === undefined ? {} : { default: PROVIDER_DEFAULT_URLS[p] }),
      help: "The provider's base URL instead of its public one. Keycloak: the realm URL (required); GitLab: `https://gitlab.com` by default; Apple, Google, Facebook, Snapchat: the issuer to discover from (for the `id_token` grant, the only issuer accepted); Azure: its origin is the only one whose tenant issuers are accepted.",
    }),
  }
}

/** A provider's group. */
const provider = (p: ExternalProvider) => group(providerFields(p))

/**
 * `EXTERNAL_<P>_TRUST_EMAIL`, for a provider that does not say whether it verified the email it
 * returns (its module counts it as verified, as upstream does, but never links it to an existing
 * account without this).
 *
 * @param p The provider, or `<provider>` for the README's family rows.
 */
function trustEmailField(p: string): Field<boolean> {
  return bool(`EXTERNAL_${p.toUpperCase()}_TRUST_EMAIL`, {
    help: 'Link sign-ins to an existing account holding the same address, although the provider does not say it verified it (see [External providers](#external-providers)). Only the providers that do not say so have this setting.',
  })
}

/** The group of a provider that does not say whether it verified the email it returns. */
function emailAssumedProvider(p: ExternalProvider) {
  return group({
    ...providerFields(p),
    /**
     * `EXTERNAL_<P>_TRUST_EMAIL`: trust that the address the provider returns is its user's
     * although the provider does not say it verified it, so that it links the identity to an
     * existing account holding that address. @default false
     */
    trustEmail: trustEmailField(p),
  })
}

/**
 * `EXTERNAL_WEB3_<CHAIN>_*`: Web3 sign-in with a wallet of one chain through
 * `POST /token?grant_type=web3` (upstream `Web3Ethereum` and `Web3Solana`).
 *
 * @param chain The chain, as `chain` names it in the grant.
 * @param standard What the wallet signs, for the help text.
 */
function web3Chain(chain: 'ethereum' | 'solana', standard: string) {
  const name = chain.toUpperCase()
  return group({
    /** `EXTERNAL_WEB3_<CHAIN>_ENABLED`. @default false */
    enabled: bool(`EXTERNAL_WEB3_${name}_ENABLED`, {
      help: `Sign-in with ${standard} (\`POST /token?grant_type=web3\` with \`chain: "${chain}"\`; see [Web3 sign-in](#web3-sign-in)).`,
    }),
    /**
     * `EXTERNAL_WEB3_<CHAIN>_MAXIMUM_VALIDITY_DURATION`: how far from now a signed message's
     * `Issued At` may be, either way, in milliseconds. @default 600000
     */
    maximumValidityDurationMs: duration(`EXTERNAL_WEB3_${name}_MAXIMUM_VALIDITY_DURATION`, {
      default: '10m',
      positive: true,
      help: "How far from now a signed message's `Issued At` may be, in the past or the future, as a Go duration; older or later messages are refused.",
    }),
  })
}

/** `EXTERNAL_*`: sign-in methods and the external OAuth providers (upstream `External`). */
const external = group({
  /** `EXTERNAL_EMAIL_ENABLED`. @default true */
  emailEnabled: bool('EXTERNAL_EMAIL_ENABLED', {
    default: 'true',
    help: 'Email sign-up, sign-in and the email flows; `false` refuses them (see [Email flows](#email-flows)).',
  }),
  /** `EXTERNAL_PHONE_ENABLED`. @default false */
  phoneEnabled: bool('EXTERNAL_PHONE_ENABLED', { help: 'Phone sign-up and sign-in.' }),
  /** `EXTERNAL_ANONYMOUS_USERS_ENABLED`. @default false */
  anonymousUsersEnabled: bool('EXTERNAL_ANONYMOUS_USERS_ENABLED', {
    help: 'Anonymous sign-ups: `POST /signup` without email or phone creates an anonymous user.',
  }),
  /**
   * `EXTERNAL_FLOW_STATE_EXPIRY_DURATION`: lifetime of a PKCE flow state in milliseconds (at
   * least 300 s, as upstream). @default 300000
   */
  flowStateExpiryMs: adjusted(
    secondsOrDuration('EXTERNAL_FLOW_STATE_EXPIRY_DURATION', {
      unit: 'ms',
      default: '300',
      help: 'Lifetime of a PKCE flow state, as seconds or a Go duration; at least 300 s.',
    }),
    (ms) => Math.max(300_000, ms),
  ),
  /**
   * `EXTERNAL_APPLE_*`; with a PEM `EXTERNAL_APPLE_SECRET`, the team and key ids sign the
   * client secret.
   */
  apple: group({
    ...providerFields('apple'),
    /** `EXTERNAL_APPLE_TEAM_ID`: to sign the client secret with a PEM secret. */
    teamId: text('EXTERNAL_APPLE_TEAM_ID', {
      help: 'Apple team id, the `iss` of the client-secret JWT signed per request with a PEM `EXTERNAL_APPLE_SECRET`.',
    }),
    /** `EXTERNAL_APPLE_KEY_ID`: to sign the client secret with a PEM secret. */
    keyId: text('EXTERNAL_APPLE_KEY_ID', {
      help: 'Apple key id, the `kid` of the client-secret JWT signed per request with a PEM `EXTERNAL_APPLE_SECRET`.',
    }),
  }),
  /** `EXTERNAL_AZURE_*`. */
  azure: provider('azure'),
  /** `EXTERNAL_BITBUCKET_*`. */
  bitbucket: provider('bitbucket'),
  /** `EXTERNAL_DISCORD_*`. */
  discord: provider('discord'),
  /** `EXTERNAL_FACEBOOK_*`. */
  facebook: emailAssumedProvider('facebook'),
  /** `EXTERNAL_FIGMA_*`. */
  figma: emailAssumedProvider('figma'),
  /** `EXTERNAL_FLY_*`. */
  fly: provider('fly'),
  /** `EXTERNAL_GITHUB_*`. */
  github: provider('github'),
  /** `EXTERNAL_GITLAB_*`. */
  gitlab: provider('gitlab'),
  /** `EXTERNAL_GOOGLE_*`. */
  google: provider('google'),
  /** `EXTERNAL_KAKAO_*`. */
  kakao: provider('kakao'),
  /** `EXTERNAL_KEYCLOAK_*`; `EXTERNAL_KEYCLOAK_URL` (the realm) is required when enabled. */
  keycloak: provider('keycloak'),
  /** `EXTERNAL_LINKEDIN_*`. */
  linkedin: emailAssumedProvider('linkedin'),
  /** `EXTERNAL_LINKEDIN_OIDC_*`: LinkedIn's OpenID Connect sign-in (upstream `linkedin_oidc`). */
  linkedin_oidc: provider('linkedin_oidc'),
  /** `EXTERNAL_NOTION_*`. */
  notion: emailAssumedProvider('notion'),
  /** `EXTERNAL_SNAPCHAT_*`. */
  snapchat: emailAssumedProvider('snapchat'),
  /** `EXTERNAL_SPOTIFY_*`. */
  spotify: provider('spotify'),
  /** `EXTERNAL_SLACK_*`. */
  slack: emailAssumedProvider('slack'),
  /** `EXTERNAL_SLACK_OIDC_*`: Sign in with Slack (OpenID Connect), upstream's `slack_oidc`. */
  slack_oidc: provider('slack_oidc'),
  /** `EXTERNAL_TWITCH_*`. */
  twitch: provider('twitch'),
  /** `EXTERNAL_TWITTER_*`. */
  twitter: provider('twitter'),
  /**
   * `EXTERNAL_VERCEL_MARKETPLACE_*`: Vercel Marketplace (upstream `vercel_marketplace`);
   * `EXTERNAL_VERCEL_MARKETPLACE_URL` replaces the API host and the issuer.
   */
  vercel_marketplace: provider('vercel_marketplace'),
  /** `EXTERNAL_WORKOS_*`. */
  workos: emailAssumedProvider('workos'),
  /** `EXTERNAL_X_*`: X over OAuth 2.0 with PKCE (beside the OAuth 1.0a `twitter`). */
  x: provider('x'),
  /** `EXTERNAL_ZOOM_*`. */
  zoom: provider('zoom'),
  /** `EXTERNAL_WEB3_ETHEREUM_*`: Sign in with Ethereum (EIP-4361). */
  web3Ethereum: web3Chain('ethereum', 'an Ethereum wallet (EIP-4361 messages signed as EIP-191)'),
  /** `EXTERNAL_WEB3_SOLANA_*`: Sign in with Solana (upstream's message, ed25519). */
  web3Solana: web3Chain(
    'solana',
    'a Solana wallet (Sign in with Solana messages signed with ed25519)',
  ),
})

/**
 * Checks every enabled provider's client (upstream `OAuthProviderConfiguration.ValidateOAuth`):
 * client id, secret and redirect URI set; keycloak's realm URL set; Apple's PEM key with its
 * team and key ids.
 */
function checkExternal(read: Report, v: Values<typeof external.fields>): void {
  for (const p of EXTERNAL_PROVIDERS) {
    if (!v[p].enabled) continue
    const needed = `required when EXTERNAL_${p.toUpperCase()}_ENABLED is true`
    const section: Group<ReturnType<typeof providerFields>> = external.fields[p]
    requireSet(read, section, v[p], ['clientId', 'secret', 'redirectUri'], needed)
  }
  if (v.keycloak.enabled && v.keycloak.url === '') {
    read.report(
      external.fields.keycloak.fields.url,
      'required when EXTERNAL_KEYCLOAK_ENABLED is true (the realm URL)',
    )
  }
  if (v.apple.enabled && v.apple.secret.includes('-----BEGIN')) {
    const message = 'required with a PEM EXTERNAL_APPLE_SECRET'
    requireSet(read, external.fields.apple, v.apple, ['teamId', 'keyId'], message)
  }
}

/**
 * `MAILER_URLPATHS_<KIND>`: a path such as `/verify`.
 *
 * @param kind The variable's suffix.
 * @param mails The mails whose link it is, for its description.
 */
function urlPath(kind: string, mails: string): Field<string> {
  return text(`MAILER_URLPATHS_${kind}`, {
    default: '/verify',
    help: `Path of the link in ${mails} mails, resolved against \`API_EXTERNAL_URL\`. An absolute path replaces its path (Supabase uses \`/auth/v1/verify\`).`,
    check: (value) =>
      /^[^\s?#]+$/.test(value) ? undefined : 'must be a path, without spaces, ? or #',
  })
}

/**
 * `MAILER_SUBJECTS_<KIND>`: a Go template; one that does not parse is refused at start, not at
 * the first send.
 *
 * @param kind The kind, or `<kind>` for the README's family row.
 * @param options Its default, or the README's text for the family's.
 */
function subjectField(
  kind: string,
  options: { readonly default?: string; readonly computedDefault?: string },
): Field<string> {
  return text(`MAILER_SUBJECTS_${kind.toUpperCase()}`, {
    ...options,
    help: 'Subject of this kind of mail, a Go template (see [Mail](#mail)). One that does not parse stops the server at start.',
    check: (value) => {
      try {
        parseTemplate(value)
        return undefined
      } catch (error) {
        return invalid(`is not a valid template: ${(error as Error).message}`)
      }
    },
  })
}

/**
 * `MAILER_TEMPLATES_<KIND>`: the URL of an HTML template.
 *
 * @param kind The kind, or `<kind>` for the README's family row.
 */
function templateField(kind: string): Field<string> {
  return text(`MAILER_TEMPLATES_${kind.toUpperCase()}`, {
    help: "URL of this kind's HTML template (relative: against `SITE_URL`); the built-in one when empty or unavailable. It is fetched within 5 s, at most 1 MiB, and cached 10 minutes; an unavailable URL is tried again a minute later.",
    note: 'built-in template',
  })
}

/**
 * The key of a `<LOCALE>` suffix: its canonical language tag (`PT_BR` and `pt_br` are `pt-BR`).
 *
 * @param suffix What follows the family's stem.
 */
function localeKey(suffix: string): string | Invalid {
  return canonicalLocale(suffix) ?? invalid('must end in a language tag such as DE or PT_BR')
}

/** How readers get a language, for the help of the `<LOCALE>` families. */
const LOCALE_HELP =
  '`<LOCALE>` is a language tag such as `DE` or `PT_BR`; a reader gets the language of `user_metadata.locale`, else of `Accept-Language`, as [Languages](#languages) says. Beyond upstream.'

/**
 * `MAILER_SUBJECTS_<KIND>_<LOCALE>`: the subjects of one kind by language (beyond upstream).
 *
 * @param kind The kind, or `<kind>` for the README's family row.
 */
function localeSubjectsField(kind: string): Field<Readonly<Record<string, string>>> {
  return family(`MAILER_SUBJECTS_${kind.toUpperCase()}_<LOCALE>`, subjectField(kind, {}), {
    key: localeKey,
    help: `Subject of this kind of mail in one language, a Go template. ${LOCALE_HELP}`,
  })
}

/**
 * `MAILER_TEMPLATES_<KIND>_<LOCALE>`: the template URLs of one kind by language (beyond upstream).
 *
 * @param kind The kind, or `<kind>` for the README's family row.
 */
function localeTemplatesField(kind: string): Field<Readonly<Record<string, string>>> {
  return family(`MAILER_TEMPLATES_${kind.toUpperCase()}_<LOCALE>`, templateField(kind), {
    key: localeKey,
    help: `URL of this kind's HTML template in one language, fetched and cached as \`MAILER_TEMPLATES_<KIND>\`. ${LOCALE_HELP}`,
  })
}

/**
 * `MAILER_NOTIFICATIONS_<KIND>_ENABLED`: one notification's switch.
 *
 * @param kind The notification kind, or `<kind>` for the README's family row.
 */
function notificationField(kind: string): Field<boolean> {
  const name = kind.replace(/_notification$/, '').toUpperCase()
  const kinds = NOTIFICATION_KINDS.map(
    (k) => `\`${k.replace(/_notification$/, '').toUpperCase()}\``,
  )
  return bool(`MAILER_NOTIFICATIONS_${name}_ENABLED`, {
    help: `Send this notification mail after the change it tells of (see [Mail](#mail)). The notifications: ${kinds.join(', ')}.`,
  })
}

/** `MAILER_SUBJECTS_<KIND>` for every kind. */
const subjectFields = Object.fromEntries(
  MAIL_KINDS.map((kind) => [kind, subjectField(kind, { default: DEFAULT_SUBJECTS[kind] })]),
) as Record<MailKind, Field<string>>

/** `MAILER_TEMPLATES_<KIND>` for every kind. */
const templateFields = Object.fromEntries(
  MAIL_KINDS.map((kind) => [kind, templateField(kind)]),
) as Record<MailKind, Field<string>>

/** `MAILER_SUBJECTS_<KIND>_<LOCALE>` for every kind. */
const localeSubjectFields = Object.fromEntries(
  MAIL_KINDS.map((kind) => [kind, localeSubjectsField(kind)]),
) as Record<MailKind, Field<Readonly<Record<string, string>>>>

/** `MAILER_TEMPLATES_<KIND>_<LOCALE>` for every kind. */
const localeTemplateFields = Object.fromEntries(
  MAIL_KINDS.map((kind) => [kind, localeTemplatesField(kind)]),
) as Record<MailKind, Field<Readonly<Record<string, string>>>>

/** `MAILER_NOTIFICATIONS_<KIND>_ENABLED` for the notification kinds. */
const notificationFields = Object.fromEntries(
  NOTIFICATION_KINDS.map((kind) => [notificationSwitch(kind), notificationField(kind)]),
) as Record<NotificationSwitch, Field<boolean>>

/** `MAILER_*`: what the mails say and link to, and how often they go. */
const mailer = group({
  /** `MAILER_AUTOCONFIRM`: email sign-ups are confirmed at once. @default false */
  autoconfirm: bool('MAILER_AUTOCONFIRM', {
    help: 'Email sign-ups are confirmed at once and get a session.',
  }),
  /**
   * `MAILER_LINK_CONFIRMATION_PAGE`: a mailed link opens a confirmation page whose button
   * consumes it, so that mail scanners and link previews cannot (beyond upstream). @default false
   */
  linkConfirmationPage: bool('MAILER_LINK_CONFIRMATION_PAGE', {
    help: 'Mailed links (`GET /verify`) answer a small confirmation page instead of consuming the link; its button (a form, no script) consumes it and redirects exactly as the link did. Mail security scanners and link previews that open links then cannot use them up. Beyond upstream; see [Scanner-proof links](#scanner-proof-links).',
  }),
  /**
   * `MAILER_OTP_EXP`: validity of links and OTPs in milliseconds (set in seconds). @default
   * 3600000 (upstream: 24 hours; see SECURITY.md)
   */
  otpExpMs: secondsInMs(
    integer('MAILER_OTP_EXP', {
      default: '3600',
      min: 1,
      help: "Validity of email links and codes, seconds. Upstream's default is `86400`; see [SECURITY.md](../../SECURITY.md) for why an hour.",
    }),
  ),
  /** `MAILER_OTP_LENGTH`: digits of email one-time codes, clamped to 6..10. @default 6 */
  otpLength: adjusted(
    integer('MAILER_OTP_LENGTH', {
      default: '6',
      help: 'Digits of email codes, 6 to 10 (others are clamped).',
    }),
    clamp(6, 10),
  ),
  /**
   * `MAILER_SECURE_EMAIL_CHANGE_ENABLED`: an email change must be confirmed from both the
   * current and the new address. @default true
   */
  secureEmailChangeEnabled: bool('MAILER_SECURE_EMAIL_CHANGE_ENABLED', {
    default: 'true',
    help: 'An email change needs the links sent to both the new and the current address.',
  }),
  /**
   * `MAILER_URLPATHS_<KIND>`: path (absolute, or relative to `API_EXTERNAL_URL`) of the link in
   * each mail; magic links use the recovery path (upstream). @default '/verify' each
   */
  urlPaths: group({
    invite: urlPath('INVITE', 'invite'),
    confirmation: urlPath('CONFIRMATION', 'confirmation'),
    recovery: urlPath('RECOVERY', 'recovery and magic link'),
    emailChange: urlPath('EMAIL_CHANGE', 'email change'),
  }),
  /**
   * `MAILER_SUBJECTS_<KIND>`: subject templates (Go-template placeholders, see
   * `mailer/template.ts`). Defaults: {@link DEFAULT_SUBJECTS}.
   */
  subjects: group(subjectFields),
  /**
   * `MAILER_TEMPLATES_<KIND>`: URL of each kind's HTML template (relative URLs are resolved
   * against `SITE_URL`); empty for the built-in one. @default ''
   */
  templates: group(templateFields),
  /**
   * `MAILER_SUBJECTS_<KIND>_<LOCALE>`: each kind's subjects by canonical language tag (`pt-BR`),
   * beyond upstream. @default {} each
   */
  localeSubjects: group(localeSubjectFields),
  /**
   * `MAILER_TEMPLATES_<KIND>_<LOCALE>`: each kind's template URLs by canonical language tag,
   * beyond upstream. @default {} each
   */
  localeTemplates: group(localeTemplateFields),
  /**
   * `MAILER_NOTIFICATIONS_<KIND>_ENABLED`: which change notifications are sent (keys: the
   * camelCase of the kind, see {@link notificationSwitch}). @default false each
   */
  notifications: group(notificationFields),
  /**
   * `SMTP_MAX_FREQUENCY`: shortest interval between two mails of one kind to one user, in
   * milliseconds (set as seconds or a Go duration). @default 900000 (the spec's 900 seconds)
   */
  maxFrequencyMs: secondsOrDuration('SMTP_MAX_FREQUENCY', {
    unit: 'ms',
    default: '900',
    help: "Shortest interval between two mails of one kind to one user, as seconds or a Go duration. The spec's 900 s; upstream's is `1m`.",
  }),
  /**
   * `MAILER_QUEUE_POLL_INTERVAL`: how often each instance looks for due jobs of the mail queue
   * (retries, and jobs queued by other instances or before a restart), in milliseconds; a
   * job queued by a request runs at once. @default 5000
   */
  queuePollIntervalMs: duration('MAILER_QUEUE_POLL_INTERVAL', {
    default: '5s',
    positive: true,
    help: "How often each instance looks for due jobs of the mail queue (Go duration). Due jobs are retries, and jobs left by other instances or before a restart; a request's own job runs at once.",
  }),
})

/** `SMTP_*`: the mail server. */
const smtp = group({
  /** `SMTP_HOST`: the SMTP server; empty means no mail is sent (upstream's noop mailer). */
  host: text('SMTP_HOST', {
    help: "SMTP server; empty: no mail is sent (upstream's noop mailer). With `MAILER_AUTOCONFIRM` off, a warning at start then says that email sign-ups cannot be confirmed.",
  }),
  /** `SMTP_PORT`: 465 is TLS from the start; others upgrade with STARTTLS when offered. */
  port: port('SMTP_PORT', {
    default: '587',
    help: 'SMTP port; `465` is TLS from the start, others use STARTTLS when the server offers it.',
  }),
  /** `SMTP_USER`: login, empty for none. @default '' */
  user: text('SMTP_USER', { help: 'SMTP login; none when empty.' }),
  /** `SMTP_PASS`: password (never logged). @default '' */
  pass: text('SMTP_PASS', { secret: true, help: 'SMTP password (never logged).' }),
  /** `SMTP_ADMIN_EMAIL`: the From address; required when `SMTP_HOST` is set. */
  adminEmail: text('SMTP_ADMIN_EMAIL', {
    help: 'The From address; required with `SMTP_HOST`.',
    check: (value) =>
      value === '' || /^[^\s@<>]+@[^\s@<>]+$/.test(value)
        ? undefined
        : 'must be an email address (name@domain)',
  }),
  /** `SMTP_SENDER_NAME`: display name of the From address (`Name <address>`). @default '' */
  senderName: text('SMTP_SENDER_NAME', {
    help: 'Display name of the From address, `"Name" <SMTP_ADMIN_EMAIL>`; the address alone when empty.',
  }),
})

/** A mail server needs a From address. */
function checkSmtp(read: Report, v: Values<typeof smtp.fields>): void {
  if (v.host !== '' && v.adminEmail === '') {
    read.report(smtp.fields.adminEmail, 'required when AUTHSVC_SMTP_HOST is set')
  }
}

/** `RATE_LIMIT_*`: request and send limits, and where they are counted. */
const rateLimit = group({
  /**
   * `RATE_LIMIT_EMAIL_SENT`: emails the server sends per period, across all users (only while
   * `MAILER_AUTOCONFIRM` is off), as upstream's `N` (per hour) or `N/<duration>`. @default 30/h
   */
  emailSent: field('RATE_LIMIT_EMAIL_SENT', parseEmailSendRate, {
    default: '30',
    help: 'Mails sent per hour across the server (`N`) or per duration (`N/10m`); `0` sends none. Not counted under `MAILER_AUTOCONFIRM`.',
  }),
  /**
   * `RATE_LIMIT_SMS_SENT`: SMS the server sends per period, across all users, as
   * `RATE_LIMIT_EMAIL_SENT`. @default 30/h
   */
  smsSent: field('RATE_LIMIT_SMS_SENT', parseSmsSendRate, {
    default: '30',
    help: 'SMS codes sent per hour across the server (`N`) or per duration (`N/10m`); beyond: `429 over_sms_send_rate_limit` "SMS rate limit exceeded".',
  }),
  /**
   * `RATE_LIMIT_TOKEN_REFRESH`: `POST /token` requests (every grant, as upstream) per client
   * and 5 minutes, burst 30. @default 150
   */
  tokenRefresh: decimal('RATE_LIMIT_TOKEN_REFRESH', {
    default: '150',
    min: 0,
    help: '`POST /token` requests per client and 5 minutes, burst 30. One bucket for password and PKCE grants, one for `refresh_token` (upstream: one for every grant).',
  }),
  /** `RATE_LIMIT_VERIFY`: `/verify` requests per client and 5 minutes, burst 30. @default 30 */
  verify: decimal('RATE_LIMIT_VERIFY', {
    default: '30',
    min: 0,
    help: '`/verify` requests per client and 5 minutes, burst 30.',
  }),
  /**
   * `RATE_LIMIT_OTP`: requests per client and 5 minutes, burst 30, on each of `/otp`
   * (`/magiclink`), `/recover`, `/resend`, `/signup` and `PUT /user`. @default 30
   */
  otp: decimal('RATE_LIMIT_OTP', {
    default: '30',
    min: 0,
    help: 'Requests per client and 5 minutes, burst 30, on each of `/otp` (`/magiclink`), `/recover`, `/resend`, `/signup` and `PUT /user`.',
  }),
  /**
   * `RATE_LIMIT_PASSKEY`: `POST /passkeys/authentication/options` requests per client and
   * 5 minutes, burst 30. @default 30
   */
  passkey: decimal('RATE_LIMIT_PASSKEY', {
    default: '30',
    min: 0,
    help: '`POST /passkeys/authentication/options` requests per client and 5 minutes, burst 30.',
  }),
  /** `RATE_LIMIT_SSO`: SSO requests per client and 5 minutes, burst 30. @default 30 */
  sso: decimal('RATE_LIMIT_SSO', {
    default: '30',
    min: 0,
    help: '`POST /sso` requests per client and 5 minutes, burst 30.',
  }),
  /** `RATE_LIMIT_WEB3`: Web3 sign-ins per client and 5 minutes, burst 30. @default 30 */
  web3: decimal('RATE_LIMIT_WEB3', {
    default: '30',
    min: 0,
    help: '`POST /token?grant_type=web3` requests per client and 5 minutes, burst 30, as upstream.',
  }),
  /**
   * `RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER`: `POST /oauth/clients/register` requests per
   * client and 5 minutes, burst 30, as upstream. @default 10
   */
  oauthDynamicClientRegister: decimal('RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER', {
    default: '10',
    min: 0,
    help: '`POST /oauth/clients/register` requests per client and 5 minutes, burst 30.',
  }),
  /**
   * `RATE_LIMIT_ANONYMOUS_USERS`: anonymous sign-ins (`POST /signup` without email and phone)
   * per client and hour, burst the same number, as upstream. @default 30
   */
  anonymousUsers: decimal('RATE_LIMIT_ANONYMOUS_USERS', {
    default: '30',
    min: 0,
    help: 'Anonymous sign-ins (`POST /signup` without email and phone) per client and hour, burst as many, as upstream; beyond: `429 over_request_rate_limit` (see [Rate limits](#rate-limits)).',
  }),
  /**
   * `RATE_LIMIT_BACKEND`: where budgets are counted: `memory` (each instance alone, as upstream)
   * or `ratelimit` (a shared `gatehouse-ratelimit` service over gRPC). @default 'memory'
   */
  backend: oneOf('RATE_LIMIT_BACKEND', ['memory', 'ratelimit'], {
    default: 'memory',
    help: '`memory`: each instance counts alone (upstream); `ratelimit`: every decision asked of `gatehouse-ratelimit`, one budget across instances.',
  }),
  /** `RATE_LIMIT_SERVICE_ADDRESS`: `host:port` of the rate limit service's gRPC listener. */
  serviceAddress: text('RATE_LIMIT_SERVICE_ADDRESS', {
    default: '127.0.0.1:8081',
    help: 'gRPC `host:port` of the rate limit service (`ratelimit` backend).',
    check: (value) =>
      /^\S+:\d{1,5}$/.test(value) ? undefined : 'must be host:port, such as 127.0.0.1:8081',
  }),
  /** `RATE_LIMIT_DOMAIN`: the domain of the requests and of the YAML config. */
  domain: text('RATE_LIMIT_DOMAIN', {
    default: 'gatehouse-auth',
    help: 'Domain of the decisions and of the generated YAML config.',
    check: (value) => (value === '' ? 'must not be empty' : undefined),
  }),
  /** `RATE_LIMIT_SERVICE_TIMEOUT`: deadline of one decision, in milliseconds. @default 250 */
  serviceTimeoutMs: duration('RATE_LIMIT_SERVICE_TIMEOUT', {
    default: '250ms',
    positive: true,
    help: 'Deadline of one decision (Go duration); past it the service counts as unreachable.',
  }),
  /**
   * `RATE_LIMIT_SERVICE_COALESCE`: send the decisions of one event-loop turn as one
   * `ShouldRateLimit` call when the service allows it (its `gatehouse-coalesce-max-descriptors`
   * header; not with `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true`): the `coalesce` option of
   * `RateLimitClient`. @default true
   */
  serviceCoalesce: bool('RATE_LIMIT_SERVICE_COALESCE', {
    default: 'true',
    help: 'Decisions made in one event-loop turn go to the service as one gRPC call when it allows it; `false` sends one call per decision. See [One budget across instances](#one-budget-across-instances-rate_limit_backendratelimit).',
  }),
  /**
   * `RATE_LIMIT_SERVICE_ALGORITHM`: how the service counts a client's budget, and so the
   * descriptors the limiter sends and the config `gatehouse-auth ratelimit-config` prints:
   * `token_bucket` (upstream's bucket exactly, one descriptor; the service's Redis and memory
   * backends) or `fixed_window` (a burst per minute and a rate per hour, two descriptors; for
   * a memcache backend or envoyproxy/ratelimit). @default 'token_bucket'
   */
  serviceAlgorithm: oneOf('RATE_LIMIT_SERVICE_ALGORITHM', SERVICE_ALGORITHMS, {
    default: 'token_bucket',
    help: "How the service counts a client's budget, `token_bucket` or `fixed_window`; it must match the deployed config. `token_bucket` is upstream's bucket exactly, one descriptor per decision (the service's Redis or memory backend); `fixed_window` a burst per minute and a rate per hour, two descriptors (a memcache backend or envoyproxy/ratelimit). See [One budget across instances](#one-budget-across-instances-rate_limit_backendratelimit).",
  }),
  /**
   * `RATE_LIMIT_FAIL_CLOSED`: with the service unreachable, refuse with 503 instead of allowing
   * (logged and counted either way). @default false
   */
  failClosed: bool('RATE_LIMIT_FAIL_CLOSED', {
    help: 'With the rate limit service unreachable, answer `503` instead of allowing requests; logged and counted either way. The send caps (`RATE_LIMIT_EMAIL_SENT`, `RATE_LIMIT_SMS_SENT`) never fail open: each instance counts them in process until the service is back.',
  }),
  /**
   * `RATE_LIMIT_PASSWORD_FAILURES`: failed password sign-ins per email or phone before each
   * further one is refused for a growing delay (1 s, doubling, at most 15 min); 0 disables.
   * @default 5
   */
  passwordFailures: integer('RATE_LIMIT_PASSWORD_FAILURES', {
    default: '5',
    min: 0,
    help: 'Failed password sign-ins per email or phone before back-off; `0` turns it off. The back-off is 1 s, doubling, at most 15 min. Beyond upstream.',
  }),
  /**
   * `RATE_LIMIT_TRUSTED_PROXY_HOPS`: proxies in front of this server that append to the
   * `RATE_LIMIT_HEADER` (or `Svc-Forwarded-For`) list; the client key is the value this many
   * places from the right, the one the outermost trusted proxy appended (the values left of it
   * are the client's own). @default 1
   */
  trustedProxyHops: integer('RATE_LIMIT_TRUSTED_PROXY_HOPS', {
    default: '1',
    min: 1,
    help: 'Proxies in front of the server that append to the `RATE_LIMIT_HEADER` (or `Svc-Forwarded-For`) list. The client key is the value this many places from the right, never one the client wrote (see [Rate limits](#rate-limits)).',
  }),
})

/** A provider base URL: only its scheme, host and port are used. */
function providerUrl(name: string, fallback: string, provider: string): Field<string> {
  return url(name, {
    default: fallback,
    help: `Scheme, host and port of the ${provider} API (tests, proxies); the path stays ${provider}'s.`,
  })
}

/** `SMS_*`: phone sign-in codes and who sends them. */
const sms = group({
  /** `SMS_AUTOCONFIRM`: phone sign-ups are confirmed at once. @default false */
  autoconfirm: bool('SMS_AUTOCONFIRM', {
    help: 'Phone sign-ups are confirmed at once; a duplicate phone is then `400 User already registered`.',
  }),
  /** `SMS_PROVIDER`: who sends SMS messages; `''` sends none. @default '' */
  provider: field(
    'SMS_PROVIDER',
    (value): SmsProviderName | '' | Invalid =>
      value === ''
        ? ''
        : (SMS_PROVIDERS.find((p) => p === value) ??
          invalid(`must be one of ${SMS_PROVIDERS.join(', ')}`)),
    {
      help: `Who sends SMS codes: ${SMS_PROVIDERS.map((p) => `\`${p}\``).join(', ')} (see [SMS](#sms)); empty sends none. A phone sign-up then fails with \`422 sms_send_failed\` unless \`SMS_AUTOCONFIRM\`, which a warning at start says when \`EXTERNAL_PHONE_ENABLED\` is on.`,
    },
  ),
  /** `SMS_OTP_EXP`: validity of SMS codes in milliseconds (set in seconds). @default 60000 */
  otpExpMs: secondsInMs(
    integer('SMS_OTP_EXP', { default: '60', min: 1, help: 'Validity of SMS codes, seconds.' }),
  ),
  /** `SMS_OTP_LENGTH`: digits of SMS codes (clamped to 6..10, as upstream). @default 6 */
  otpLength: adjusted(
    integer('SMS_OTP_LENGTH', {
      default: '6',
      help: 'Digits of SMS codes, 6 to 10 (others are clamped).',
    }),
    clamp(6, 10),
  ),
  /**
   * `SMS_MAX_FREQUENCY`: shortest interval between two SMS codes to one user, in milliseconds
   * (set as seconds or a Go duration). @default 60000
   */
  maxFrequencyMs: secondsOrDuration('SMS_MAX_FREQUENCY', {
    unit: 'ms',
    default: '60',
    help: 'Shortest interval between two SMS codes to one user, as seconds or a Go duration; sooner: `429 over_sms_send_rate_limit`.',
  }),
  /** `SMS_TEMPLATE`: the message, a Go template with `{{ .Code }}`. */
  template: text('SMS_TEMPLATE', {
    default: 'Your code is {{ .Code }}',
    help: 'The SMS text; `{{ .Code }}` is the code (not HTML-escaped).',
  }),
  /**
   * `SMS_TEMPLATE_<LOCALE>`: the SMS text by canonical language tag (`pt-BR`), beyond upstream.
   * @default {}
   */
  localeTemplates: family('SMS_TEMPLATE_<LOCALE>', text('SMS_TEMPLATE'), {
    key: localeKey,
    help: `The SMS text in one language, as \`SMS_TEMPLATE\`. ${LOCALE_HELP}`,
  }),
  /**
   * `SMS_TEST_OTP_VALID_UNTIL`: epoch milliseconds after which `SMS_TEST_OTP` no longer
   * applies (set as an RFC 3339 time); `null` for always.
   */
  testOtpValidUntil: field(
    'SMS_TEST_OTP_VALID_UNTIL',
    (value): number | null | Invalid => {
      if (value === '') return null
      const ms = Date.parse(value)
      return /^\d{4}-\d\d-\d\dT/.test(value) && Number.isFinite(ms)
        ? ms
        : invalid('must be an RFC 3339 time such as 2030-01-01T00:00:00Z')
    },
    { help: 'RFC 3339 time after which `SMS_TEST_OTP` no longer applies.', note: 'always' },
  ),
  /**
   * `SMS_TEST_OTP`: `<phone>:<otp>,…`; these phones (E.164 digits without `+`) get no SMS and
   * their fixed code is used.
   */
  testOtp: field('SMS_TEST_OTP', parseTestOtp, {
    help: '`<phone>:<otp>,…`: these numbers get no SMS and always this code (message id `test-otp`); for tests and app-store reviews.',
  }),
  /** `SMS_TWILIO_*`. */
  twilio: group({
    /** `SMS_TWILIO_ACCOUNT_SID`. */
    accountSid: text('SMS_TWILIO_ACCOUNT_SID', {
      help: 'Twilio account SID; required with `twilio`.',
    }),
    /** `SMS_TWILIO_AUTH_TOKEN` (never logged). */
    authToken: text('SMS_TWILIO_AUTH_TOKEN', {
      secret: true,
      help: 'Twilio auth token (basic authentication; never logged); required with `twilio`.',
    }),
    /** `SMS_TWILIO_MESSAGE_SERVICE_SID`: the sender (`From`): a messaging service or a number. */
    messageServiceSid: text('SMS_TWILIO_MESSAGE_SERVICE_SID', {
      help: 'The sender (`From`): a messaging service SID or a phone number; required with `twilio`.',
    }),
    /** `SMS_TWILIO_CONTENT_SID`: WhatsApp content template whose variable `1` is the code. */
    contentSid: text('SMS_TWILIO_CONTENT_SID', {
      help: 'WhatsApp content template whose variable `1` is the code (channel `whatsapp`).',
    }),
    /** `SMS_TWILIO_API_URL`: scheme, host and port replacing `https://api.twilio.com`. */
    apiUrl: providerUrl('SMS_TWILIO_API_URL', 'https://api.twilio.com', 'Twilio'),
  }),
  /** `SMS_TWILIO_VERIFY_*`. */
  twilioVerify: group({
    /** `SMS_TWILIO_VERIFY_ACCOUNT_SID`. */
    accountSid: text('SMS_TWILIO_VERIFY_ACCOUNT_SID', {
      help: 'Twilio account SID for Twilio Verify; required with `twilio_verify`.',
    }),
    /** `SMS_TWILIO_VERIFY_AUTH_TOKEN` (never logged). */
    authToken: text('SMS_TWILIO_VERIFY_AUTH_TOKEN', {
      secret: true,
      help: 'Twilio auth token for Twilio Verify (never logged); required with `twilio_verify`.',
    }),
    /** `SMS_TWILIO_VERIFY_MESSAGE_SERVICE_SID`: the Verify service SID (`VA…`). */
    messageServiceSid: text('SMS_TWILIO_VERIFY_MESSAGE_SERVICE_SID', {
      help: 'The Verify service SID (`VA…`); required with `twilio_verify`.',
    }),
    /** `SMS_TWILIO_VERIFY_API_URL`: scheme, host and port replacing `https://verify.twilio.com`. */
    apiUrl: providerUrl('SMS_TWILIO_VERIFY_API_URL', 'https://verify.twilio.com', 'Twilio Verify'),
  }),
  /** `SMS_MESSAGEBIRD_*`. */
  messagebird: group({
    /** `SMS_MESSAGEBIRD_ACCESS_KEY` (never logged). */
    accessKey: text('SMS_MESSAGEBIRD_ACCESS_KEY', {
      secret: true,
      help: 'MessageBird access key (never logged); required with `messagebird`.',
    }),
    /** `SMS_MESSAGEBIRD_ORIGINATOR`: the sender. */
    originator: text('SMS_MESSAGEBIRD_ORIGINATOR', {
      help: 'MessageBird sender; required with `messagebird`.',
    }),
    /** `SMS_MESSAGEBIRD_API_URL`: replaces `https://rest.messagebird.com`. */
    apiUrl: providerUrl('SMS_MESSAGEBIRD_API_URL', 'https://rest.messagebird.com', 'MessageBird'),
  }),
  /** `SMS_TEXTLOCAL_*`. */
  textlocal: group({
    /** `SMS_TEXTLOCAL_API_KEY` (never logged). */
    apiKey: text('SMS_TEXTLOCAL_API_KEY', {
      secret: true,
      help: 'Textlocal API key (never logged); required with `textlocal`.',
    }),
    /** `SMS_TEXTLOCAL_SENDER`: the sender. */
    sender: text('SMS_TEXTLOCAL_SENDER', { help: 'Textlocal sender; required with `textlocal`.' }),
    /** `SMS_TEXTLOCAL_API_URL`: replaces `https://api.textlocal.in`. */
    apiUrl: providerUrl('SMS_TEXTLOCAL_API_URL', 'https://api.textlocal.in', 'Textlocal'),
  }),
  /** `SMS_VONAGE_*`. */
  vonage: group({
    /** `SMS_VONAGE_API_KEY`. */
    apiKey: text('SMS_VONAGE_API_KEY', { help: 'Vonage API key; required with `vonage`.' }),
    /** `SMS_VONAGE_API_SECRET` (never logged). */
    apiSecret: text('SMS_VONAGE_API_SECRET', {
      secret: true,
      help: 'Vonage API secret (never logged); required with `vonage`.',
    }),
    /** `SMS_VONAGE_FROM`: the sender. */
    from: text('SMS_VONAGE_FROM', { help: 'Vonage sender; required with `vonage`.' }),
    /** `SMS_VONAGE_API_URL`: replaces `https://rest.nexmo.com`. */
    apiUrl: providerUrl('SMS_VONAGE_API_URL', 'https://rest.nexmo.com', 'Vonage'),
  }),
})

/** The chosen `SMS_PROVIDER` needs its credentials. */
function checkSms(read: Report, v: Values<typeof sms.fields>): void {
  const message = `required when AUTHSVC_SMS_PROVIDER is ${v.provider}`
  const f = sms.fields
  const sid = ['accountSid', 'authToken', 'messageServiceSid'] as const
  if (v.provider === 'twilio') requireSet(read, f.twilio, v.twilio, sid, message)
  if (v.provider === 'twilio_verify') requireSet(read, f.twilioVerify, v.twilioVerify, sid, message)
  if (v.provider === 'messagebird') {
    requireSet(read, f.messagebird, v.messagebird, ['accessKey', 'originator'], message)
  }
  if (v.provider === 'textlocal')
    requireSet(read, f.textlocal, v.textlocal, ['apiKey', 'sender'], message)
  if (v.provider === 'vonage') {
    requireSet(read, f.vonage, v.vonage, ['apiKey', 'apiSecret', 'from'], message)
  }
}

/** Whether `value` is upstream's SAML key: standard Base64 of a PKCS#1 RSA key, e 65537, ≥ 2048 bits. */
function checkSamlKey(value: string): string | undefined {
  if (value === '') return undefined
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value.replace(/\s+/g, ''))) {
    return 'must be a standard Base64 PKCS#1 RSA private key'
  }
  let key: KeyObject
  try {
    key = createPrivateKey({ key: Buffer.from(value, 'base64'), format: 'der', type: 'pkcs1' })
  } catch {
    return 'must be a PKCS#1 RSA private key (DER, standard Base64)'
  }
  const details = key.asymmetricKeyDetails
  if (details?.publicExponent !== 65537n) return 'must use the 65537 RSA public exponent'
  if ((details.modulusLength ?? 0) < 2048) return 'must be at least RSA 2048'
  return undefined
}

/** `SAML_*`: SAML 2.0 single sign-on, this server the service provider (upstream `SAMLConfiguration`). */
const saml = group({
  /** `SAML_ENABLED`: serve `/sso`, `/sso/saml/*` and `/admin/sso/*`. @default false */
  enabled: bool('SAML_ENABLED', {
    help: 'SAML 2.0 single sign-on: `/sso`, `/sso/saml/metadata`, `/sso/saml/acs` and `/admin/sso/providers`; off, they answer `404 saml_provider_disabled`. Needs `SAML_PRIVATE_KEY`.',
  }),
  /** `SAML_PRIVATE_KEY`: the service provider's RSA key, standard Base64 of PKCS#1 DER. */
  privateKey: text('SAML_PRIVATE_KEY', {
    secret: true,
    help: "The service provider's RSA key (at least 2048 bits, exponent 65537) as standard Base64 of its PKCS#1 DER (`openssl genrsa -traditional 2048 | openssl rsa -traditional -outform DER | base64 -w0`); signs authentication requests and decrypts assertions. Its self-signed certificate is in the metadata.",
    check: checkSamlKey,
  }),
  /** `SAML_PRIVATE_KEY_NEXT`: the key that replaces `SAML_PRIVATE_KEY` next (rotation). */
  privateKeyNext: text('SAML_PRIVATE_KEY_NEXT', {
    secret: true,
    help: 'The key that replaces `SAML_PRIVATE_KEY` next, in the same format: its certificate is announced in the metadata, and an encrypted assertion the primary key cannot decrypt is tried with it.',
    check: checkSamlKey,
  }),
  /** `SAML_ALLOW_ENCRYPTED_ASSERTIONS`: accept encrypted assertions (announce the encryption key). */
  allowEncryptedAssertions: bool('SAML_ALLOW_ENCRYPTED_ASSERTIONS', {
    help: 'Accept encrypted assertions and announce the encryption certificate in the metadata; off, an encrypted assertion is refused.',
  }),
  /**
   * `SAML_RELAY_STATE_VALIDITY_PERIOD`: how long a sign-in started at `/sso` may take, in
   * milliseconds. @default 120000
   */
  relayStateValidityPeriodMs: duration('SAML_RELAY_STATE_VALIDITY_PERIOD', {
    default: '2m',
    positive: true,
    help: 'How long a sign-in started at `/sso` may take at the identity provider (Go duration); later, `/sso/saml/acs` answers `saml_relay_state_expired`.',
  }),
  /** `SAML_EXTERNAL_URL`: base of the service provider URLs; `API_EXTERNAL_URL` when empty. */
  externalUrl: text('SAML_EXTERNAL_URL', {
    help: 'Base URL of the service provider (its entity ID is `<base>/sso/saml/metadata`, its ACS `<base>/sso/saml/acs`); `API_EXTERNAL_URL` when empty.',
    check: (value) => {
      if (value === '') return undefined
      try {
        new URL(value)
        return undefined
      } catch {
        return 'must be an absolute URL'
      }
    },
  }),
  /** `SAML_RATE_LIMIT_ASSERTION`: `/sso/saml/acs` posts per client and 5 minutes. @default 15 */
  rateLimitAssertion: decimal('SAML_RATE_LIMIT_ASSERTION', {
    default: '15',
    min: 0,
    help: '`POST /sso/saml/acs` requests per client and 5 minutes, burst 30.',
  }),
})

/** `SAML_ENABLED` needs `SAML_PRIVATE_KEY`. */
function checkSaml(read: Report, v: Values<typeof saml.fields>): void {
  if (v.enabled && v.privateKey === '') {
    read.report(saml.fields.privateKey, 'required when AUTHSVC_SAML_ENABLED is true')
  }
}

/**
 * Every setting the server reads, in `--help` order, with its names, default and meaning written
 * once. Names get the prefixes `AUTHSVC_` then `GOTRUE_`; a second name (`PORT`, `DATABASE_URL`,
 * `LOG_LEVEL`) is also read as written.
 */
export const settingsTable = defineSettings(
  {
    /** `SITE_URL`: base URL of the site; required. */
    siteUrl: url('SITE_URL', {
      required: true,
      help: 'Base URL of the site. Its same-host URLs are valid `redirect_to` targets.',
    }),
    /** `API_EXTERNAL_URL`: the URL this server is reached at; required. */
    apiExternalUrl: url('API_EXTERNAL_URL', {
      required: true,
      help: 'URL this server is reached at, used in the links it sends.',
    }),
    /** The database: `DB_*`, `DATABASE_URL`. */
    db,
    /** Access tokens: `JWT_*`. */
    jwt,
    /** `URI_ALLOW_LIST`: extra permitted `redirect_to` values (globs). @default [] */
    uriAllowList: list('URI_ALLOW_LIST', {
      help: 'Extra `redirect_to` globs, comma-separated. `*` stops at `.` and `/`, `**` crosses (see [Mail](#mail)); a malformed one is refused at start.',
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
    /** `DISABLE_SIGNUP`: users are only created through invites and the admin API. */
    disableSignup: bool('DISABLE_SIGNUP', {
      help: 'Users only through invites and the admin API.',
    }),
    /** `API_HOST`: listen address. @default '0.0.0.0' */
    apiHost: text('API_HOST', { default: '0.0.0.0', help: 'Listen address.' }),
    /** `PORT` (no prefix) or `API_PORT`: listen port. @default 8081 */
    port: integer(['API_PORT', 'PORT'], { default: '8081', help: 'Listen port.' }),
    /**
     * `API_MAX_REQUEST_DURATION`: longest a request may take, in milliseconds (set as seconds or
     * a Go duration such as `10s`); then 504 `request_timeout`. 0 means no limit. @default 10000
     */
    apiMaxRequestDurationMs: secondsOrDuration('API_MAX_REQUEST_DURATION', {
      unit: 'ms',
      default: '10s',
      help: "Longest a request may take, as seconds or a Go duration; `0`: no limit. Then `504 request_timeout`, the request's queued work is dropped and its transaction rolled back (a commit already sent is waited for).",
    }),
    /** `REQUEST_ID_HEADER`: incoming header whose value becomes the request id. @default '' */
    requestIdHeader: text('REQUEST_ID_HEADER', {
      help: 'Incoming header whose value becomes the request id in logs.',
    }),
    /** `API_OPENAPI_ENABLED`: serve the API's OpenAPI 3.1 document at `/openapi.json`. */
    apiOpenapiEnabled: bool('API_OPENAPI_ENABLED', {
      help: 'Serve the OpenAPI 3.1 document of the API at `/openapi.json` ([OpenAPI document](#openapi-document)).',
    }),
    /** `RATE_LIMIT_HEADER`: header identifying the client for rate limits (trusted proxy). */
    rateLimitHeader: text('RATE_LIMIT_HEADER', {
      help: 'Header identifying the client for rate limits, set by a trusted proxy.',
    }),
    /** `SECURITY_SVC_FORWARDED_FOR_ENABLED`: first `Svc-Forwarded-For` value is the client IP. */
    svcForwardedForEnabled: bool('SECURITY_SVC_FORWARDED_FOR_ENABLED', {
      help: 'First `Svc-Forwarded-For` value is the client IP (trusted proxies only).',
    }),
    /** Logging: `LOG_LEVEL`, `LOG_FILE`. */
    log,
    /** Traces and metrics (`TRACING_*`, `METRICS_*`, the standard `OTEL_*` variables). */
    telemetry,
    /** Password rules and hashing: `PASSWORD_*`. */
    password,
    /** Multi-factor authentication: `MFA_*`. */
    mfa,
    /** Passkeys: `PASSKEY_*`. */
    passkey,
    /** The WebAuthn relying party: `WEBAUTHN_*`. */
    webauthn,
    /** `SECURITY_*`, with the captcha settings. */
    security,
    /** Session lifetime and count: `SESSIONS_*`. */
    sessions,
    /** Custom OAuth/OIDC providers: `CUSTOM_OAUTH_*`. */
    customOauth,
    /** The OAuth 2.1 / OpenID Connect provider: `OAUTH_SERVER_*`. */
    oauthServer,
    /** Sign-in methods and external OAuth providers: `EXTERNAL_*`. */
    external,
    /** Mail contents and pace: `MAILER_*`, `SMTP_MAX_FREQUENCY`. */
    mailer,
    /** The mail server: `SMTP_*`. */
    smtp,
    /** Request and send limits: `RATE_LIMIT_*`. */
    rateLimit,
    /** Phone codes and SMS providers: `SMS_*`. */
    sms,
    /** Auth hooks: `HOOK_*`. */
    hook,
    /** SAML 2.0 single sign-on: `SAML_*`. */
    saml,
  },
  {
    // AUTHSVC_ wins over GOTRUE_ (and both over an unprefixed name), as it always has.
    prefixes: ['AUTHSVC_', 'GOTRUE_'],
    conflicts: 'first',
    computedDefaults: ({ security: s }) => ({
      security: { captcha: { verifyUrl: CAPTCHA_VERIFY_URLS[s.captcha.provider] } },
    }),
  },
)

/**
 * The families of settings the README documents one row each (`EXTERNAL_<PROVIDER>_*`,
 * `MAILER_SUBJECTS_<KIND>`, `MAILER_TEMPLATES_<KIND>`, `MAILER_NOTIFICATIONS_<KIND>_ENABLED`):
 * the fields of {@link settingsTable}'s families, made by the same builders with a placeholder
 * for the provider or kind. Documentation only: never read.
 */
export const settingsFamilies = defineSettings({
  provider: group({ ...providerFields('<provider>'), trustEmail: trustEmailField('<provider>') }),
  subjects: subjectField('<kind>', { computedDefault: 'see [Mail](#mail)' }),
  templates: templateField('<kind>'),
  localeSubjects: localeSubjectsField('<kind>'),
  localeTemplates: localeTemplatesField('<kind>'),
  notifications: notificationField('<kind>'),
})

/** The validated, frozen configuration of the auth server: the values of {@link settingsTable}. */
export type Settings = SettingsOf<typeof settingsTable>

/** The `MFA_*` settings (upstream `MFAConfiguration`). */
export type MfaSettings = Settings['mfa']

/** `SECURITY_CAPTCHA_*`. */
export type CaptchaSettings = Settings['security']['captcha']

/** `PASSWORD_HIBP_*`: leaked-password protection. */
export type HibpSettings = Settings['password']['hibp']

/** One external provider's OAuth client (`EXTERNAL_<P>_*`); see `Settings['external']`. */
export type ProviderSettings = Settings['external'][ExternalProvider]

/**
 * Builds the settings from environment variables (pure: reads only `env`).
 *
 * Each setting `NAME` is read as `AUTHSVC_NAME`, else `GOTRUE_NAME` (upstream's prefix); the
 * spec's "(no prefix)" variables (`PORT`, `DATABASE_URL`, `LOG_LEVEL`) are also read without a
 * prefix, after the prefixed forms `API_PORT`, `DB_DATABASE_URL` and `LOG_LEVEL`.
 *
 * @param env Variables, typically `{ ...dotEnvFile, ...process.env }`.
 * @returns Deep-frozen settings.
 * @throws `SettingsError` (`@gatehouse/settings`, `code` `ERR_INVALID_SETTINGS`) Listing every
 *   problem, one a line as `NAME: problem (got "…")`: missing required values, bad numbers, ….
 */
export function loadSettings(env: Env): Settings {
  const read = settingsTable.read(env)
  const { values } = read
  checkJwt(read, values.jwt)
  checkCaptcha(read, values.security.captcha)
  checkExternal(read, values.external)
  checkSmtp(read, values.smtp)
  checkSms(read, values.sms)
  checkHooks(read, values.hook)
  checkWebauthn(read, values.webauthn, {
    passkey: values.passkey.enabled,
    mfa: values.mfa.webAuthnEnrollEnabled || values.mfa.webAuthnVerifyEnabled,
  })
  checkSaml(read, values.saml)
  return read.finish(values)
}
