import type { Clock } from '../clock.js'
import type { Fetch } from '../form-post.js'
import { findIdentitiesByUser, type Identity } from '../models/identity.js'
import type { User } from '../models/user.js'
import type { Random } from '../random.js'
import type { Db, Queryable } from '../storage/db.js'
import { HOOK_POINTS, type HookPoint, type HookTarget } from './config.js'
import { callHttpHook, HTTP_HOOK_LIMITS, type HttpHookLimits } from './http.js'
import { callPgFunctionHook, PG_FUNCTION_HOOK_TIMEOUT_MS } from './pg-function.js'

/** One hook's settings (`HOOK_<NAME>_ENABLED`, `_URI`, `_SECRETS`). */
export interface HookSettings {
  readonly enabled: boolean
  /** `null` when unset (then the hook cannot be enabled: the settings refuse it). */
  readonly uri: HookTarget | null
  /** The base64 keys of the `v1,whsec_` secrets. */
  readonly secrets: readonly string[]
}

/** Every hook point's settings (`Settings['hook']`). */
export type HooksSettings = Readonly<Record<HookPoint, HookSettings>>

/** The transports' limits and `fetch`; tests shorten them. */
export interface HookTransportOptions {
  /** @default the global `fetch` */
  readonly fetch?: Fetch | undefined
  /** @default {@link HTTP_HOOK_LIMITS} (upstream's) */
  readonly http?: Partial<HttpHookLimits> | undefined
  /** A hook function's `statement_timeout`. @default 2000 (upstream's) */
  readonly pgFunctionTimeoutMs?: number | undefined
}

/** Where hook runs are logged (pino's shape): each run at `info`, each failure at `warn`. */
export interface HookLog {
  info(fields: Record<string, unknown>, message: string): void
  warn(fields: Record<string, unknown>, message: string): void
}

/** Who a hook call is for: the client's IP goes in `metadata.ip_address`. */
export interface HookCaller {
  readonly ip: string
}

/** A call whose client is not known where it is made (`metadata.ip_address` left out). */
export const UNKNOWN_CALLER: HookCaller = Object.freeze({ ip: '' })

/** Renders a user as the API does (the payloads' `user`); wired in by `app.ts`. */
export type UserJson = (user: User, identities: readonly Identity[]) => unknown

/**
 * Runs the auth hooks (upstream `v0hooks.Manager`): builds each payload's `metadata`, sends it
 * through the hook's transport (HTTP(S) signed per Standard Webhooks, or a PostgreSQL function)
 * and returns its output. A hook that fails fails the request with a coded error.
 */
export class Hooks {
  readonly #settings: HooksSettings
  readonly #db: Db
  readonly #clock: Clock
  readonly #random: Random
  readonly #fetch: Fetch
  readonly #http: HttpHookLimits
  readonly #pgTimeoutMs: number
  readonly #userJson: UserJson
  readonly #log: HookLog | undefined

  /**
   * @param settings `Settings['hook']`.
   * @param deps The database (for `pg-functions://`), clock, randomness, the user renderer and
   *   transport options.
   */
  constructor(
    settings: HooksSettings,
    deps: {
      db: Db
      clock: Clock
      random: Random
      userJson: UserJson
      log?: HookLog | undefined
    } & HookTransportOptions,
  ) {
    this.#settings = settings
    this.#db = deps.db
    this.#clock = deps.clock
    this.#random = deps.random
    this.#fetch = deps.fetch ?? fetch
    this.#http = { ...HTTP_HOOK_LIMITS, ...deps.http }
    this.#pgTimeoutMs = deps.pgFunctionTimeoutMs ?? PG_FUNCTION_HOOK_TIMEOUT_MS
    this.#userJson = deps.userJson
    this.#log = deps.log
  }

  /**
   * A payload's `user`: the user as the API renders it, with its identities (read through `q`,
   * the database by default).
   *
   * @param identities The identities, when they are at hand.
   */
  async user(
    q: Queryable | undefined,
    user: User,
    identities?: readonly Identity[],
  ): Promise<unknown> {
    return this.#userJson(user, identities ?? (await findIdentitiesByUser(q ?? this.#db, user.id)))
  }

  /** Whether a hook is on (`HOOK_<NAME>_ENABLED` with a URI). */
  enabled(point: HookPoint): boolean {
    const hook = this.#settings[point]
    return hook.enabled && hook.uri !== null
  }

  /**
   * Whether a hook is on and a PostgreSQL function (`pg-functions://`): what it reads and writes
   * depends on the transaction it runs in.
   */
  isPgFunction(point: HookPoint): boolean {
    return this.enabled(point) && this.#settings[point].uri?.kind === 'pg-function'
  }

  /**
   * Calls a hook with `input` and `metadata` (`uuid`, `time`, `name`, `ip_address`).
   *
   * @param on Where a `pg-functions://` hook runs (an HTTP hook ignores it): in the caller's
   *   transaction, or in a transaction of its own on the given database (a request's, so that
   *   the request's deadline applies); without it, on the server's database (work outside a
   *   request).
   * @returns The hook's output (`undefined` when it answered none).
   * @throws `AuthError` See `callHttpHook` and `callPgFunctionHook`.
   */
  async invoke(
    point: HookPoint,
    input: Readonly<Record<string, unknown>>,
    caller: HookCaller,
    on?: Queryable | Db,
  ): Promise<unknown> {
    const hook = this.#settings[point]
    if (hook.uri === null) return undefined
    const payload = JSON.stringify({
      metadata: {
        uuid: this.#random.uuid(),
        time: new Date(this.#clock.now()).toISOString(),
        name: HOOK_POINTS[point].name,
        ...(caller.ip !== '' ? { ip_address: caller.ip } : {}),
      },
      ...input,
    })
    const target = hook.uri
    const started = performance.now()
    const fields = () => ({
      action: 'run_hook',
      hook: loggedUri(target),
      duration: Math.round((performance.now() - started) * 1000),
    })
    try {
      const output = await (target.kind === 'http'
        ? callHttpHook(target.url, hook.secrets, payload, {
            fetch: this.#fetch,
            clock: this.#clock,
            random: this.#random,
            limits: this.#http,
          })
        : callPgFunctionHook(target, payload, on ?? this.#db, this.#pgTimeoutMs))
      this.#log?.info({ ...fields(), success: true }, 'Hook ran successfully')
      return output
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      this.#log?.warn({ ...fields(), success: false, error: reason }, 'Hook errored out')
      throw error
    }
  }
}

/** A hook's URI as logged: an HTTP one without credentials, query or fragment. */
function loggedUri(target: HookTarget): string {
  if (target.kind === 'pg-function') return target.uri
  const url = new URL(target.url)
  return `${url.origin}${url.pathname}`
}
