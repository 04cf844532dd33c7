import { getFreePort, probeTcp, waitFor } from './net.js'
import { startProcess } from './process.js'

/** A `memcached` of a test's own, on a random loopback port. */
export interface TestMemcached {
  readonly host: string
  readonly port: number
  /** `127.0.0.1:<port>`, the form `MEMCACHE_HOST_PORT` takes. */
  readonly hostPort: string
  /** Stops it and waits for it to exit. */
  stop(): Promise<void>
}

/**
 * Starts `memcached` on a random loopback port (TCP only, 64 MiB) and resolves once it answers
 * `version`. `.ci/run` installs memcached from Debian's packages.
 *
 * @throws {Error} When `memcached` is missing or does not come up within 10 s.
 */
export async function startMemcached(command = 'memcached'): Promise<TestMemcached> {
  const host = '127.0.0.1'
  const port = await getFreePort(host)
  const args = ['-l', host, '-p', String(port), '-U', '0', '-m', '64']
  if (process.getuid?.() === 0) args.push('-u', 'root')
  const started = await startProcess(command, args)
  await waitFor(() => version(host, port), {
    what: `memcached on port ${String(port)} (output: ${started.output()})`,
  })
  return { host, port, hostPort: `${host}:${String(port)}`, stop: () => started.stop() }
}

async function version(host: string, port: number): Promise<boolean> {
  return probeTcp(host, port, 'version\r\n', (reply) => reply.startsWith('VERSION'))
}
