/**
 * `npm start`: runs every Gatehouse service on embedded defaults (no PostgreSQL or Redis needed),
 * shows their log lines in one format, prints what runs where (and the development keys) once
 * every service answers, and stops them all on Ctrl-C. `npm run status` (`--status`) prints that
 * table again.
 *
 * What runs where, and how the user's environment overrides it, is `stackPlan` (start/plan.ts).
 * Before writing anything, `npm start` claims the data directory (`stack.json`), checks every port
 * and reads the auth server's settings, so a second `npm start` that cannot run leaves the running
 * stack's files alone.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, isAbsolute, join, relative } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { readEnvFile } from '@gatehouse/settings'
import type { MailInbox } from '@gatehouse/mail-inbox'
import type { AuthPreparation } from './start/auth.js'
import type { Gateway } from './start/gateway.js'
import { jsonLine, prettyLine, type LogFormat } from './start/logs.js'
import {
  PlanError,
  stackPlan,
  START_VARIABLES,
  type ServicePlan,
  type StackPlan,
} from './start/plan.js'
import { portProblems } from './start/ports.js'
import { prepareRatelimitConfig } from './start/runtime.js'
import {
  claimState,
  isAlive,
  readState,
  releaseState,
  writeState,
  type StackState,
} from './start/state.js'
import { answers, runStatus, statusTable } from './start/status.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

const USAGE = `Usage: npm start [-- --log-format pretty|json]
       npm run status            (or: npm start -- --status)

Runs the Gatehouse stack on embedded defaults: the auth server (PGlite), the rate limit service
(in-process counters), the mail inbox and an API gateway with the Supabase URL layout. Prints the
URLs and the development keys once every service answers; Ctrl-C stops everything.

Options:
  --status             print the running stack's URLs, keys and health, then exit
  --log-format <name>  pretty (default): one readable format for every server;
                       json: one JSON object per line, with the server in "service"
  -h, --help           show this help

Your environment wins over the embedded defaults:
${START_VARIABLES.map(([name, fallback, help]) => `  ${name.padEnd(26)} ${help} (default ${fallback})`).join('\n')}
  AUTHSVC_<NAME>             any auth server setting (npx gatehouse-auth --help), e.g.
                             AUTHSVC_API_PORT=7999, AUTHSVC_SITE_URL=http://localhost:3000
  RATELIMIT_<NAME>           <NAME> for the rate limit service (its names overlap the auth
                             server's), e.g. RATELIMIT_PORT=8180, RATELIMIT_GRPC_PORT=8181
`

const SERVICE_COLORS = [36, 35, 33, 32, 34]
const color = process.stdout.isTTY && process.env.NO_COLOR === undefined

/** Exits after printing `message` to standard error. */
function fail(message: string, code: number): never {
  console.error(message)
  process.exit(code)
}

