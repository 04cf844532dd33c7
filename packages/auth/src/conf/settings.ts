import { parseGoDuration } from './duration.js'

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
  }
  readonly log: {
    /** `LOG_LEVEL` (no prefix). @default 'info' */
    readonly level: LogLevel
    /** `LOG_FILE`: append logs to this file instead of standard output. @default '' */
    readonly file: string
  }
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
  }
  readonly external: {
    /** `EXTERNAL_EMAIL_ENABLED`. @default true */
    readonly emailEnabled: boolean
    /** `EXTERNAL_PHONE_ENABLED`. @default false */
    readonly phoneEnabled: boolean
    /** `EXTERNAL_ANONYMOUS_USERS_ENABLED`. @default false */
    readonly anonymousUsersEnabled: boolean
    /** `EXTERNAL_<P>_ENABLED` for each of {@link EXTERNAL_PROVIDERS}. @default false */
    readonly providers: Readonly<Record<ExternalProvider, boolean>>
  }
  readonly mailer: {
    /** `MAILER_AUTOCONFIRM`: email sign-ups are confirmed at once. @default false */
    readonly autoconfirm: boolean
    /** `MAILER_OTP_EXP`: validity of links and OTPs in seconds. @default 86400 */
    readonly otpExp: number
  }
  readonly sms: {
    /** `SMS_AUTOCONFIRM`: phone sign-ups are confirmed at once. @default false */
    readonly autoconfirm: boolean
    /** `SMS_PROVIDER`. @default '' */
    readonly provider: string
  }
}

/**
 * Thrown by {@link loadSettings} when the configuration is invalid; lists every problem, one a
 * line, as `NAME: problem (got "…")`.
 */
export class ConfigError extends Error {
  /** Every problem found, one per entry. */
  readonly problems: readonly string[]
  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

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

/** Settings whose values are never echoed in errors (the password hashing bounds are not secret). */
const SECRET_NAMES = /SECRET|PASSWORD(?!_HASH_)|KEYS|DATABASE_URL/

/** Reads variables by their spec name, trying `AUTHSVC_`, then `GOTRUE_`, then unprefixed aliases. */
class EnvReader {
  readonly problems: string[] = []
  readonly #env: Readonly<Record<string, string | undefined>>
  constructor(env: Readonly<Record<string, string | undefined>>) {
    this.#env = env
  }

  /** Returns `[displayName, value]` of the first set variable among the candidates. */
  lookup(name: string, unprefixed: readonly string[] = []): [string, string | undefined] {
    for (const candidate of [`AUTHSVC_${name}`, `GOTRUE_${name}`, ...unprefixed]) {
      const value = this.#env[candidate]
      if (value !== undefined && value !== '') return [candidate, value]
    }
    return [`AUTHSVC_${name}`, undefined]
  }

  problem(name: string, message: string, value?: string): void {
    const shown =
      value === undefined ? '' : SECRET_NAMES.test(name) ? ' (got a value)' : ` (got "${value}")`
    this.problems.push(`${name}: ${message}${shown}`)
  }

  string(name: string, fallback: string, unprefixed: readonly string[] = []): string {
    return this.lookup(name, unprefixed)[1] ?? fallback
  }

  required(name: string, unprefixed: readonly string[] = []): string {
    const [shown, value] = this.lookup(name, unprefixed)
    if (value === undefined) {
      this.problem(
        unprefixed.length > 0 ? `${shown} (or ${unprefixed.join(', ')})` : shown,
        'required',
      )
      return ''
    }
    return value
  }

  bool(name: string, fallback: boolean): boolean {
    const [shown, value] = this.lookup(name)
    if (value === undefined) return fallback
    const v = value.toLowerCase()
    if (['1', 't', 'true', 'yes', 'on'].includes(v)) return true
    if (['0', 'f', 'false', 'no', 'off'].includes(v)) return false
    this.problem(shown, 'must be a boolean (true or false)', value)
    return fallback
  }

