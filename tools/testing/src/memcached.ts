import { getFreePort, probeTcp, waitFor } from './net.js'
import { startProcess, type ManagedProcess } from './process.js'

/** A `memcached` of a test's own, on a random loopback port. */
export interface TestMemcached {
  readonly host: string
  readonly port: number
  /** `127.0.0.1:<port>`, the form `MEMCACHE_HOST_PORT` takes. */
  readonly hostPort: string
  /** Stops it and waits for it to exit. */
  stop(): Promise<void>
  /** Starts it again on the same port (after `stop`), empty; resolves when it answers. */
  restart(): Promise<void>
}

/** Options of {@link startMemcached}. */
export interface StartMemcachedOptions {
  /** Extra `memcached` arguments, such as TLS: `['-Z', '-o', 'ssl_chain_cert=…,ssl_key=…']`. */
  readonly args?: readonly string[]
  /**
   * Resolves true once the server answers (the default probe sends `version` in plain TCP; a TLS
   * server needs its own).
   */
  readonly probe?: (host: string, port: number) => Promise<boolean>
  /** Executable. @default 'memcached' */
  readonly command?: string
}

/**
 * Starts `memcached` on a random loopback port (TCP only, 64 MiB) and resolves once it answers
 * `version`. `.ci/run` installs memcached from Debian's packages.
 *
 * @throws {Error} When `memcached` is missing or does not come up within 10 s.
 */
export async function startMemcached(options: StartMemcachedOptions = {}): Promise<TestMemcached> {
  const host = '127.0.0.1'
  const port = await getFreePort(host)
  const args = ['-l', host, '-p', String(port), '-U', '0', '-m', '64', ...(options.args ?? [])]
  if (process.getuid?.() === 0) args.push('-u', 'root')
  const probe = options.probe ?? version
  let current: ManagedProcess | undefined
  const launch = async (): Promise<void> => {
    const started = await startProcess(options.command ?? 'memcached', args)
    current = started
    await waitFor(() => probe(host, port), {
      what: `memcached on port ${String(port)} (output: ${started.output()})`,
    })
  }
  await launch()
  return {
    host,
    port,
    hostPort: `${host}:${String(port)}`,
    stop: async () => current?.stop(),
    restart: async () => {
      await current?.stop()
      await launch()
    },
  }
}

async function version(host: string, port: number): Promise<boolean> {
  return probeTcp(host, port, 'version\r\n', (reply) => reply.startsWith('VERSION'))
}