let options: { status: boolean; logFormat: LogFormat; help: boolean }
try {
  const { values } = parseArgs({
    options: {
      status: { type: 'boolean', default: false },
      'log-format': { type: 'string', default: 'pretty' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  })
  const logFormat = values['log-format']
  if (logFormat !== 'pretty' && logFormat !== 'json') {
    throw new Error(`--log-format must be pretty or json (got "${logFormat}")`)
  }
  options = { status: values.status, logFormat, help: values.help }
} catch (error) {
  fail(
    `npm start: ${error instanceof Error ? error.message : String(error)}; see npm start -- --help`,
    2,
  )
}

if (options.help) {
  process.stdout.write(USAGE)
  process.exit(0)
}

// The user's settings: a .env file in the repository (as gatehouse-auth reads it), overlaid with
// the environment.
let userEnv: Record<string, string | undefined>
try {
  userEnv = { ...readEnvFile(join(root, '.env'), { optional: true }), ...process.env }
} catch (error) {
  fail(`gatehouse: cannot read .env: ${error instanceof Error ? error.message : String(error)}`, 2)
}

let plan: StackPlan
try {
  plan = stackPlan(userEnv, root)
} catch (error) {
  if (error instanceof PlanError) fail(`gatehouse: ${error.message}`, 2)
  throw error
}
/** A path as messages show it: relative to the repository when inside it. */
function shown(path: string): string {
  const rel = relative(root, path)
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? path : rel
}
const shownDataDir = shown(plan.dataDir)

if (options.status) process.exit(await runStatus(plan.dataDir, shown(plan.dataDir), console.log))

/** npm start's own lines, in the chosen format. */
function say(message: string, level: 'info' | 'warn' | 'error' = 'info'): void {
  if (options.logFormat === 'json') {
    const line = JSON.stringify({
      service: 'gatehouse',
      time: new Date().toISOString(),
      level,
      msg: message,
    })
    ;(level === 'info' ? process.stdout : process.stderr).write(`${line}\n`)
  } else {
    ;(level === 'info' ? console.log : console.error)(`gatehouse: ${message}`)
  }
}

/** Refuses to run beside another npm start on the same data directory. */
function refuseHolder(holder: StackState): never {
  fail(
    `gatehouse: another npm start (pid ${String(holder.pid)}, since ${holder.startedAt}) runs on ${shownDataDir}; npm run status shows it. Stop it first, or set GATEHOUSE_DATA_DIR (and the ports) for a second stack.`,
    1,
  )
}

// 1. Another npm start on this data directory, then the ports, before anything is written: a
// busy port names the variable that moves it.
const running = readState(plan.dataDir)
if (running !== undefined && running.pid !== process.pid && isAlive(running.pid)) {
  refuseHolder(running)
}
const busy = await portProblems(plan.ports)
if (busy.length > 0) {
  fail(
    `gatehouse: cannot start, ${busy.length === 1 ? 'a port is' : 'ports are'} not free:\n${busy.map((p) => `  ${p}`).join('\n')}\n(another npm start? npm run status shows it)`,
    1,
  )
}

// 2. The auth server's settings as it will read them; a bad AUTHSVC_* stops here.
const childEnv = (service: ServicePlan): Record<string, string | undefined> => ({
  ...userEnv,
  ...service.env,
})
say('starting the stack…')
// Loaded only now: the auth server's code takes a moment, which --status and a refusal skip.
const { developmentKeys, prepareAuth } = await import('./start/auth.js')
let auth: AuthPreparation
try {
  auth = prepareAuth(childEnv(plan.auth))
} catch (error) {
  fail(
    `gatehouse: the auth server would refuse its settings: ${error instanceof Error ? error.message : String(error)}`,
    2,
  )
}

// 3. The data directory is ours from here on, unless another npm start holds it.
const startedAt = new Date()
const checks = [
  { name: 'auth', url: plan.auth.healthUrl },
  { name: 'ratelimit', url: plan.ratelimit.healthUrl },
  { name: 'gateway', url: `${plan.gateway.url}/auth/v1/health` },
  { name: 'inbox', url: `http://127.0.0.1:${String(plan.inbox.webPort)}/api/mails` },
]
let state: StackState = {
  pid: process.pid,
  startedAt: startedAt.toISOString(),
  ready: false,
  endpoints: plan.endpoints,
  checks,
}
const holder = claimState(plan.dataDir, state)
if (holder !== undefined) refuseHolder(holder)

const children = new Map<string, ChildProcess>()
let inbox: MailInbox | undefined
let gateway: Gateway | undefined
/** Set from signal and exit handlers, so kept in an object the compiler does not narrow. */
const run = { stopping: false, exitCode: 0 }
/** Whether the stack is stopping (read through a call: awaits in between may change it). */
const stopping = (): boolean => run.stopping

async function shutdown(): Promise<never> {
  await Promise.allSettled([inbox?.close(), gateway?.close()])
  releaseState(plan.dataDir)
  say('all services stopped.')
  process.exit(run.exitCode)
}

function stopAll(): void {
  run.stopping = true
  if (children.size === 0) {
    void shutdown()
    return
  }
  for (const child of children.values()) child.kill('SIGTERM')
  // A service that does not drain in time is killed.
  setTimeout(() => {
    for (const child of children.values()) child.kill('SIGKILL')
  }, 15_000).unref()
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (run.stopping) return
    say(`${signal} received, stopping…`)
    stopAll()
  })
}