  int(name: string, fallback: number, min: number, unprefixed: readonly string[] = []): number {
    const [shown, value] = this.lookup(name, unprefixed)
    if (value === undefined) return fallback
    if (!/^-?\d+$/.test(value.trim()) || Number(value) < min) {
      this.problem(shown, `must be an integer of at least ${String(min)}`, value)
      return fallback
    }
    return Number(value)
  }

  url(name: string, value: string): void {
    if (value === '') return
    try {
      new URL(value)
    } catch {
      this.problem(name, 'must be an absolute URL', value)
    }
  }

  list(name: string, fallback: readonly string[]): readonly string[] {
    const value = this.lookup(name)[1]
    if (value === undefined) return fallback
    return value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
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

function parseKeys(reader: EnvReader): Record<string, unknown>[] {
  const [shown, raw] = reader.lookup('JWT_KEYS')
  if (raw === undefined) return []
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    reader.problem(shown, 'must be a JSON array of JWKs', undefined)
    return []
  }
  const list: unknown[] = Array.isArray(parsed) ? parsed : [parsed]
  const keys: Record<string, unknown>[] = []
  list.forEach((key, index) => {
    if (
      typeof key !== 'object' ||
      key === null ||
      typeof (key as { kty?: unknown }).kty !== 'string'
    ) {
      reader.problem(shown, `key ${String(index)} is not a JWK (an object with "kty")`)
      return
    }
    keys.push(key as Record<string, unknown>)
  })
  return keys
}

function reuseInterval(reader: EnvReader): number {
  const [shown, value] = reader.lookup('SECURITY_REFRESH_TOKEN_REUSE_INTERVAL')
  if (value === undefined) return 0
  if (/^\d+$/.test(value)) return Number(value)
  try {
    const ms = parseGoDuration(value)
    if (ms >= 0) return ms / 1000
  } catch {
    // reported below
  }
  reader.problem(shown, 'must be a number of seconds or a duration such as 10s', value)
  return 0
}

function maxRequestDuration(reader: EnvReader): number {
  const [shown, value] = reader.lookup('API_MAX_REQUEST_DURATION')
  if (value === undefined) return 10_000
  if (/^\d+$/.test(value)) return Number(value) * 1000
  try {
    const ms = parseGoDuration(value)
    if (ms >= 0) return Math.ceil(ms)
  } catch {
    // reported below
  }
  reader.problem(shown, 'must be a number of seconds or a duration such as 10s', value)
  return 10_000
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const inner of Object.values(value)) deepFreeze(inner)
  }
  return value
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
export function loadSettings(env: Readonly<Record<string, string | undefined>>): Settings {
  const r = new EnvReader(env)

  const siteUrl = r.required('SITE_URL')
  r.url(r.lookup('SITE_URL')[0], siteUrl)
  const apiExternalUrl = r.required('API_EXTERNAL_URL')
  r.url(r.lookup('API_EXTERNAL_URL')[0], apiExternalUrl)

  const [driverName, driver] = r.lookup('DB_DRIVER')
  if (driver === undefined) r.problem(driverName, 'required; must be postgres')
  else if (driver !== 'postgres') r.problem(driverName, 'must be postgres', driver)

  const dbUrl = r.required('DB_DATABASE_URL', ['DATABASE_URL'])
  if (dbUrl !== '' && !/^(postgres(ql)?|pglite):\/\//.test(dbUrl)) {
    r.problem(
      r.lookup('DB_DATABASE_URL', ['DATABASE_URL'])[0],
      'must start with postgres://, postgresql:// or pglite://',
    )
  }
  const [nsName, namespace = ''] = r.lookup('DB_NAMESPACE')
  if (namespace !== '' && !/^[a-z_][a-z0-9_]{0,30}$/.test(namespace)) {
    r.problem(nsName, 'must be lower-case letters, digits and underscores', namespace)
  }

  const [levelName, levelRaw] = r.lookup('LOG_LEVEL', ['LOG_LEVEL'])
  let level: LogLevel = 'info'
  if (levelRaw !== undefined) {
    const lower = levelRaw.toLowerCase() === 'warning' ? 'warn' : levelRaw.toLowerCase()
    if ((LOG_LEVELS as readonly string[]).includes(lower)) level = lower as LogLevel
    else r.problem(levelName, `must be one of ${LOG_LEVELS.join(', ')}`, levelRaw)
  }

  const keys = parseKeys(r)
  const [secretName, jwtSecret = ''] = r.lookup('JWT_SECRET')
  if (jwtSecret === '' && keys.length === 0) {
    r.problem('AUTHSVC_JWT_SECRET', 'required unless AUTHSVC_JWT_KEYS holds a signing key')
  } else if (jwtSecret !== '' && Buffer.byteLength(jwtSecret, 'utf8') < MIN_JWT_SECRET_BYTES) {
    // HS256 with a short secret can be brute-forced offline from any token the server issued.
    r.problem(secretName, `must be at least ${String(MIN_JWT_SECRET_BYTES)} bytes long`, jwtSecret)
  }

  const providers = {} as Record<ExternalProvider, boolean>
  for (const p of EXTERNAL_PROVIDERS)
    providers[p] = r.bool(`EXTERNAL_${p.toUpperCase()}_ENABLED`, false)

  const settings: Settings = {
    siteUrl,
    uriAllowList: r.list('URI_ALLOW_LIST', []),
    disableSignup: r.bool('DISABLE_SIGNUP', false),
    apiExternalUrl,
    apiHost: r.string('API_HOST', '0.0.0.0'),
    port: r.int('API_PORT', 8081, 0, ['PORT']),
    apiMaxRequestDuration: maxRequestDuration(r),
    requestIdHeader: r.string('REQUEST_ID_HEADER', ''),
    rateLimitHeader: r.string('RATE_LIMIT_HEADER', ''),
    svcForwardedForEnabled: r.bool('SECURITY_SVC_FORWARDED_FOR_ENABLED', false),
    db: {
      driver: 'postgres',
      url: dbUrl,
      maxPoolSize: r.int('DB_MAX_POOL_SIZE', 0, 0),
      namespace,
    },
    log: { level, file: r.string('LOG_FILE', '') },
    jwt: {
      secret: jwtSecret,
      exp: r.int('JWT_EXP', 3600, 1),
      aud: r.string('JWT_AUD', ''),
      issuer: r.string('JWT_ISSUER', ''),
      adminGroupName: r.string('JWT_ADMIN_GROUP_NAME', 'admin'),
      defaultGroupName: r.string('JWT_DEFAULT_GROUP_NAME', ''),
      adminRoles: r.list('JWT_ADMIN_ROLES', ['service_role', 'supabase_admin']),
      keys,
      keyId: r.string('JWT_KEY_ID', ''),
    },
    password: {
      minLength: Math.max(6, r.int('PASSWORD_MIN_LENGTH', 6, 0)),
      requiredCharacters: splitRequiredCharacters(r.string('PASSWORD_REQUIRED_CHARACTERS', '')),
      hashConcurrency: r.int('PASSWORD_HASH_CONCURRENCY', 0, 0),
      hashQueueSize: r.int('PASSWORD_HASH_QUEUE_SIZE', 100, 0),
    },
    security: {
      refreshTokenRotationEnabled: r.bool('SECURITY_REFRESH_TOKEN_ROTATION_ENABLED', true),
      refreshTokenReuseInterval: reuseInterval(r),
      updatePasswordRequireReauthentication: r.bool(
        'SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION',
        false,
      ),
    },
    external: {
      emailEnabled: r.bool('EXTERNAL_EMAIL_ENABLED', true),
      phoneEnabled: r.bool('EXTERNAL_PHONE_ENABLED', false),
      anonymousUsersEnabled: r.bool('EXTERNAL_ANONYMOUS_USERS_ENABLED', false),
      providers,
    },
    mailer: {
      autoconfirm: r.bool('MAILER_AUTOCONFIRM', false),
      otpExp: r.int('MAILER_OTP_EXP', 86_400, 1),
    },
    sms: {
      autoconfirm: r.bool('SMS_AUTOCONFIRM', false),
      provider: r.string('SMS_PROVIDER', ''),
    },
  }
  if (r.problems.length > 0) throw new ConfigError(r.problems)
  return deepFreeze(settings)
}
