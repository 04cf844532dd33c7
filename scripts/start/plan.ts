/**
 * What `npm start` runs, where, and with which settings: a pure function of the environment.
 *
 * The user's environment wins over the embedded defaults. The auth server's variables are its own
 * (`AUTHSVC_*`, or `GOTRUE_*`); the rate limit service's names have no prefix and overlap with the
 * auth server's (`PORT`, `HOST`, `LOG_LEVEL`), so under `npm start` they take the prefix
 * `RATELIMIT_` (`RATELIMIT_PORT=8180` is `PORT=8180` for the rate limit service). `npm start`'s own
 * variables start with `GATEHOUSE_`.
 *
 * @module
 */
import { isAbsolute, join, relative } from 'node:path'
import { parseBool } from '@gatehouse/settings'

/** The environment `npm start` was given. */
export type Env = Readonly<Record<string, string | undefined>>

/** A port the stack listens on, with the variable that moves it. */
export interface PortUse {
  readonly host: string
  readonly port: number
  /** The variable to set to move it (`AUTHSVC_API_PORT`). */
  readonly variable: string
  /** What listens there (`auth API`). */
  readonly what: string
}

/** A server started as a child process. */
export interface ServicePlan {
  /** Prefix of its log lines. */
  readonly name: 'auth' | 'ratelimit'
  /** Path of the package bin, relative to the repository root. */
  readonly bin: string
  readonly args: readonly string[]
  /** Its environment: the user's, with the embedded defaults for what the user did not set. */
  readonly env: Readonly<Record<string, string>>
  /** A URL that answers 200 once the server is ready. */
  readonly healthUrl: string
}

/** One line of the status table. */
export interface Endpoint {
  readonly label: string
  readonly value: string
  readonly note?: string
}

/** Everything `npm start` needs to know, computed before anything starts. */
export interface StackPlan {
  /** Absolute path of the data directory (`GATEHOUSE_DATA_DIR`). */
  readonly dataDir: string
  readonly inbox: { readonly webPort: number; readonly smtpPort: number; readonly dir: string }
  readonly gateway: {
    readonly port: number
    /** Where `/auth/v1/` is forwarded to: the auth server. */
    readonly authUrl: string
    readonly url: string
  }
  readonly auth: ServicePlan & {
    /** The embedded database's directory when it is the default one, else `undefined`. */
    readonly embeddedDatabaseDir: string | undefined
  }
  readonly ratelimit: ServicePlan & {
    /**
     * The config directory `npm start` fills (the example config, the auth server's domain),
     * or `undefined` when the user chose their own `RATELIMIT_RUNTIME_ROOT`.
     */
    readonly configDir: string | undefined
  }
  readonly ports: readonly PortUse[]
  /**
   * Whether tokens are signed with {@link DEVELOPMENT_JWT_SECRET} (the user set neither
   * `JWT_SECRET` nor `JWT_KEYS`): only then are the keys printed, since anyone can sign such
   * keys anyway.
   */
  readonly developmentSecret: boolean
  /** The status table's lines, keys excepted. */
  readonly endpoints: readonly Endpoint[]
}

/** The environment cannot give a stack: every problem, one per line. */
export class PlanError extends Error {
  readonly problems: readonly string[]
  constructor(problems: readonly string[]) {
    super(`invalid settings:\n${problems.map((p) => `  ${p}`).join('\n')}`)
    this.name = 'PlanError'
    this.problems = problems
  }
}

/** `npm start`'s own variables, with their defaults: `--help` and the README list them. */
export const START_VARIABLES: readonly (readonly [name: string, fallback: string, help: string])[] =
  [
    ['GATEHOUSE_DATA_DIR', '.data', 'where the stack keeps its data (relative to the repository)'],
    ['GATEHOUSE_API_PORT', '54321', 'the Supabase-style gateway: /auth/v1/ and the SITE_URL page'],
    ['GATEHOUSE_INBOX_PORT', '54324', 'the mail inbox page'],
    ['GATEHOUSE_INBOX_SMTP_PORT', '54325', 'the mail inbox SMTP server'],
  ]

