/**
 * `@gatehouse/ratelimit/client`: a client of the rate limit service (gatehouse-ratelimit or
 * envoyproxy/ratelimit), for a process that asks for decisions and does not make them. It loads
 * the client, the wire codec and @grpc/grpc-js, and nothing of the service (no Redis, memcache,
 * xDS, settings or configuration code). Start with {@link RateLimitClient}.
 *
 * @packageDocumentation
 */
export {
  GRPC_CALL_STATUS,
  MAX_RESPONSE_MESSAGE_BYTES,
  RateLimitCallError,
  RateLimitClient,
  serviceErrorCode,
  type RateLimitClientCounts,
  type RateLimitClientOptions,
} from './client.js'
export type { Clock } from '../clock.js'
export { COALESCE_MAX_DESCRIPTORS_HEADER, ERROR_CODE_TRAILER } from '../protocol/grpc.js'
export type * from '../protocol/types.js'
