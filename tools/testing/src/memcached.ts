import { probeTcp } from './net.js'
import { startServerOnFreePort } from './server-process.js'

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
 * @throws {Error} When `memcached` is missing, exits before it answers on three ports in turn, or
 *   does not come up within 10 s.
 */
export async function startMemcached(options: StartMemcachedOptions = {}): Promise<TestMemcached> {
  const host = '127.0.0.1'
  const command = options.command ?? 'memcached'
  const args = (port: number): string[] => {
    const list = ['-l', host, '-p', String(port), '-U', '0', '-m', '64', ...(options.args ?? [])]
    if (process.getuid?.() === 0) list.push('-u', 'root')
    return list
  }
  const probe = options.probe ?? version
  const server = await startServerOnFreePort({
    name: 'memcached',
    command,
    args,
    ready: (port) => probe(host, port),
  })
  return {
    host,
    port: server.port,
    hostPort: `${host}:${String(server.port)}`,
    stop: async () => server.process.stop(),
    restart: async () => server.restart(),
  }
}

async function version(host: string, port: number): Promise<boolean> {
  return probeTcp(host, port, 'version\r\n', (reply) => reply.startsWith('VERSION'))
}
