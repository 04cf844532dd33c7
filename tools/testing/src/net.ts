import { readFileSync } from 'node:fs'
import { createServer, Socket, type Server } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

/** The lowest port handed out: above the well-known ports and most services' own. */
const LOWEST_PORT = 10_000

/**
 * The first port of the kernel's ephemeral range, which outgoing connections and `port: 0`
 * listeners take theirs from; 0 when it cannot be read (the kernel then picks, with `port: 0`).
 */
function ephemeralLow(): number {
  try {
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0],
    )
    return Number.isInteger(low) && low > LOWEST_PORT + 1000 ? low : 0
  } catch {
    return 0
  }
}

/** Listens on `port` (0: the kernel picks); resolves with the server, or undefined when taken. */
function bind(host: string, port: number): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE' || error.code === 'EACCES') resolve(undefined)
      else reject(error)
    })
    server.listen({ host, port }, () => {
      resolve(server)
    })
  })
}

function boundPort(server: Server): number {
  const address = server.address()
  if (address === null || typeof address === 'string')
    throw new Error('could not read the bound port')
  return address.port
}

/** Options of {@link getFreePorts}. */
export interface FreePortsOptions {
  /**
   * Each port `p` handed out also has `p + companionOffset` free and below the kernel's
   * ephemeral range: a Redis Cluster node listens on its port plus 10000 for its cluster bus.
   * @default 0 (no companion port)
   */
  readonly companionOffset?: number
}

/**
 * Finds `count` distinct free TCP ports on a loopback address for servers a test starts right
 * afterwards. They are taken at random below the kernel's ephemeral range (from 10000), where
 * neither outgoing connections nor other `port: 0` listeners take theirs, so a busy machine's
 * parallel tests do not grab them in the meantime; each is bound to check it is free, and every
 * one stays bound until all are, so none is handed out twice. Where the range cannot be read,
 * the kernel picks (`port: 0`).
 *
 * The ports are released before this resolves, so another process could still take one.
 *
 * @param host Address to bind. @default '127.0.0.1'
 * @returns The port numbers, all different.
 * @throws {Error} When no free port turns up in 50 tries per port, or a companion port is asked
 *   for where the ephemeral range cannot be read.
 */
export async function getFreePorts(
  count: number,
  host = '127.0.0.1',
  options: FreePortsOptions = {},
): Promise<number[]> {
  const offset = options.companionOffset ?? 0
  const high = ephemeralLow() - offset
  if (offset > 0 && high <= LOWEST_PORT) {
    throw new Error(`no room for ports with a companion ${String(offset)} above them`)
  }
  const held: Server[] = []
  const ports: number[] = []
  try {
    for (let tries = 0; ports.length < count; tries++) {
      if (tries >= count * 50) throw new Error(`no free port on ${host} in ${String(tries)} tries`)
      const port = high > 0 ? LOWEST_PORT + Math.floor(Math.random() * (high - LOWEST_PORT)) : 0
      const server = await bind(host, port)
      if (server === undefined) continue
      held.push(server)
      if (offset > 0) {
        const companion = await bind(host, port + offset)
        if (companion === undefined) continue
        held.push(companion)
      }
      ports.push(boundPort(server))
    }
    return ports
  } finally {
    await Promise.all(
      held.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => {
              resolve()
            })
          }),
      ),
    )
  }
}

/**
 * Finds one free TCP port on a loopback address ({@link getFreePorts} of one).
 *
 * @param host Address to bind. @default '127.0.0.1'
 * @returns The port number.
 */
export async function getFreePort(
  host = '127.0.0.1',
  options: FreePortsOptions = {},
): Promise<number> {
  const [port] = await getFreePorts(1, host, options)
  return port as number
}

/** Options of {@link waitFor}. */
export interface WaitForOptions {
  /** Give up after this many milliseconds. @default 10000 */
  timeout?: number
  /** Pause between attempts, in milliseconds. @default 25 */
  interval?: number
  /**
   * Names what is awaited, for the timeout message. A function is called only when the wait
   * times out, so it can quote what a process printed until then.
   */
  what?: string | (() => string)
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
      const named = typeof what === 'function' ? what() : what
      throw new Error(`timed out after ${String(timeout)} ms waiting for ${named}${cause}`, {
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
    let settled = false
    const done = (ok: boolean): void => {
      if (settled) return
      settled = true
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(timeoutMs, () => {
      done(false)
    })
    socket.once('error', () => {
      done(false)
    })
    // Hung up without a reply (the idle timer above stops with the socket).
    socket.once('close', () => {
      done(false)
    })
    socket.once('data', (data) => {
      done(accept(data.toString('utf8')))
    })
    socket.connect(port, host, () => socket.write(request))
  })
}
