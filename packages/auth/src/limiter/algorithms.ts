/**
 * How the rate limit service may count a client's budget (`RATE_LIMIT_SERVICE_ALGORITHM`).
 *
 * @module
 */

/**
 * How the rate limit service counts a client's budget (`RATE_LIMIT_SERVICE_ALGORITHM`): the
 * service's `token_bucket`, or the two `fixed_window`s that approximate it where the service
 * has no token bucket.
 */
export const SERVICE_ALGORITHMS = ['token_bucket', 'fixed_window'] as const

/** One of {@link SERVICE_ALGORITHMS}. */
export type ServiceAlgorithm = (typeof SERVICE_ALGORITHMS)[number]