/** The development JWT secret: public, so that every key it signs is a development key. */
export const DEVELOPMENT_JWT_SECRET = 'gatehouse-development-jwt-secret-not-for-production'

const LOOPBACK = '127.0.0.1'
const WILDCARDS = new Set(['', '0.0.0.0', '::'])

/** `host:port` as a URL authority, a wildcard address shown as 127.0.0.1. */
function authority(host: string, port: number): string {
  const shown = WILDCARDS.has(host) ? LOOPBACK : host
  return `${shown.includes(':') ? `[${shown}]` : shown}:${String(port)}`
}

/** Reads the environment, collecting every problem. */
class Reader {
  readonly problems: string[] = []
  readonly env: Env
  constructor(env: Env) {
    this.env = env
  }

  /** The first of `names` that is set (not empty), with its name. */
  set(names: readonly string[]): { name: string; value: string } | undefined {
    for (const name of names) {
      const value = this.env[name]
      if (value !== undefined && value !== '') return { name, value }
    }
    return undefined
  }

  port(names: readonly string[], fallback: number): { port: number; variable: string } {
    const found = this.set(names)
    const variable = found?.name ?? names[0] ?? ''
    if (found === undefined) return { port: fallback, variable }
    if (
      !/^[0-9]{1,5}$/.test(found.value) ||
      Number(found.value) < 1 ||
      Number(found.value) > 65535
    ) {
      this.problems.push(
        `${found.name}: must be a port number from 1 to 65535 (got "${found.value}")`,
      )
      return { port: fallback, variable }
    }
    return { port: Number(found.value), variable }
  }

  bool(names: readonly string[], fallback: boolean): boolean {
    const found = this.set(names)
    if (found === undefined) return fallback
    try {
      return parseBool(found.value)
    } catch {
      this.problems.push(`${found.name}: must be true or false (got "${found.value}")`)
      return fallback
    }
  }
}

/** The names a user sets one auth setting by, in the auth server's reading order. */
const authNames = (name: string): string[] => [`AUTHSVC_${name}`, `GOTRUE_${name}`]

/** Kinds of mailed links (`MAILER_URLPATHS_<KIND>`). */
const MAIL_LINK_KINDS = ['INVITE', 'CONFIRMATION', 'RECOVERY', 'EMAIL_CHANGE'] as const

/**
 * Plans the stack for an environment.
 *
 * @param env The environment `npm start` runs in.
 * @param root The repository's root (absolute).
 * @throws {@link PlanError} Listing every variable that cannot be used.
 */
