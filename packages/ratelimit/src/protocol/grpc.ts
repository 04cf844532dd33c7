/**
 * The gRPC names both sides of the rate limit service share: the method paths, the metadata keys
 * gatehouse adds (a gatehouse extension: Envoy and Go clients ignore metadata they do not know),
 * and grpc-js definitions of both services with the package's protobuf codec (grpc-js clients and
 * the grpc-js server use them). Imported by the client entry point (`@gatehouse/ratelimit/client`)
 * as by the servers, so it loads nothing of the service.
 *
 * @module
 */
import type * as grpc from '@grpc/grpc-js'
import {
  decodeHealthCheckRequest,
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  encodeHealthCheckResponse,
} from './protobuf/health.js'
import { decodeRateLimitRequest, encodeRateLimitRequest } from './protobuf/request.js'
import { decodeRateLimitResponse, encodeRateLimitResponse } from './protobuf/response.js'

/** Full method path of `ShouldRateLimit`. */
export const SHOULD_RATE_LIMIT_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit'
/** Full method path of `Health/Check`. */
export const HEALTH_CHECK_PATH = '/grpc.health.v1.Health/Check'
/** Full method path of `Health/Watch`. */
export const HEALTH_WATCH_PATH = '/grpc.health.v1.Health/Watch'

/**
 * The response header (gRPC initial metadata) of every successful `ShouldRateLimit` answer while
 * the service decides each descriptor of a request on its own
 * (`RateLimitService.independentDescriptors`: `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT` off, no
 * `QUOTA_MODE`, no rule with `replaces` or `quota_mode`). Its value is
 * `MAX_DESCRIPTORS_PER_REQUEST` (decimal): a client may then concatenate the descriptors of
 * several requests of one domain and `hits_addend` into one request of at most that many
 * descriptors and split the statuses back (`RateLimitClient`'s `coalesce`). A gatehouse
 * extension; Envoy ignores response metadata it does not know.
 */
export const COALESCE_MAX_DESCRIPTORS_HEADER = 'gatehouse-coalesce-max-descriptors'

/**
 * The trailer of a failed call that names the error's code (`ERR_SERVICE`, `ERR_BACKEND`, …), as
 * `x-gatehouse-error-code` does for `/json`: a gatehouse extension (Envoy and Go clients ignore
 * metadata they do not know), read by `RateLimitClient` to tell a refused request from a failed
 * backend, which gRPC's `UNKNOWN` does not.
 */
export const ERROR_CODE_TRAILER = 'gatehouse-error-code'

/** The rate limit service definition, with our protobuf codec (usable by clients too). */
export const rateLimitServiceDefinition = {
  ShouldRateLimit: {
    path: SHOULD_RATE_LIMIT_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: encodeRateLimitRequest,
    requestDeserialize: decodeRateLimitRequest,
    responseSerialize: encodeRateLimitResponse,
    responseDeserialize: decodeRateLimitResponse,
    originalName: 'shouldRateLimit',
  },
} satisfies grpc.ServiceDefinition

/** The `grpc.health.v1.Health` service definition. */
export const healthServiceDefinition = {
  Check: {
    path: HEALTH_CHECK_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: encodeHealthCheckRequest,
    requestDeserialize: decodeHealthCheckRequest,
    responseSerialize: encodeHealthCheckResponse,
    responseDeserialize: decodeHealthCheckResponse,
  },
  Watch: {
    path: HEALTH_WATCH_PATH,
    requestStream: false,
    responseStream: true,
    requestSerialize: encodeHealthCheckRequest,
    requestDeserialize: decodeHealthCheckRequest,
    responseSerialize: encodeHealthCheckResponse,
    responseDeserialize: decodeHealthCheckResponse,
  },
} satisfies grpc.ServiceDefinition
