/**
 * Binding an HTTP server (the HTTP, debug and Prometheus ports): shared by `server/` and `stats/`,
 * so it sits beside them.
 *
 * @module
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * Listens on `host:port`.
 *
 * @returns The bound port (the one chosen when `port` is 0).
 * @throws {Error} When the port cannot be bound (in use, no permission).
 */
export function listenHttp(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve((server.address() as AddressInfo).port)
    })
  })
}