export function stackPlan(env: Env, root: string): StackPlan {
  const read = new Reader(env)
  const dataDirText = read.set(['GATEHOUSE_DATA_DIR'])?.value ?? '.data'
  const dataDir = isAbsolute(dataDirText) ? dataDirText : join(root, dataDirText)
  /** A path as the children (whose working directory is the root) are given it. */
  const forChild = (path: string): string => {
    const rel = relative(root, path)
    return rel.startsWith('..') || isAbsolute(rel) ? path : rel
  }

  const gatewayPort = read.port(['GATEHOUSE_API_PORT'], 54321)
  const inboxPort = read.port(['GATEHOUSE_INBOX_PORT'], 54324)
  const smtpPort = read.port(['GATEHOUSE_INBOX_SMTP_PORT'], 54325)
  const gatewayUrl = `http://${LOOPBACK}:${String(gatewayPort.port)}`

  // The rate limit service: RATELIMIT_<NAME> is its <NAME>.
  const rl = (name: string): string[] => [`RATELIMIT_${name}`]
  const rlPort = read.port(rl('PORT'), 8080)
  const rlGrpcPort = read.port(rl('GRPC_PORT'), 8081)
  const rlDebugPort = read.port(rl('DEBUG_PORT'), 6070)
  const rlHost = read.set(rl('HOST'))?.value ?? LOOPBACK
  const rlGrpcHost = read.set(rl('GRPC_HOST'))?.value ?? LOOPBACK
  const rlDebugHost = read.set(rl('DEBUG_HOST'))?.value ?? LOOPBACK
  const usePrometheus = read.bool(rl('USE_PROMETHEUS'), true)
  const prometheusAddr = read.set(rl('PROMETHEUS_ADDR'))?.value ?? `${LOOPBACK}:9090`
  const promMatch = /^(.*):([0-9]{1,5})$/.exec(prometheusAddr)
  if (usePrometheus && (!promMatch || Number(promMatch[2]) < 1 || Number(promMatch[2]) > 65535)) {
    read.problems.push(
      `RATELIMIT_PROMETHEUS_ADDR: must be host:port with a port from 1 to 65535 (got "${prometheusAddr}")`,
    )
  }
  const customRuntime = read.set(rl('RUNTIME_ROOT')) !== undefined
  const runtimeRoot = join(dataDir, 'ratelimit')
  const ratelimitDefaults: Record<string, string> = {
    // In-process counters; the config directory holds a copy of the service's example and the
    // auth server's domain, written from its settings at each start (see runtime.ts).
    BACKEND_TYPE: 'memory',
    RUNTIME_ROOT: forChild(runtimeRoot),
    RUNTIME_SUBDIRECTORY: '',
    RUNTIME_APPDIRECTORY: 'config',
    RUNTIME_WATCH_ROOT: 'false',
    // Stats on a Prometheus scrape endpoint (one sink at a time: statsd off).
    USE_STATSD: 'false',
    USE_PROMETHEUS: 'true',
    PROMETHEUS_ADDR: prometheusAddr,
    STATS_FLUSH_INTERVAL: '10s',
    HOST: rlHost,
    PORT: String(rlPort.port),
    GRPC_HOST: rlGrpcHost,
    GRPC_PORT: String(rlGrpcPort.port),
    DEBUG_HOST: rlDebugHost,
    DEBUG_PORT: String(rlDebugPort.port),
    LOG_LEVEL: 'info',
    // JSON, which npm start shows in its own format (see logs.ts).
    LOG_FORMAT: 'json',
  }
  const ratelimitOverrides = Object.fromEntries(
    Object.entries(env).flatMap(([name, value]) =>
      name.startsWith('RATELIMIT_') && name.length > 10 && value !== undefined
        ? [[name.slice(10), value]]
        : [],
    ),
  )

  // The auth server: AUTHSVC_<NAME> (or GOTRUE_<NAME>) wins over the default of <NAME>.
  const authValue = (name: string, fallback: string): string =>
    read.set(authNames(name))?.value ?? fallback
  const authPort = read.port(authNames('API_PORT'), 9999)
  const authHost = authValue('API_HOST', LOOPBACK)
  const authUrl = `http://${authority(authHost, authPort.port)}`
  const apiExternalUrl = authValue('API_EXTERNAL_URL', `${gatewayUrl}/auth/v1`)
  let verifyPath = '/verify'
  try {
    verifyPath = `${new URL(apiExternalUrl).pathname.replace(/\/+$/, '')}/verify`
  } catch {
    // The auth server reports the bad URL, naming the variable.
  }
  const defaultDatabase = join(dataDir, 'auth')
  const customDatabase = read.set(authNames('DB_DATABASE_URL')) !== undefined
  const metricsOn =
    read.bool(authNames('METRICS_ENABLED'), true) &&
    authValue('METRICS_EXPORTER', 'prometheus') === 'prometheus'
  const metricsNames = [
    ...authNames('OTEL_EXPORTER_PROMETHEUS_PORT'),
    'OTEL_EXPORTER_PROMETHEUS_PORT',
  ]
  const metricsPort = read.port(metricsNames, 9100)
  const metricsHost =
    read.set([...authNames('OTEL_EXPORTER_PROMETHEUS_HOST'), 'OTEL_EXPORTER_PROMETHEUS_HOST'])
      ?.value ?? LOOPBACK
  const authDefaults: Record<string, string> = {
    // Embedded PostgreSQL (PGlite) in the data directory.
    DB_DATABASE_URL: `pglite://${forChild(defaultDatabase)}`,
    DB_DRIVER: 'postgres',
    // Mailed links go through the gateway (the Supabase layout) and land on its page.
    SITE_URL: `${gatewayUrl}/`,
    API_EXTERNAL_URL: apiExternalUrl,
    ...Object.fromEntries(MAIL_LINK_KINDS.map((kind) => [`MAILER_URLPATHS_${kind}`, verifyPath])),
    API_HOST: authHost,
    API_PORT: String(authPort.port),
    // Mail goes to the local inbox; MAILER_AUTOCONFIRM keeps its default (false), so sign-ups
    // are confirmed by following the mailed link, as in production.
    SMTP_HOST: LOOPBACK,
    SMTP_PORT: String(smtpPort.port),
    SMTP_ADMIN_EMAIL: 'no-reply@gatehouse.localhost',
    SMTP_SENDER_NAME: 'Gatehouse',
    JWT_SECRET: DEVELOPMENT_JWT_SECRET,
    JWT_AUD: 'authenticated',
    JWT_DEFAULT_GROUP_NAME: 'authenticated',
    // Rate limit decisions are asked of the rate limit service (domain gatehouse-auth), as N
    // instances would share it.
    RATE_LIMIT_BACKEND: 'ratelimit',
    RATE_LIMIT_SERVICE_ADDRESS: authority(rlGrpcHost, rlGrpcPort.port),
    // Passkeys on the gateway's /passkeys page, opened as http://localhost:<port> (an IP address
    // cannot be a relying party id).
    PASSKEY_ENABLED: 'true',
    WEBAUTHN_RP_ID: 'localhost',
    WEBAUTHN_RP_DISPLAY_NAME: 'Gatehouse (development)',
    WEBAUTHN_RP_ORIGINS: `http://localhost:${String(gatewayPort.port)}`,
    // Metrics on a Prometheus scrape endpoint (examples/observability/prometheus.yml).
    METRICS_ENABLED: 'true',
    METRICS_EXPORTER: 'prometheus',
  }
  const authEnv: Record<string, string> = {}
  for (const [name, value] of Object.entries(authDefaults)) {
    if (read.set(authNames(name)) === undefined) authEnv[`AUTHSVC_${name}`] = value
  }
  // OpenTelemetry's names are read as written too: the user's win as they are.
  if (read.set(metricsNames) === undefined) {
    authEnv.OTEL_EXPORTER_PROMETHEUS_PORT = String(metricsPort.port)
  }
  if (
    read.set(['OTEL_EXPORTER_PROMETHEUS_HOST', ...authNames('OTEL_EXPORTER_PROMETHEUS_HOST')]) ===
    undefined
  ) {
    authEnv.OTEL_EXPORTER_PROMETHEUS_HOST = metricsHost
  }

  const ports: PortUse[] = [
    { host: LOOPBACK, port: gatewayPort.port, variable: gatewayPort.variable, what: 'API gateway' },
    { host: LOOPBACK, port: inboxPort.port, variable: inboxPort.variable, what: 'mail inbox page' },
    { host: LOOPBACK, port: smtpPort.port, variable: smtpPort.variable, what: 'mail inbox SMTP' },
    { host: authHost, port: authPort.port, variable: authPort.variable, what: 'auth API' },
    ...(metricsOn
      ? [
          {
            host: metricsHost,
            port: metricsPort.port,
            variable: metricsPort.variable,
            what: 'auth metrics',
          },
        ]
      : []),
    { host: rlHost, port: rlPort.port, variable: rlPort.variable, what: 'rate limit HTTP' },
    {
      host: rlGrpcHost,
      port: rlGrpcPort.port,
      variable: rlGrpcPort.variable,
      what: 'rate limit gRPC',
    },
    {
      host: rlDebugHost,
      port: rlDebugPort.port,
      variable: rlDebugPort.variable,
      what: 'rate limit debug',
    },
    ...(usePrometheus && promMatch
      ? [
          {
            host: promMatch[1] ?? '',
            port: Number(promMatch[2]),
            variable: 'RATELIMIT_PROMETHEUS_ADDR',
            what: 'rate limit metrics',
          },
        ]
      : []),
  ]

  // Two servers cannot share a port (on one address, or where either listens on all of them).
  ports.forEach((use, index) => {
    const clash = ports
      .slice(0, index)
      .find(
        (other) =>
          other.port === use.port &&
          (other.host === use.host || WILDCARDS.has(other.host) || WILDCARDS.has(use.host)),
      )
    if (clash) {
      read.problems.push(
        `${use.variable}: the ${use.what} would listen on port ${String(use.port)}, as the ${clash.what} (${clash.variable}) does; set one of them to another port`,
      )
    }
  })
  if (read.problems.length > 0) throw new PlanError(read.problems)

  const siteUrl = authValue('SITE_URL', `${gatewayUrl}/`)
  const inboxUrl = `http://${LOOPBACK}:${String(inboxPort.port)}/`
  const endpoints: Endpoint[] = [
    {
      label: 'Supabase URL',
      value: gatewayUrl,
      note: 'createClient(url, anonKey); auth at /auth/v1',
    },
    { label: 'auth API', value: authUrl, note: 'GoTrue paths, for @supabase/auth-js' },
    { label: 'SITE_URL', value: siteUrl, note: 'where mailed links land' },
    {
      label: 'passkey page',
      value: `http://localhost:${String(gatewayPort.port)}/passkeys`,
      note: 'register and use a passkey by hand',
    },
    { label: 'mail inbox', value: inboxUrl, note: `SMTP ${LOOPBACK}:${String(smtpPort.port)}` },
    {
      label: 'rate limit gRPC',
      value: authority(rlGrpcHost, rlGrpcPort.port),
      note: 'envoy.service.ratelimit.v3',
    },
    { label: 'rate limit HTTP', value: `http://${authority(rlHost, rlPort.port)}/json` },
    { label: 'rate limit debug', value: `http://${authority(rlDebugHost, rlDebugPort.port)}/` },
    ...(metricsOn
      ? [{ label: 'auth metrics', value: `http://${authority(metricsHost, metricsPort.port)}/` }]
      : []),
    ...(usePrometheus && promMatch
      ? [
          {
            label: 'rate limit metrics',
            value: `http://${authority(promMatch[1] ?? '', Number(promMatch[2]))}/metrics`,
          },
        ]
      : []),
  ]

  return {
    dataDir,
    developmentSecret:
      read.set([...authNames('JWT_SECRET'), ...authNames('JWT_KEYS')]) === undefined,
    inbox: { webPort: inboxPort.port, smtpPort: smtpPort.port, dir: join(dataDir, 'mail-inbox') },
    gateway: { port: gatewayPort.port, authUrl, url: gatewayUrl },
    auth: {
      name: 'auth',
      bin: 'packages/auth/bin/gatehouse-auth.js',
      args: ['serve'],
      env: authEnv,
      healthUrl: `${authUrl}/health`,
      embeddedDatabaseDir: customDatabase ? undefined : defaultDatabase,
    },
    ratelimit: {
      name: 'ratelimit',
      bin: 'packages/ratelimit/bin/gatehouse-ratelimit.js',
      args: [],
      env: { ...ratelimitDefaults, ...ratelimitOverrides },
      healthUrl: `http://${authority(rlHost, rlPort.port)}/healthcheck`,
      configDir: customRuntime ? undefined : join(runtimeRoot, 'config'),
    },
    ports,
    endpoints,
  }
}
