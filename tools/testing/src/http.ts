import { once } from 'node:events'
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'

/** An HTTP server started by {@link startHttpServer}. */
export interface TestHttpServer {
  /** `http://127.0.0.1:<port>` (no trailing slash). */
  readonly url: string
  /** Closes open connections and the server. */
  close(): Promise<void>
}

/**
 * Starts an HTTP server on a random loopback port answering with `handler`: a page a browser
 * lands on, a template URL, a fake third-party API.
 *
 * @param handler Node's request listener.
 */
export async function startHttpServer(handler: RequestListener): Promise<TestHttpServer> {
  const server = createServer(handler)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${String(port)}`,
    close: async () => {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  }
}
