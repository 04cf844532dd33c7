/**
 * The gRPC methods, once for both gRPC servers: `ShouldRateLimit` of
 * `envoy.service.ratelimit.v3.RateLimitService` and `Check` / `Watch` of `grpc.health.v1.Health`,
 * from request bytes to response bytes or a status. Each handler decodes (with the service's
 * request caps), calls the service or the health checker, encodes, counts
 * `ratelimit_server.<Method>.total_requests` and `.response_time` (milliseconds), and maps
 * failures with `status.ts`; anything unexpected (a bug) is logged and answered INTERNAL
 * `internal error`. The transports (`grpc-native.ts` on node:http2, `grpc.ts` on @grpc/grpc-js)
 * only move bytes, statuses and deadlines.
 *
 * @see https://github.com/envoyproxy/envoy/blob/main/api/envoy/service/ratelimit/v3/rls.proto
 * @see https://github.com/grpc/grpc/blob/master/doc/health-checking.md
 * @module
 */
import type { Logger } from 'pino'
import { systemMonotonicClock, type MonotonicClock } from '../clock.js'
import { RequestLimitError } from '../protocol/limits.js'
import {
  decodeHealthCheckRequest,
  encodeHealthCheckResponse,
  type ServingStatus,
} from '../protocol/protobuf/health.js'
import { decodeRateLimitRequest } from '../protocol/protobuf/request.js'
import { encodeRateLimitResponse } from '../protocol/protobuf/response.js'
import { COALESCE_MAX_DESCRIPTORS_HEADER, SHOULD_RATE_LIMIT_PATH } from '../protocol/grpc.js'
import type { RateLimitRequest } from '../protocol/types.js'
import type { RateLimitService } from '../service/service.js'
import type { StatsStore } from '../stats/store.js'
import { endWithError, type TraceCarrier, type Tracing } from '../telemetry/tracing.js'
import type { HealthChecker } from './health.js'
import { GRPC_STATUS, grpcStatusOf, INTERNAL_GRPC_STATUS, type GrpcStatus } from './status.js'

/** The gRPC server span's name (OpenTelemetry's `<package.service>/<method>`). */
const SHOULD_RATE_LIMIT_SPAN = SHOULD_RATE_LIMIT_PATH.slice(1)
const SHOULD_RATE_LIMIT_ATTRIBUTES = {
  'rpc.system': 'grpc',
  'rpc.service': 'envoy.service.ratelimit.v3.RateLimitService',
  'rpc.method': 'ShouldRateLimit',
}

/** Health service names answered: `""` (the whole server) and `"ratelimit"` (upstream's). */
const HEALTH_SERVICES: ReadonlySet<string> = new Set(['', 'ratelimit'])

/** Response headers (gRPC initial metadata) a handler asks the transport to send. */
export type ResponseHeaders = Readonly<Record<string, string>>

/**
 * Receives the outcome of a unary call: a status to end it with, or `null` and the response
 * message (gRPC-framed when the handler was asked to), with the response headers to send
 * (always the same object for the same headers, so transports can keep what they derive from
 * it). The shape of grpc-js' `sendUnaryData`, whose third argument (trailers) the grpc-js server
 * adapts.
 */
export type UnaryCallback = (
  status: GrpcStatus | null,
  message?: Buffer,
  headers?: ResponseHeaders,
) => void

/** A `Health/Watch` call that was accepted. */
export interface HealthWatch {
  /** The first message: the current status (`SERVICE_UNKNOWN` for a name not served). */
  readonly first: Buffer
  /**
   * Calls `write` with a message at every change of the overall health.
   *
   * @returns A function that stops the updates (call it when the call ends).
   */
  subscribe(write: (message: Buffer) => void): () => void
}

/** Dependencies of {@link createGrpcHandlers}. */
export interface GrpcHandlerDeps {
  readonly service: RateLimitService
  readonly health: HealthChecker
  readonly stats: StatsStore
  readonly logger: Logger
  /** Times the calls. @default {@link systemMonotonicClock} */
  readonly monotonicClock?: MonotonicClock
  /** Spans for `ShouldRateLimit` calls (`TRACING_ENABLED`); undefined = no tracer calls at all. */
  readonly tracing?: Tracing
}

/** The gRPC methods on request bytes. `framed` asks for messages with the 5-byte gRPC prefix. */
export interface GrpcHandlers {
  /**
   * `ShouldRateLimit`: answers with a `RateLimitResponse` (and the
   * {@link COALESCE_MAX_DESCRIPTORS_HEADER} header when the service allows coalescing), or
   * UNKNOWN / INTERNAL. `trace` holds the call's metadata, read for a W3C `traceparent` when
   * tracing is on.
   */
  readonly shouldRateLimit: (
    request: Buffer,
    framed: boolean,
    done: UnaryCallback,
    trace?: TraceCarrier,
  ) => void
  /** `Health/Check`: answers with a `HealthCheckResponse`, or NOT_FOUND `unknown service`. */
  readonly check: (request: Buffer, framed: boolean, done: UnaryCallback) => void
  /**
   * `Health/Watch`: the current status, then every change (for `""` and `ratelimit`).
   *
   * @returns The watch, or the status to end the call with (undecodable request, or a failure).
   */
  readonly watch: (request: Buffer, framed: boolean) => HealthWatch | GrpcStatus
  /**
   * The last resort for a failure outside the handlers (a transport bug): logs
   * `unexpected error in <method>`.
   *
   * @returns INTERNAL `internal error`.
   */
  readonly internal: (method: string, error: unknown) => GrpcStatus
}