// 4. Files, the in-process parts, then the servers.
try {
  if (plan.ratelimit.configDir !== undefined) {
    prepareRatelimitConfig(
      plan.ratelimit.configDir,
      join(root, 'packages/ratelimit/examples/config'),
      auth.ratelimitConfig,
      shown,
    )
  }
  const { startMailInbox } = await import('@gatehouse/mail-inbox')
  const { startGateway } = await import('./start/gateway.js')
  inbox = await startMailInbox({
    smtpPort: plan.inbox.smtpPort,
    webPort: plan.inbox.webPort,
    limit: 100,
    dataDir: plan.inbox.dir,
  })
  gateway = await startGateway({
    host: '127.0.0.1',
    port: plan.gateway.port,
    authUrl: plan.gateway.authUrl,
    inboxUrl: inbox.web.url,
  })
} catch (error) {
  say(`cannot start: ${error instanceof Error ? error.message : String(error)}`, 'error')
  run.exitCode = 1
  stopAll()
}

const width = Math.max(...[plan.auth, plan.ratelimit].map((s) => s.name.length))

/** Shows a server's lines in the chosen format (see start/logs.ts). */
function pipeLines(service: ServicePlan, index: number, child: ChildProcess): void {
  const label = `${service.name.padEnd(width)} |`
  const prefix = color
    ? `\u001b[${String(SERVICE_COLORS[index % SERVICE_COLORS.length])}m${label}\u001b[0m`
    : label
  for (const stream of ['stdout', 'stderr'] as const) {
    const input = child[stream]
    if (input === null) continue
    createInterface({ input, crlfDelay: Infinity }).on('line', (text) => {
      // The auth server's own development key (a new one each start, and only on the first):
      // npm start prints stable keys in its table instead.
      if (/development service_role key/.test(text)) return
      const line = { service: service.name, stream, text, at: new Date() }
      const out = stream === 'stdout' ? process.stdout : process.stderr
      out.write(
        options.logFormat === 'json'
          ? `${jsonLine(line)}\n`
          : `${prefix} ${prettyLine(line, color)}\n`,
      )
    })
  }
}

if (!stopping()) {
  const databaseDir = plan.auth.embeddedDatabaseDir
  if (databaseDir !== undefined && !existsSync(databaseDir)) {
    say(
      `creating the embedded database in ${shown(databaseDir)} (first start only: this takes a little while)…`,
    )
  }
  ;[plan.auth, plan.ratelimit].forEach((service, index) => {
    const bin = join(root, service.bin)
    if (!existsSync(bin)) {
      say(`${service.bin} is missing; run "npm install" first.`, 'error')
      run.exitCode = 1
      stopAll()
      return
    }
    const child = spawn(process.execPath, [bin, ...service.args], {
      cwd: root,
      env: childEnv(service),
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.set(service.name, child)
    pipeLines(service, index, child)
    child.on('exit', (code, signal) => {
      children.delete(service.name)
      if (!stopping()) {
        say(
          `${service.name} exited (${signal ?? `code ${String(code)}`}); stopping the others.`,
          'error',
        )
        run.exitCode = 1
        stopAll()
      }
      if (children.size === 0) void shutdown()
    })
  })
}

// 5. Ready once every part answers: the table, and the keys for npm run status.
if (!stopping()) {
  // Keys only from the public development secret: one of the user's own never reaches the
  // terminal (or the logs it may end up in).
  if (plan.developmentSecret) {
    state = { ...state, keys: await developmentKeys(auth.settings) }
    writeState(plan.dataDir, state)
  }
  let lastNotice = Date.now()
  for (;;) {
    if (stopping()) break
    const results = await Promise.all(
      checks.map(async (c) => [c.name, await answers(c.url, 1000)] as const),
    )
    const waiting = results.filter(([, up]) => !up).map(([name]) => name)
    if (waiting.length === 0) break
    if (Date.now() - lastNotice >= 15_000) {
      lastNotice = Date.now()
      say(`still waiting for ${waiting.join(', ')} to answer…`)
    }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  if (!stopping()) {
    state = { ...state, ready: true }
    writeState(plan.dataDir, state)
    const seconds = ((Date.now() - startedAt.getTime()) / 1000).toFixed(1)
    if (options.logFormat === 'json') {
      say(`ready in ${seconds} s`)
      process.stdout.write(
        `${JSON.stringify({ service: 'gatehouse', ready: true, endpoints: state.endpoints, keys: state.keys })}\n`,
      )
    } else {
      console.log(
        [
          `gatehouse: ready in ${seconds} s. Every service answers:`,
          ...statusTable(state),
          '  npm run status prints this again; Ctrl-C stops the stack.',
        ].join('\n'),
      )
    }
  }
}
