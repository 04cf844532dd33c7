/**
 * The debug server on `DEBUG_HOST:DEBUG_PORT`: `/` (and unknown paths) lists the endpoints,
 * `/rlconfig` prints the loaded configuration in upstream's dump format, `/stats` prints our
 * counters and gauges (`name: value` per line, sorted; summed over all workers), and `/debug/pprof/profile?seconds=N`
 * records a V8 CPU profile (a `.cpuprofile` file for Chrome DevTools or speedscope).
 *
 * @module
 */
import { createServer, type Server, type ServerResponse } from 'node:http'
import { Session } from 'node:inspector'
import type { Logger } from 'pino'
import type { RateLimitService } from '../service/service.js'
import type { StatsStore } from '../stats/store.js'
import { guardRequests } from './guard.js'
import type { StatEntry } from './workers.js'

/** Dependencies of {@link buildDebugServer}. */
export interface DebugServerDeps {
  readonly service: RateLimitService
  readonly stats: StatsStore
  /**
   * What `/stats` lists: with several workers, the sum over all of them
   * (`clusterStatsSource` in `workers.ts`). @default this process' `stats`
   */
  readonly statsListing?: () => Promise<StatEntry[]>
  /** Where failures of the handlers are logged. */
  readonly logger: Logger
}

const ENDPOINTS: Readonly<Record<string, string>> = {
  '/debug/pprof/': 'root of various pprof endpoints. hit for help.',
  '/debug/pprof/profile': 'CPU profiling endpoint',
  '/rlconfig': 'print out the currently loaded configuration for debugging',
  '/stats': 'print out stats',
}

/** Longest CPU profile, in seconds. */
export const MAX_PROFILE_SECONDS = 300

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
  })
  res.end(body)
}

function post<T>(session: Session, method: string, params?: object): Promise<T> {
  return new Promise((resolve, reject) => {
    session.post(method, params ?? {}, (error, result) => {
      if (error !== null) reject(error)
      else resolve(result as T)
    })
  })
}

/**
 * Records a CPU profile of this process.
 *
 * @param seconds Duration in seconds.
 * @returns The profile as JSON text (Chrome `.cpuprofile` format).
 */
export async function recordCpuProfile(seconds: number): Promise<string> {
  const session = new Session()
  session.connect()
  try {
    await post(session, 'Profiler.enable')
    await post(session, 'Profiler.start')
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
    const { profile } = await post<{ profile: unknown }>(session, 'Profiler.stop')
    return JSON.stringify(profile)
  } finally {
    session.disconnect()
  }
}

/** The request target as a URL, or undefined when it cannot be parsed (e.g. `http://[/`). */
function parseTarget(target: string): URL | undefined {
  try {
    return new URL(target, 'http://debug')
  } catch {
    return undefined
  }
}

/**
 * Builds the debug server (not yet listening). A request target that is not a valid URL is
 * answered with 400; anything a handler throws is logged and answered with 500.
 */
export function buildDebugServer(deps: DebugServerDeps): Server {
  let profiling = false
  const listing = deps.statsListing ?? (() => Promise.resolve(deps.stats.snapshot()))
  return createServer(
    guardRequests('debug', deps.logger, (req, res) => {
      req.resume()
      const url = parseTarget(req.url ?? '/')
      if (url === undefined) {
        text(res, 400, 'malformed request target\n')
        return
      }
      switch (url.pathname) {
        case '/rlconfig':
          text(res, 200, deps.service.config?.dump() ?? '')
          return
        case '/stats':
          listing().then(
            (stats) => {
              text(res, 200, stats.map((s) => `${s.name}: ${String(s.value)}\n`).join(''))
            },
            (error: unknown) => {
              deps.logger.error({ err: error }, 'cannot list the stats')
              text(res, 503, `${(error as Error).message}\n`)
            },
          )
          return
        case '/debug/pprof/':
          text(res, 200, 'profile: CPU profile; ?seconds=N (default 30), V8 .cpuprofile format\n')
          return
        case '/debug/pprof/profile': {
          const seconds = Number(url.searchParams.get('seconds') ?? '30')
          if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_PROFILE_SECONDS) {
            text(res, 400, `seconds must be a number from 1 to ${String(MAX_PROFILE_SECONDS)}\n`)
            return
          }
          if (profiling) {
            text(res, 409, 'a profile is already being recorded\n')
            return
          }
          profiling = true
          recordCpuProfile(seconds).then(
            (profile) => {
              profiling = false
              res.writeHead(200, {
                'content-type': 'application/json',
                'content-disposition': 'attachment; filename="ratelimit.cpuprofile"',
              })
              res.end(profile)
            },
            (error: unknown) => {
              profiling = false
              text(res, 500, `could not record a profile: ${(error as Error).message}\n`)
            },
          )
          return
        }
        default: {
          const lines = Object.entries(ENDPOINTS)
            .sort(([a], [b]) => (a < b ? -1 : 1))
            .map(([path, help]) => `${path}: ${help}\n`)
          text(res, 200, lines.join(''))
        }
      }
    }),
  )
}