/** Prefixes a message with the gRPC message header (not compressed, length). */
export function frameMessage(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length)
  out[0] = 0
  out.writeUInt32BE(message.length, 1)
  message.copy(out, 5)
  return out
}

/** Builds the handlers. */
export function createGrpcHandlers(deps: GrpcHandlerDeps): GrpcHandlers {
  const { service, health, logger, tracing } = deps
  const clock = deps.monotonicClock ?? systemMonotonicClock
  const shouldTotal = deps.stats.counter('ratelimit_server.ShouldRateLimit.total_requests')
  const shouldTime = deps.stats.timer('ratelimit_server.ShouldRateLimit.response_time')
  const checkTotal = deps.stats.counter('ratelimit_server.Check.total_requests')
  const checkTime = deps.stats.timer('ratelimit_server.Check.response_time')
  const coalesceHeaders: ResponseHeaders = Object.freeze({
    [COALESCE_MAX_DESCRIPTORS_HEADER]: String(service.requestLimits.maxDescriptors),
  })

  const internal = (method: string, error: unknown): GrpcStatus => {
    logger.error({ err: error }, `unexpected error in ${method}`)
    return INTERNAL_GRPC_STATUS
  }
  const failed = (method: string, error: unknown): GrpcStatus =>
    grpcStatusOf(error) ?? internal(method, error)
  const statusOf = (name: string): ServingStatus | undefined =>
    HEALTH_SERVICES.has(name) ? (health.healthy() ? 'SERVING' : 'NOT_SERVING') : undefined
  const encodeHealth = (status: ServingStatus, framed: boolean): Buffer => {
    const message = encodeHealthCheckResponse(status)
    return framed ? frameMessage(message) : message
  }

  return {
    internal,

    shouldRateLimit: (bytes, framed, callback, carrier) => {
      shouldTotal.add()
      const start = clock.now()
      let done = callback
      const span = tracing?.startServer(
        SHOULD_RATE_LIMIT_SPAN,
        SHOULD_RATE_LIMIT_ATTRIBUTES,
        carrier,
      )
      if (span !== undefined) {
        done = (status, message, headers) => {
          span.span.setAttribute('rpc.grpc.status_code', status?.code ?? 0)
          if (status === null) span.span.end()
          else endWithError(span.span, status.details)
          callback(status, message, headers)
        }
      }
      let pending
      try {
        let request: RateLimitRequest
        try {
          request = decodeRateLimitRequest(bytes, service.requestLimits)
        } catch (error) {
          // A request beyond a cap is refused (and counted) as the service refuses any other.
          throw error instanceof RequestLimitError ? service.refuse(error) : error
        }
        pending = service.shouldRateLimit(request, span)
      } catch (error) {
        shouldTime.record(clock.now() - start)
        done(failed('ShouldRateLimit', error))
        return
      }
      pending.then(
        (response) => {
          shouldTime.record(clock.now() - start)
          let message
          try {
            message = encodeRateLimitResponse(response, framed)
          } catch (error) {
            done(internal('ShouldRateLimit', error))
            return
          }
          done(null, message, service.independentDescriptors ? coalesceHeaders : undefined)
        },
        (error: unknown) => {
          shouldTime.record(clock.now() - start)
          done(failed('ShouldRateLimit', error))
        },
      )
    },

    check: (bytes, framed, done) => {
      checkTotal.add()
      const start = clock.now()
      let status
      try {
        status = statusOf(decodeHealthCheckRequest(bytes).service)
      } catch (error) {
        checkTime.record(clock.now() - start)
        done(failed('Check', error))
        return
      }
      checkTime.record(clock.now() - start)
      if (status === undefined) done({ code: GRPC_STATUS.NOT_FOUND, details: 'unknown service' })
      else done(null, encodeHealth(status, framed))
    },

    watch: (bytes, framed) => {
      try {
        const name = decodeHealthCheckRequest(bytes).service
        const first = encodeHealth(statusOf(name) ?? 'SERVICE_UNKNOWN', framed)
        return {
          first,
          subscribe(write) {
            if (!HEALTH_SERVICES.has(name)) return noop
            return health.subscribe((healthy) => {
              write(encodeHealth(healthy ? 'SERVING' : 'NOT_SERVING', framed))
            })
          },
        }
      } catch (error) {
        return failed('Watch', error)
      }
    },
  }
}

function noop(): void {
  // Nothing to stop.
}
