/**
 * `npm start`: runs every Gatehouse service on embedded defaults (no PostgreSQL or Redis needed),
 * prefixes each service's log lines with its name, and stops them all on Ctrl-C.
 *
 * Each service plugs itself in below with the settings that make it self-contained. The user's
 * environment is passed through, but the embedded defaults listed here win, so that the two
 * services' shared variable names (both read `PORT`) cannot collide. To run one service with your
 * own settings, start its binary directly (`npx gatehouse-auth`, `npx gatehouse-ratelimit`).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { startMailInbox, type MailInbox } from '@gatehouse/mail-inbox'

interface Service {
  /** Prefix of its log lines. */
  name: string
  /** Path of the package bin, relative to the repository root. */
  bin: string
  args: string[]
  /** Embedded defaults; these override the caller's environment. */
  env: Record<string, string>
  /** One line each: what runs where. */
  endpoints: string[]
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/**
 * The local mail inbox (in this process): an SMTP catcher the auth server sends through, and a
 * page listing what it caught, so that a newcomer can follow confirmation links without an SMTP
 * account. Same ports as the Supabase CLI's mail catcher.
 */
const inboxPorts = { smtp: 54325, web: 54324 }
const inboxUrl = `http://127.0.0.1:${String(inboxPorts.web)}/`

/**
 * The rate limit service's runtime root for `npm start`: `.data/ratelimit/config/` holding the
 * service's example config and the auth server's domain config (the output of
 * `gatehouse-auth ratelimit-config` for the defaults), so that the auth server's limits are
 * counted by the service. Returns the root, relative to the repository.
 */
function ratelimitRuntime(): string {
  const runtime = '.data/ratelimit'
  const config = join(root, runtime, 'config')
  mkdirSync(config, { recursive: true })
  const examples = join(root, 'packages/ratelimit/examples/config')
  for (const name of readdirSync(examples).filter((n) => n.endsWith('.yaml'))) {
    copyFileSync(join(examples, name), join(config, name))
  }
  copyFileSync(
    join(root, 'packages/auth/examples/ratelimit-gatehouse-auth.yaml'),
    join(config, 'gatehouse-auth.yaml'),
  )
  return runtime
}

/** The stack. Service issues add their entry here. */
const services: Service[] = [
  {
    name: 'auth',
    bin: 'packages/auth/bin/gatehouse-auth.js',
    args: ['serve'],
    env: {
      // Embedded PostgreSQL (PGlite) in the repository's gitignored .data/ directory.
      DATABASE_URL: 'pglite://.data/auth',
      AUTHSVC_DB_DRIVER: 'postgres',
      AUTHSVC_SITE_URL: 'http://localhost:3000',
      AUTHSVC_API_EXTERNAL_URL: 'http://127.0.0.1:9999',
      AUTHSVC_API_HOST: '127.0.0.1',
      PORT: '9999',
      // Mail goes to the local inbox; MAILER_AUTOCONFIRM keeps its default (false), so sign-ups
      // are confirmed by following the mailed link, as in production.
      AUTHSVC_SMTP_HOST: '127.0.0.1',
      AUTHSVC_SMTP_PORT: String(inboxPorts.smtp),
      AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@gatehouse.localhost',
      AUTHSVC_SMTP_SENDER_NAME: 'Gatehouse',
      AUTHSVC_JWT_SECRET: 'gatehouse-development-jwt-secret-not-for-production',
      AUTHSVC_JWT_AUD: 'authenticated',
      AUTHSVC_JWT_DEFAULT_GROUP_NAME: 'authenticated',
      // Rate limit decisions are asked of the rate limit service below (domain gatehouse-auth,
      // config packages/auth/examples/ratelimit-gatehouse-auth.yaml), as N instances would share it.
      AUTHSVC_RATE_LIMIT_BACKEND: 'ratelimit',
      AUTHSVC_RATE_LIMIT_SERVICE_ADDRESS: '127.0.0.1:8081',
      // Metrics on a Prometheus scrape endpoint (examples/observability/prometheus.yml).
      AUTHSVC_METRICS_ENABLED: 'true',
      AUTHSVC_METRICS_EXPORTER: 'prometheus',
      OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1',
      OTEL_EXPORTER_PROMETHEUS_PORT: '9100',
    },
    endpoints: [
      'Supabase-Auth-compatible API on http://127.0.0.1:9999 (PGlite in .data/auth; a service_role key is printed below on the first start: delete .data/auth for a new one)',
      'rate limits: RATE_LIMIT_BACKEND=ratelimit, every decision asked of the rate limit service on 127.0.0.1:8081 (domain gatehouse-auth; fails open while it is down). Per-client limits need RATE_LIMIT_HEADER set by a trusted proxy',
      `mail inbox: ${inboxUrl} (every mail the auth server sends, e.g. sign-up confirmations; SMTP on 127.0.0.1:${String(inboxPorts.smtp)})`,
      'metrics (Prometheus): http://127.0.0.1:9100/ (no database pool gauges with PGlite)',
    ],
  },
  {
    name: 'ratelimit',
    bin: 'packages/ratelimit/bin/gatehouse-ratelimit.js',
    args: [],
    env: {
      // In-process counters; the config is the service's example plus the auth server's domain,
      // copied into .data/ratelimit/config at each start (see ratelimitRuntime below).
      BACKEND_TYPE: 'memory',
      RUNTIME_ROOT: ratelimitRuntime(),
      RUNTIME_SUBDIRECTORY: '',
      RUNTIME_APPDIRECTORY: 'config',
      RUNTIME_WATCH_ROOT: 'false',
      // Stats on a Prometheus scrape endpoint (one sink at a time: statsd off).
      USE_STATSD: 'false',
      USE_PROMETHEUS: 'true',
      PROMETHEUS_ADDR: '127.0.0.1:9090',
      STATS_FLUSH_INTERVAL: '10s',
      HOST: '127.0.0.1',
      PORT: '8080',
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: '8081',
      DEBUG_HOST: '127.0.0.1',
      DEBUG_PORT: '6070',
      LOG_LEVEL: 'info',
    },
    endpoints: [
      'Envoy rate limit service (gRPC envoy.service.ratelimit.v3) on 127.0.0.1:8081, memory backend, config packages/ratelimit/examples/config/ + packages/auth/examples/ratelimit-gatehouse-auth.yaml (copied to .data/ratelimit/config/)',
      'rate limit HTTP: POST http://127.0.0.1:8080/json, GET http://127.0.0.1:8080/healthcheck',
      'rate limit debug: http://127.0.0.1:6070/ (/rlconfig, /stats, /debug/pprof/profile)',
      'rate limit metrics (Prometheus, updated every 10s): http://127.0.0.1:9090/metrics',
    ],
  },
]

