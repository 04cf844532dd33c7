/**
 * `npm test`'s set-up (run by npm as `pretest`): makes sure everything the tests need outside
 * npm is on this machine, so that the README's `npm test` passes on a fresh machine.
 *
 * - **Programs** the tests start themselves (an own `redis-server`, `memcached`, …) come from
 *   Debian's packages. When one is missing and we run as root with `apt-get`, it is installed;
 *   otherwise the run stops at once with the exact command to run.
 * - **Services** the tests share (PostgreSQL on `127.0.0.1:5432`, Redis on `127.0.0.1:6379`) are
 *   started with the machine's own commands when they do not answer, unless `TEST_DATABASE_URL` /
 *   `TEST_REDIS_URL` point elsewhere (then they are only checked).
 *
 * A new Debian package a test needs is one line in {@link requirements}. Set
 * `GATEHOUSE_TEST_SETUP=skip` to skip all of this (for example on a machine set up by hand).
 */
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { createConnection } from 'node:net'
import { delimiter, join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** A program some test runs, and the Debian package that provides it. */
export interface Requirement {
  /** Executable looked up on `PATH`. */
  command: string
  /** Debian package that installs it. */
  debianPackage: string
  /** Which tests need it (shown when it is missing). */
  neededBy: string
}

/** Every program the tests need beyond Node.js and npm. One line per program. */
export const requirements: readonly Requirement[] = [
  {
    command: 'redis-server',
    debianPackage: 'redis-server',
    neededBy: 'own Redis servers (ratelimit, testing)',
  },
  {
    command: 'redis-cli',
    debianPackage: 'redis-tools',
    neededBy:
      'checking the shared Redis; forming Redis Clusters and Sentinel failovers (ratelimit)',
  },
  { command: 'memcached', debianPackage: 'memcached', neededBy: 'the ratelimit memcache tests' },
  { command: 'openssl', debianPackage: 'openssl', neededBy: 'TLS test certificates' },
  { command: 'pg_ctlcluster', debianPackage: 'postgresql', neededBy: 'the shared PostgreSQL' },
  {
    command: 'chromium',
    debianPackage: 'chromium',
    neededBy: 'the mail inbox and sign-in journeys in a browser (Playwright)',
  },
]

/** What {@link planInstall} decided. */
export type InstallPlan =
  { kind: 'nothing' } | { kind: 'install'; packages: string[] } | { kind: 'stop'; message: string }

/**
 * Decides what to do about missing programs: nothing, install the Debian packages (as root with
 * `apt-get`), or stop with a message that names each program, who needs it and the exact command.
 */
export function planInstall(
  missing: readonly Requirement[],
  machine: { isRoot: boolean; hasAptGet: boolean },
): InstallPlan {
  if (missing.length === 0) return { kind: 'nothing' }
  const packages = [...new Set(missing.map((r) => r.debianPackage))]
  if (machine.isRoot && machine.hasAptGet) return { kind: 'install', packages }
  const lines = missing.map(
    (r) => `  - ${r.command} (Debian package ${r.debianPackage}), for ${r.neededBy}`,
  )
  const command = machine.hasAptGet
    ? `sudo apt-get update && sudo apt-get install -y ${packages.join(' ')}`
    : `install ${packages.join(', ')} with your system's package manager`
  return {
    kind: 'stop',
    message: [
      'npm test needs programs that are not installed:',
      ...lines,
      `Run: ${command}`,
      'then run npm test again.',
    ].join('\n'),
  }
}

/** True when `command` is an executable file in one of `path`'s directories. */
export function onPath(command: string, path: string | undefined): boolean {
  return (path ?? '').split(delimiter).some((dir) => dir !== '' && existsSync(join(dir, command)))
}

function say(message: string): void {
  console.log(`test-setup: ${message}`)
}

function run(command: string, args: string[]): boolean {
  const result = spawnSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'] })
  return result.status === 0
}

/** Resolves true when a TCP connection to `host:port` opens within `timeoutMs` milliseconds. */
export function answers(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port })
    const done = (ok: boolean): void => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(timeoutMs, () => {
      done(false)
    })
    socket.once('connect', () => {
      done(true)
    })
    socket.once('error', () => {
      done(false)
    })
  })
}

async function waitUntilAnswers(host: string, port: number, seconds: number): Promise<boolean> {
  for (let i = 0; i < seconds * 4; i++) {
    if (await answers(host, port, 250)) return true
    await new Promise((r) => setTimeout(r, 250))
  }
  return false
}

interface Service {
  name: string
  envVar: string
  port: number
  start: () => boolean
}

const services: Service[] = [
  {
    name: 'PostgreSQL',
    envVar: 'TEST_DATABASE_URL',
    port: 5432,
    start: () => {
      const versions = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql').sort() : []
      const version = versions.at(-1)
      if (version === undefined) return false
      return run('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'start'])
    },
  },
  {
    name: 'Redis',
    envVar: 'TEST_REDIS_URL',
    port: 6379,
    start: () =>
      run('redis-server', [
        '--daemonize',
        'yes',
        '--bind',
        '127.0.0.1',
        '--port',
        '6379',
        '--save',
        '',
        '--appendonly',
        'no',
      ]),
  },
]

async function main(): Promise<number> {
  if (process.env.GATEHOUSE_TEST_SETUP === 'skip') {
    say('skipped (GATEHOUSE_TEST_SETUP=skip)')
    return 0
  }
  const isRoot = process.getuid?.() === 0
  const hasAptGet = onPath('apt-get', process.env.PATH)
  const missing = requirements.filter((r) => !onPath(r.command, process.env.PATH))
  const plan = planInstall(missing, { isRoot, hasAptGet })
  switch (plan.kind) {
    case 'nothing':
      break
    case 'stop':
      console.error(plan.message)
      return 1
    case 'install': {
      say(`installing ${plan.packages.join(' ')} from Debian's packages`)
      const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
      const apt = (args: string[]): boolean =>
        spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env }).status === 0
      if (!apt(['update', '-qq']) || !apt(['install', '-y', '-qq', ...plan.packages])) {
        console.error(
          `test-setup: could not install ${plan.packages.join(' ')} (apt-get failed, see above)`,
        )
        return 1
      }
    }
  }

  for (const service of services) {
    const where = `127.0.0.1:${String(service.port)}`
    if (process.env[service.envVar] !== undefined) continue
    if (await answers('127.0.0.1', service.port)) continue
    if (!isRoot) {
      console.error(
        `test-setup: ${service.name} does not answer on ${where}; start it (or set ${service.envVar}) and run npm test again`,
      )
      return 1
    }
    say(`starting ${service.name} on ${where}`)
    if (!service.start() || !(await waitUntilAnswers('127.0.0.1', service.port, 30))) {
      console.error(`test-setup: ${service.name} did not come up on ${where}`)
      return 1
    }
  }
  return 0
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main()
}
