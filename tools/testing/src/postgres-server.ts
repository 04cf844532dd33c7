import { execFile } from 'node:child_process'
import { rmSync } from 'node:fs'
import { chown, mkdtemp, readFile, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { getFreePort } from './net.js'
import { startProcess, type ManagedProcess } from './process.js'
import { awaitServer } from './server-process.js'

const run = promisify(execFile)

/**
 * A PostgreSQL server of a test's own (`initdb` into a temporary directory, `postgres` on a
 * random loopback port), for tests that stop, crash or freeze the database: the machine's shared
 * server on 5432 must never be touched.
 */
export interface TestPostgresServer {
  readonly host: string
  readonly port: number
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  readonly url: string
  /** The postmaster's process id while it runs, else `undefined`. */
  readonly pid: number | undefined
  /**
   * Stops the server by signalling its postmaster (`pg_ctl stop -m <mode>`'s signals: `immediate`
   * SIGQUIT, a crash without a checkpoint; `fast` SIGINT; `smart` SIGTERM) and waits for it to
   * exit. A frozen server is thawed first. Idempotent.
   */
  stop(mode?: 'immediate' | 'fast' | 'smart'): Promise<void>
  /** Starts it again on the same port and data; resolves once it accepts connections. */
  start(): Promise<void>
  /**
   * Freezes the postmaster and every backend (SIGSTOP), as a stalled host would: connections stay
   * open and nothing answers, until {@link TestPostgresServer.thaw}.
   */
  freeze(): Promise<void>
  /** Resumes what {@link TestPostgresServer.freeze} stopped (SIGCONT). */
  thaw(): Promise<void>
  /** Stops the server (immediate) and removes its data directory. Idempotent. */
  destroy(): Promise<void>
}

/** Options of {@link startPostgresServer}. */
export interface StartPostgresOptions {
  /**
   * Where `initdb` and `postgres` are: `TEST_POSTGRES_BIN_DIR`, else Debian's
   * `/usr/lib/postgresql/15/bin`.
   */
  binDir?: string
  /** Extra server settings (`-c name=value`). */
  settings?: Readonly<Record<string, string>>
  /**
   * The account the server runs as when the test runs as root (PostgreSQL refuses root).
   * @default 'postgres'
   */
  user?: string
}

/** The uid and gid of `user` from `/etc/passwd`. */
async function accountOf(user: string): Promise<{ uid: number; gid: number }> {
  const passwd = await readFile('/etc/passwd', 'utf8')
  for (const line of passwd.split('\n')) {
    const [name, , uid, gid] = line.split(':')
    if (name === user && uid !== undefined && gid !== undefined) {
      return { uid: Number(uid), gid: Number(gid) }
    }
  }
  throw new Error(`no account "${user}" to run a test PostgreSQL as (it refuses to run as root)`)
}

/** The ids of the processes whose parent is `parent` (a postmaster's backends and workers). */
async function childrenOf(parent: number): Promise<number[]> {
  const children: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = await readFile(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // exited meanwhile
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(fields[1]) === parent) children.push(Number(entry))
  }
  return children
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name)
  } catch {
    // Already gone.
  }
}

/** Whether a connection to `url` is accepted and answers (false while starting up). */
async function accepts(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 })
  client.on('error', () => undefined)
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => undefined)
  }
}

const STOP_SIGNALS = { immediate: 'SIGQUIT', fast: 'SIGINT', smart: 'SIGTERM' } as const

/**
 * Creates a PostgreSQL cluster in a temporary directory (`initdb`, trust authentication, no
 * fsync) and starts it on a random loopback port; resolves once it accepts connections. Costs
 * about 2 s: start one per test file. Call `destroy()` in `afterAll`.
 *
 * @throws {Error} When the binaries are missing or the server does not come up within 20 s.
 */
export async function startPostgresServer(
  options: StartPostgresOptions = {},
): Promise<TestPostgresServer> {
  const binDir = options.binDir ?? process.env.TEST_POSTGRES_BIN_DIR ?? '/usr/lib/postgresql/15/bin'
  const account: { uid?: number; gid?: number } =
    process.getuid?.() === 0 ? await accountOf(options.user ?? 'postgres') : {}
  const dir = await mkdtemp(join(tmpdir(), 'gh-test-pg-'))
  // A test process that ends without destroy() (a timeout, a crash) leaves no data behind; its
  // postgres is killed by startProcess.
  const removeOnExit = (): void => {
    rmSync(dir, { recursive: true, force: true })
  }
  process.once('exit', removeOnExit)
  if (account.uid !== undefined && account.gid !== undefined) {
    await chown(dir, account.uid, account.gid)
  }
  const data = join(dir, 'data')
  await run(
    join(binDir, 'initdb'),
    ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync'],
    account,
  )
  const host = '127.0.0.1'
  const port = await getFreePort(host)
  const url = `postgres://postgres@${host}:${String(port)}/postgres`
  // fsync off is safe for the tests' crashes (the processes die, not the machine);
  // synchronous_commit stays on, so that a crash never loses a commit a client was told about.
  const settings: Record<string, string> = {
    listen_addresses: host,
    port: String(port),
    unix_socket_directories: dir,
    fsync: 'off',
    full_page_writes: 'off',
    max_connections: '50',
    ...options.settings,
  }
  const args = ['-D', data, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])]
  let current: ManagedProcess | undefined
  let frozen: number[] = []

  const thaw = async (): Promise<void> => {
    for (const pid of frozen) signal(pid, 'SIGCONT')
    frozen = []
    await Promise.resolve()
  }
  const stop = async (mode: 'immediate' | 'fast' | 'smart' = 'immediate'): Promise<void> => {
    await thaw()
    await current?.stop(STOP_SIGNALS[mode])
    current = undefined
  }
  const start = async (): Promise<void> => {
    if (current) return
    const started = await startProcess(join(binDir, 'postgres'), args, account)
    current = started
    await awaitServer(started, `PostgreSQL on port ${String(port)}`, () => accepts(url), 20_000)
  }
  let destroyed = false
  const server: TestPostgresServer = {
    host,
    port,
    url,
    get pid() {
      return current?.child.pid
    },
    stop,
    start,
    async freeze() {
      const postmaster = current?.child.pid
      if (postmaster === undefined || frozen.length > 0) return
      // The postmaster first, so that it starts no backend once its children are listed.
      signal(postmaster, 'SIGSTOP')
      frozen = [postmaster, ...(await childrenOf(postmaster))]
      for (const pid of frozen.slice(1)) signal(pid, 'SIGSTOP')
    },
    thaw,
    async destroy() {
      if (destroyed) return
      destroyed = true
      await stop('immediate')
      await rm(dir, { recursive: true, force: true })
      process.removeListener('exit', removeOnExit)
    },
  }
  try {
    await start()
  } catch (error) {
    await server.destroy()
    throw error
  }
  return server
}
