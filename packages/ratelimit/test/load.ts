/**
 * Steady gRPC load for failover tests: a few callers sending the same request back to back,
 * counting answers and failures, until stopped.
 */
import { waitFor } from '@gatehouse/testing'
import type { Harness } from './harness.js'
import { TABLE_NOW as NOW } from './integration/decision-table.js'

/** A config with a limit the load never reaches: domain `load`, key `client`, per hour. */
export const LOAD_FILES = {
  'load.yaml': `domain: load
descriptors:
  - key: client
    rate_limit: { unit: hour, requests_per_unit: 100000000 }
`,
}

/** The cache key of `client=<value>` in {@link LOAD_FILES} at {@link NOW}, under `prefix`. */
export function loadKey(prefix: string, value: string): string {
  return `${prefix}load_client_${value}_${String(Math.floor(NOW / 1000 / 3600) * 3600)}`
}

/** What a {@link Load} saw. */
export interface LoadResult {
  /** Calls answered (OK or OVER_LIMIT). */
  readonly answered: number
  /** Calls that failed (the error answer of a backend failure). */
  readonly failed: number
  /** The distinct error texts of the failures. */
  readonly errors: ReadonlySet<string>
}

/** A running load. */
export interface Load {
  /** Counts so far. */
  current(): LoadResult
  /** Resolves once `count` more calls have been answered than now. */
  answeredMore(count: number, what: string): Promise<void>
  /** Stops the callers and resolves with the final counts (every call has ended). */
  stop(): Promise<LoadResult>
}

/** Starts `callers` concurrent callers of `h.client.shouldRateLimit(request)`. */
export function startLoad(
  h: Harness,
  request: Parameters<Harness['client']['shouldRateLimit']>[0],
  callers = 8,
): Load {
  let stopped = false
  let answered = 0
  let failed = 0
  const errors = new Set<string>()
  const caller = async (): Promise<void> => {
    while (!stopped) {
      try {
        await h.client.shouldRateLimit(request)
        answered++
      } catch (error) {
        failed++
        errors.add((error as { details?: string }).details ?? String(error))
      }
    }
  }
  const running = Promise.all(Array.from({ length: callers }, caller))
  const current = (): LoadResult => ({ answered, failed, errors })
  return {
    current,
    async answeredMore(count, what) {
      const target = answered + count
      await waitFor(() => answered >= target, { what, timeout: 20_000 })
    },
    async stop() {
      stopped = true
      await running
      return current()
    },
  }
}
