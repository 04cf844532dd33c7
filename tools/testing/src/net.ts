import { createServer, Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

/**
 * Asks the kernel for a free TCP port on a loopback address.
 *
 * The port is released before this resolves, so another process could take it; good enough for
 * starting a throw-away server right afterwards.
 *
 * @param host Address to bind. @default '127.0.0.1'
 * @returns The port number.
 */
export async function getFreePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen({ host, port: 0 }, () => {
      const address = server.address()
      if (address === null || typeof address === 'string') {
        server.close()
        reject(new Error('could not read the bound port'))
        return
      }
      server.close(() => {
        resolve(address.port)
      })
    })
  })
}

/**
 * Asks the kernel for `count` distinct free TCP ports on a loopback address: every port stays
 * bound until all are, so none is handed out twice (separate {@link getFreePort} calls can get
 * the same port back once it is released).
 *
 * The ports are released before this resolves, as with {@link getFreePort}.
 *
 * @param host Address to bind. @default '127.0.0.1'
 * @returns The port numbers, all different.
 */
export async function getFreePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer())
  try {
    return await Promise.all(
      servers.map(
        (server) =>
          new Promise<number>((resolve, reject) => {
            server.unref()
            server.once('error', reject)
            server.listen({ host, port: 0 }, () => {
              const address = server.address()
              if (address === null || typeof address === 'string') {
                reject(new Error('could not read the bound port'))
              } else resolve(address.port)
            })
          }),
      ),
    )
  } finally {
    await Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            if (server.listening)
              server.close(() => {
                resolve()
              })
            else resolve()
          }),
      ),
    )
  }
}

/** Options of {@link waitFor}. */
export interface WaitForOptions {
  /** Give up after this many milliseconds. @default 10000 */
  timeout?: number
  /** Pause between attempts, in milliseconds. @default 25 */
  interval?: number
  /** Names what is awaited, for the timeout message. */
  what?: string
}

/**
 * Polls `probe` until it returns a value other than `undefined`, `null` or `false`, or throws no
 * more; resolves with that value.
 *
 * @throws {Error} After `timeout` ms, naming `what` and quoting the last error.
 */
export async function waitFor<T>(
  probe: () => T | Promise<T>,
  { timeout = 10_000, interval = 25, what = 'condition' }: WaitForOptions = {},
): Promise<Exclude<T, false | null | undefined>> {
  const deadline = Date.now() + timeout
  let lastError: unknown
  for (;;) {
    try {
      const value = await probe()
      if (value !== undefined && value !== null && value !== false) {
        return value as Exclude<T, false | null | undefined>
      }
    } catch (error) {
      lastError = error
    }
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? `: ${lastError.message}` : ''
      throw new Error(`timed out after ${String(timeout)} ms waiting for ${what}${cause}`, {
        cause: lastError,
      })
    }
    await sleep(interval)
  }
}

/**
 * Connects to `host:port`, writes `request` and resolves with `accept(firstReply)`; resolves
 * false on a connection error or after `timeoutMs`. Never rejects. Used to probe whether a
 * freshly started server answers.
 */
export async function probeTcp(
  host: string,
  port: number,
  request: string,
  accept: (reply: string) => boolean,
  timeoutMs = 500,
): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket()
    const done = (ok: boolean): void => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(timeoutMs, () => {
      done(false)
    })
    socket.once('error', () => {
      done(false)
    })
    socket.once('data', (data) => {
      done(accept(data.toString('utf8')))
    })
    socket.connect(port, host, () => socket.write(request))
  })
}