const colors = [36, 35, 33, 32, 34]
const useColor = process.stdout.isTTY && process.env.NO_COLOR === undefined
const width = Math.max(0, ...services.map((s) => s.name.length))

function prefix(name: string, index: number): string {
  const label = `${name.padEnd(width)} |`
  return useColor ? `\u001b[${String(colors[index % colors.length])}m${label}\u001b[0m` : label
}

function pipeLines(stream: NodeJS.ReadableStream, out: NodeJS.WriteStream, label: string): void {
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
    out.write(`${label} ${line}\n`)
  })
}

if (services.length === 0) {
  console.log('gatehouse: no services to start yet.')
  process.exit(0)
}

const children = new Map<string, ChildProcess>()
let stopping = false
let exitCode = 0

let inbox: MailInbox
try {
  inbox = await startMailInbox({ smtpPort: inboxPorts.smtp, webPort: inboxPorts.web, limit: 100 })
} catch (error) {
  console.error(
    `gatehouse: the mail inbox cannot listen on 127.0.0.1:${String(inboxPorts.smtp)} and :${String(inboxPorts.web)} (${error instanceof Error ? error.message : String(error)}); is another npm start running?`,
  )
  process.exit(1)
}

console.log('gatehouse: starting the stack on embedded defaults:')
for (const service of services) {
  for (const endpoint of service.endpoints) console.log(`  ${service.name}: ${endpoint}`)
}
console.log('Press Ctrl-C to stop.\n')

services.forEach((service, index) => {
  const bin = join(root, service.bin)
  if (!existsSync(bin)) {
    console.error(`gatehouse: ${service.bin} is missing; run "npm install" first.`)
    process.exit(1)
  }
  const child = spawn(process.execPath, [bin, ...service.args], {
    cwd: root,
    env: { ...process.env, ...service.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.set(service.name, child)
  const label = prefix(service.name, index)
  pipeLines(child.stdout, process.stdout, label)
  pipeLines(child.stderr, process.stderr, label)
  child.on('exit', (code, signal) => {
    children.delete(service.name)
    if (!stopping) {
      console.error(
        `gatehouse: ${service.name} exited (${signal ?? `code ${String(code)}`}); stopping the others.`,
      )
      exitCode = 1
      stopAll()
    }
    if (children.size === 0) {
      void inbox.close().finally(() => {
        console.log('gatehouse: all services stopped.')
        process.exit(exitCode)
      })
    }
  })
})

function stopAll(): void {
  stopping = true
  for (const child of children.values()) child.kill('SIGTERM')
  // A service that does not drain in time is killed.
  setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL')
  }, 15_000).unref()
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return
    console.log(`\ngatehouse: ${signal} received, stopping ${String(children.size)} service(s)…`)
    stopAll()
  })
}
