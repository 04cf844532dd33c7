/**
 * Waiting for a counter backend at start, the same way for every backend: try, and after each
 * failure log a `warn` line with the address and the error, wait (doubling the interval, with
 * ±50% jitter, as upstream's `jpillora/backoff` start-up retry of Redis), and give up after a
 * bounded time with a {@link BackendUnavailableError} that names the setting to fix.
 *
 * @module
 */
import { setTimeout as delay } from 'node:timers/promises'
import type { Logger } from 'pino'
import { systemMonotonicClock, systemRandom, type MonotonicClock, type Random } from '../clock.js'
import { BackendError } from './cache.js'

/**
 * A backend that could not be reached at start within the start-up timeout (or whose address
 * cannot be resolved at all). Its message starts with the setting to fix, then says which
 * backend, where, and the last error, e.g. `REDIS_URL: the main redis at 127.0.0.1:6379 did not
 * answer within 60 s (BACKEND_STARTUP_TIMEOUT_SECONDS): connect ECONNREFUSED 127.0.0.1:6379`.
 */
export class BackendUnavailableError extends BackendError {
  /** The variable that names the backend's address (`REDIS_URL`, `MEMCACHE_HOST_PORT`, …). */
  readonly setting: string
  /** The address tried (credentials masked). */
  readonly address: string

  constructor(setting: string, address: string, message: string, options?: { cause?: unknown }) {
    super(`${setting}: ${message}`, options)
    this.setting = setting
    this.address = address
  }
}

/** One backend (or one of its instances) to wait for. */
export interface StartupTarget {
  /** What it is, for messages: `the main redis`, `memcache`. */
  readonly what: string
  /** Where it is (credentials masked): an address, a list, a socket path or an SRV name. */
  readonly address: string
  /** The variable holding {@link address}: `REDIS_URL`, `MEMCACHE_HOST_PORT`, … */
  readonly setting: string
  /**
   * One attempt: resolves when the backend answers; rejects with the reason otherwise. May take
   * up to `budgetMs` (e.g. to let a first connection settle), not much longer.
   */
  attempt(budgetMs: number): Promise<void>
  /**
   * Waits between attempts, at most `ms`; may resolve earlier, as soon as a new attempt is worth
   * making (a connection turned ready). @default a plain wait of `ms`
   */
  pause?(ms: number): Promise<unknown>
  /**
   * An error that retrying cannot fix (an SRV record that cannot be looked up): thrown at once.
   * @default never
   */
  isFatal?(error: unknown): boolean
  /** True once the store is closed: the wait ends with an error. */
  closed(): boolean
  /** Added to the failure text, e.g. a hint about `REDIS_SOCKET_TYPE`. */
  hint?(error: unknown): string | undefined
}

/** How long and how often to try. */
export interface StartupPolicy {
  /** The wait after the first failure, milliseconds; doubled after each. */
  readonly initialIntervalMs: number
  /** The longest wait between attempts, milliseconds. */
  readonly maxIntervalMs: number
  /** Give up after this long, milliseconds; 0 waits forever. */
  readonly timeoutMs: number
  /** The variable that set {@link timeoutMs}, named when giving up. */
  readonly timeoutSetting: string
}

/**
 * The settings' defaults: checks 1 s apart at first, at most 30 s apart
 * (`REDIS_STARTUP_INITIAL_INTERVAL`, `REDIS_STARTUP_MAX_INTERVAL`, as upstream), for 60 s
 * (`BACKEND_STARTUP_TIMEOUT_SECONDS`).
 */
export const DEFAULT_STARTUP_POLICY: StartupPolicy = {
  initialIntervalMs: 1000,
  maxIntervalMs: 30_000,
  timeoutMs: 60_000,
  timeoutSetting: 'BACKEND_STARTUP_TIMEOUT_SECONDS',
}

/** What {@link waitForBackend} needs besides the target and the policy. */
export interface StartupDeps {
  readonly logger: Logger
  /** Jitter of the intervals. @default {@link systemRandom} */
  readonly random?: Random
  /** Elapsed time. @default {@link systemMonotonicClock} */
  readonly clock?: MonotonicClock
}

function messageOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(messageOf).join('; ')
  }
  return error instanceof Error ? error.message : String(error)
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`
}

/**
 * Tries `target` until it answers. After each failed attempt logs one `warn` line (`cannot reach
 * the main redis at 127.0.0.1:6379 (REDIS_URL): connect ECONNREFUSED …; retrying in 1.2 s`),
 * then pauses for the current interval (jittered ±50%, doubled each time up to
 * `maxIntervalMs`), never past the deadline.
 *
 * @throws {@link BackendUnavailableError} When `timeoutMs` has passed without an answer (naming
 *   `target.setting`, the address, the timeout's variable and the last error), when the target
 *   says the error is fatal, or when the store is closed while waiting.
 */
export async function waitForBackend(
  target: StartupTarget,
  policy: StartupPolicy,
  deps: StartupDeps,
): Promise<void> {
  const clock = deps.clock ?? systemMonotonicClock
  const random = deps.random ?? systemRandom
  const started = clock.now()
  const deadline = policy.timeoutMs > 0 ? started + policy.timeoutMs : Infinity
  const describe = (error: unknown): string => {
    const hint = target.hint?.(error)
    return hint === undefined ? messageOf(error) : `${messageOf(error)} (${hint})`
  }
  let interval = policy.initialIntervalMs
  for (;;) {
    if (target.closed()) {
      throw new BackendUnavailableError(target.setting, target.address, `${target.what} closed`)
    }
    let failure: unknown
    try {
      await target.attempt(Math.max(0, Math.min(interval, deadline - clock.now())))
      return
    } catch (error) {
      failure = error
    }
    if (target.isFatal?.(failure) === true) {
      throw new BackendUnavailableError(target.setting, target.address, describe(failure), {
        cause: failure,
      })
    }
    const now = clock.now()
    if (now >= deadline) {
      throw new BackendUnavailableError(
        target.setting,
        target.address,
        `${target.what} at ${target.address} did not answer within ${seconds(policy.timeoutMs)} (${policy.timeoutSetting}): ${describe(failure)}`,
        { cause: failure },
      )
    }
    const wait = Math.min(interval * (0.5 + random()), deadline - now)
    deps.logger.warn(
      `cannot reach ${target.what} at ${target.address} (${target.setting}): ${describe(failure)}; retrying in ${seconds(wait)}` +
        (deadline === Infinity
          ? ''
          : `, giving up ${seconds(deadline - now)} from now (${policy.timeoutSetting})`),
    )
    await (target.pause?.(wait) ?? delay(wait))
    interval = Math.min(interval * 2, policy.maxIntervalMs)
  }
}
