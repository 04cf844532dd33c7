/**
 * The service's error vocabulary: every error this package throws on purpose is a
 * {@link RateLimitError}, whose `code` says what failed, so that callers (and the one mapping to
 * gRPC and HTTP statuses, `server/status.ts`) can `switch` on it with narrowing. Subclasses
 * exist where the handling differs (a refused request, an unreadable one, a failing backend, a
 * bad configuration), never only for wording.
 *
 * @module
 */

/**
 * Machine-readable codes of {@link RateLimitError}, by family:
 *
 * - **Service errors** (a request the service refuses; `should_rate_limit.service_error`):
 *   `ERR_SERVICE` (upstream's refusals: empty domain, no descriptors, no configuration, an
 *   invalid override or `hits_addend`), `ERR_REQUEST_TOO_LARGE` (a cap of `RequestLimits`).
 * - **Unreadable requests**: `ERR_INVALID_WIRE_FORMAT` (protobuf), `ERR_EMPTY_BODY`,
 *   `ERR_INVALID_UTF8`, `ERR_INVALID_JSON`, `ERR_INVALID_MESSAGE` (`/json`).
 * - **Backend errors** (`should_rate_limit.redis_error`): `ERR_BACKEND` (the key-value store
 *   failed), `ERR_BACKEND_KEY` (the store cannot hold the key of a descriptor of the request,
 *   e.g. memcache's 250 bytes; found before anything is counted).
 * - **Configuration errors**: `ERR_RATELIMIT_CONFIG` (a YAML configuration file). Bad
 *   environment variables are `@gatehouse/settings`' `SettingsError` (exported here as
 *   `SettingsError`), shared with the auth server.
 */
export type RateLimitErrorCode =
  | 'ERR_SERVICE'
  | 'ERR_REQUEST_TOO_LARGE'
  | 'ERR_INVALID_WIRE_FORMAT'
  | 'ERR_EMPTY_BODY'
  | 'ERR_INVALID_UTF8'
  | 'ERR_INVALID_JSON'
  | 'ERR_INVALID_MESSAGE'
  | 'ERR_BACKEND'
  | 'ERR_BACKEND_KEY'
  | 'ERR_RATELIMIT_CONFIG'

/**
 * Base class of every error the package throws on purpose. `name` is the subclass's name;
 * `cause` keeps the underlying error (never shown to callers).
 *
 * @example
 * ```ts
 * import { RateLimitError } from '@gatehouse/ratelimit'
 * let error!: unknown
 * if (error instanceof RateLimitError && error.code === 'ERR_BACKEND') {
 *   // the store failed
 * }
 * ```
 */
export class RateLimitError extends Error {
  /** Stable machine-readable code. */
  readonly code: RateLimitErrorCode

  /**
   * @param code What failed.
   * @param message The text callers see (upstream's wording where upstream has one).
   */
  constructor(code: RateLimitErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
    this.code = code
  }
}
