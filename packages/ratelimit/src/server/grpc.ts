/**
 * The gRPC server: `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` and
 * `grpc.health.v1.Health` (`Check`, `Watch`), on @grpc/grpc-js with the hand-written codec of
 * `protocol/protobuf.ts`. Service errors are returned as status UNKNOWN with upstream's message.
 *
 * @module
 */
import * as grpc from '@grpc/grpc-js'
import { constants as http2 } from 'node:http2'
import type { Logger } from 'pino'
import {
  decodeHealthCheckRequest,
  decodeRateLimitRequest,
  decodeRateLimitResponse,
  encodeHealthCheckRequest,
  encodeHealthCheckResponse,
  encodeRateLimitRequest,
  encodeRateLimitResponse,
  decodeHealthCheckResponse,
  WireFormatError,
  type HealthCheckRequest,
  type ServingStatus,
} from '../protocol/protobuf.js'
import { RequestLimitError, type RequestLimits } from '../protocol/limits.js'
import type { RateLimitRequest, RateLimitResponse } from '../protocol/types.js'
import { ShouldRateLimitError, type RateLimitService } from '../service/service.js'
import type { StatsStore } from '../stats/store.js'
import type { HealthChecker } from './health.js'

/** Full method path of `ShouldRateLimit`. */
export const SHOULD_RATE_LIMIT_PATH = '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit'

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

/**
 * A request whose bytes could not be decoded (answered with INTERNAL, as Go does) or that
 * exceeds a cap (answered as a service error).
 */
interface UndecodableRequest {
  readonly decodeError: WireFormatError | RequestLimitError
}

/**
 * The server's copy of the definition: requests are decoded with the service's caps, and
 * undecodable or refused ones reach the handler.
 */
function serverRateLimitDefinition(limits: RequestLimits) {
  return {
    ShouldRateLimit: {
      ...rateLimitServiceDefinition.ShouldRateLimit,
      requestDeserialize: (buf: Buffer): RateLimitRequest | UndecodableRequest => {
        try {
          return decodeRateLimitRequest(buf, limits)
        } catch (error) {
          if (error instanceof WireFormatError || error instanceof RequestLimitError) {
            return { decodeError: error }
          }
          throw error
        }
      },
    },
  } satisfies grpc.ServiceDefinition
}

/** The `grpc.health.v1.Health` service definition. */
export const healthServiceDefinition = {
  Check: {
    path: '/grpc.health.v1.Health/Check',
    requestStream: false,
    responseStream: false,
    requestSerialize: encodeHealthCheckRequest,
    requestDeserialize: decodeHealthCheckRequest,
    responseSerialize: encodeHealthCheckResponse,
    responseDeserialize: decodeHealthCheckResponse,
  },
  Watch: {
    path: '/grpc.health.v1.Health/Watch',
    requestStream: false,
    responseStream: true,
    requestSerialize: encodeHealthCheckRequest,
    requestDeserialize: decodeHealthCheckRequest,
    responseSerialize: encodeHealthCheckResponse,
    responseDeserialize: decodeHealthCheckResponse,
  },
} satisfies grpc.ServiceDefinition

/** Health service names answered: `""` (the whole server) and `"ratelimit"` (upstream's). */
const HEALTH_SERVICES = new Set(['', 'ratelimit'])

/** Dependencies of {@link buildGrpcServer}. */
export interface GrpcServerDeps {
  readonly service: RateLimitService
  readonly health: HealthChecker
  readonly stats: StatsStore
  readonly logger: Logger
}

/** Options of {@link buildGrpcServer}. */
export interface GrpcServerOptions {
  /** `GRPC_MAX_CONNECTION_AGE` in milliseconds (grpc-js adds ±10% jitter). */
  readonly maxConnectionAgeMs: number
  /** `GRPC_MAX_CONNECTION_AGE_GRACE` in milliseconds. */
  readonly maxConnectionAgeGraceMs: number
  /** `GRPC_MAX_CONNECTION_IDLE` in milliseconds; 0 never closes idle connections. @default 0 */
  readonly maxConnectionIdleMs?: number
  /** `GRPC_MAX_CONCURRENT_STREAMS`. @default 100 */
  readonly maxConcurrentStreams?: number
  /** `GRPC_MAX_CALL_DURATION` in milliseconds. @default 10000 */
  readonly maxCallDurationMs?: number
}

/**
 * After answering a call whose request is unfinished, grpc-js keeps its HTTP/2 stream open (and
 * the part of the message it buffered) until the client ends it. This resets the stream with
 * NO_ERROR (RFC 9113 §8.1), as the lean server does, through the stream grpc-js keeps in its
 * base call (a private field: when a grpc-js release renames it this does nothing, and the
 * integration test that expects the reset fails).
 */
function resetUnfinished(call: grpc.ServerInterceptingCallInterface): void {
  const stream = (call as unknown as { stream?: unknown }).stream as
    { readableEnded?: unknown; closed?: unknown; close?: unknown } | undefined
  if (
    stream !== undefined &&
    stream.readableEnded === false &&
    stream.closed === false &&
    typeof stream.close === 'function'
  ) {
    ;(stream.close as (code: number) => void).call(stream, http2.NGHTTP2_NO_ERROR)
  }
}

/**
 * Ends every call at `maxMs` with DEADLINE_EXCEEDED `Deadline exceeded` (what grpc-js answers
 * when a client's `grpc-timeout` passes, which it keeps enforcing itself): a server-side maximum,
 * counted from the call's headers. A server-streaming call (`Health/Watch`) is bound by it only
 * until its request arrives. Whenever a call ends with its request unfinished (this deadline,
 * the client's, an oversized message), its stream is reset.
 */
export function maxCallDurationInterceptor(maxMs: number): grpc.ServerInterceptor {
  return (method, call) => {
    let timer: NodeJS.Timeout | undefined
    const stop = (): void => {
      clearTimeout(timer)
      timer = undefined
    }
    return new grpc.ServerInterceptingCall(call, {
      start(next) {
        timer = setTimeout(
          () => {
            timer = undefined
            call.sendStatus({
              code: grpc.status.DEADLINE_EXCEEDED,
              details: 'Deadline exceeded',
              metadata: null,
            })
            resetUnfinished(call)
          },
          Math.min(maxMs, 2 ** 31 - 1),
        )
        next({
          onReceiveMessage(message, nextMessage) {
            if (method.responseStream) stop()
            nextMessage(message)
          },
          onCancel() {
            // grpc-js reports every end of a call here, its own deadline and errors included.
            stop()
            resetUnfinished(call)
          },
        })
      },
      sendStatus(status, nextStatus) {
        stop()
        nextStatus(status)
      },
    })
  }
}

/** Per-method server stats: `ratelimit_server.<Method>.total_requests` and `.response_time` (ms). */
function methodStats(stats: StatsStore, method: string): { begin(): () => void } {
  const total = stats.counter(`ratelimit_server.${method}.total_requests`)
  const time = stats.timer(`ratelimit_server.${method}.response_time`)
  return {
    begin() {
      total.add()
      const start = performance.now()
      return () => {
        time.record(performance.now() - start)
      }
    },
  }
}

/**
 * Maps a service failure to a gRPC status: {@link ShouldRateLimitError} → UNKNOWN with its
 * message (as upstream), anything else → INTERNAL.
 */
export function toGrpcError(error: unknown, logger: Logger): Partial<grpc.StatusObject> {
  if (error instanceof ShouldRateLimitError) {
    return { code: grpc.status.UNKNOWN, details: error.message }
  }
  return internalError(logger, 'ShouldRateLimit', error)
}

/**
 * The last-resort answer to a handler that failed unexpectedly (a bug): logged, and answered
 * INTERNAL `internal error` as the lean server does.
 */
function internalError(
  logger: Logger,
  method: string,
  error: unknown,
): Partial<grpc.StatusObject> & { code: grpc.status; details: string } {
  logger.error({ err: error }, `unexpected error in ${method}`)
  return { code: grpc.status.INTERNAL, details: 'internal error' }
}

/**
 * Builds the gRPC server (not yet bound).
 *
 * @returns A grpc-js server with both services registered.
 */
export function buildGrpcServer(deps: GrpcServerDeps, options: GrpcServerOptions): grpc.Server {
  const { service, health, logger } = deps
  const idle = options.maxConnectionIdleMs ?? 0
  const server = new grpc.Server({
    'grpc.max_connection_age_ms': Math.min(options.maxConnectionAgeMs, 2 ** 31 - 1),
    'grpc.max_connection_age_grace_ms': Math.min(options.maxConnectionAgeGraceMs, 2 ** 31 - 1),
    'grpc.max_concurrent_streams': options.maxConcurrentStreams ?? 100,
    ...(idle > 0 ? { 'grpc.max_connection_idle_ms': Math.min(idle, 2 ** 31 - 2) } : {}),
    interceptors: [maxCallDurationInterceptor(options.maxCallDurationMs ?? 10_000)],
  })
  const shouldStats = methodStats(deps.stats, 'ShouldRateLimit')
  const checkStats = methodStats(deps.stats, 'Check')

  server.addService(serverRateLimitDefinition(service.requestLimits), {
    ShouldRateLimit(
      call: grpc.ServerUnaryCall<RateLimitRequest | UndecodableRequest, RateLimitResponse>,
      callback: grpc.sendUnaryData<RateLimitResponse>,
    ) {
      const end = shouldStats.begin()
      const request = call.request
      if ('decodeError' in request) {
        end()
        const error = request.decodeError
        if (error instanceof RequestLimitError) {
          callback({ code: grpc.status.UNKNOWN, details: service.refuse(error).message })
          return
        }
        // Go's gRPC server answers a message it cannot unmarshal like this.
        callback({
          code: grpc.status.INTERNAL,
          details: `grpc: error unmarshalling request: ${error.message}`,
        })
        return
      }
      let pending: Promise<RateLimitResponse>
      try {
        pending = service.shouldRateLimit(request)
      } catch (error) {
        end()
        callback(toGrpcError(error, logger))
        return
      }
      pending.then(
        (response) => {
          end()
          callback(null, response)
        },
        (error: unknown) => {
          end()
          callback(toGrpcError(error, logger))
        },
      )
    },
  })

  const statusOf = (name: string): ServingStatus | undefined =>
    HEALTH_SERVICES.has(name) ? (health.healthy() ? 'SERVING' : 'NOT_SERVING') : undefined

  server.addService(healthServiceDefinition, {
    Check(
      call: grpc.ServerUnaryCall<HealthCheckRequest, ServingStatus>,
      callback: grpc.sendUnaryData<ServingStatus>,
    ) {
      const end = checkStats.begin()
      let status: ServingStatus | undefined
      try {
        status = statusOf(call.request.service)
      } catch (error) {
        end()
        callback(internalError(logger, 'Check', error))
        return
      }
      end()
      if (status === undefined)
        callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' })
      else callback(null, status)
    },
    Watch(call: grpc.ServerWritableStream<HealthCheckRequest, ServingStatus>) {
      try {
        const name = call.request.service
        call.write(statusOf(name) ?? 'SERVICE_UNKNOWN')
        if (!HEALTH_SERVICES.has(name)) return
        const unsubscribe = health.subscribe((healthy) => {
          call.write(healthy ? 'SERVING' : 'NOT_SERVING')
        })
        call.on('cancelled', unsubscribe)
        call.on('close', unsubscribe)
      } catch (error) {
        call.emit('error', internalError(logger, 'Watch', error))
      }
    },
  })
  return server
}

/**
 * Binds a gRPC server.
 *
 * @param address `host:port` or `unix:/path`.
 * @returns The bound port (0 for unix sockets).
 */
export function bindGrpcServer(server: grpc.Server, address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error, port) => {
      if (error !== null) reject(error)
      else resolve(port)
    })
  })
}

/**
 * Stops accepting calls and resolves when in-flight calls have finished, or forces the
 * shutdown after `timeoutMs`.
 */
export function shutdownGrpcServer(server: grpc.Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown()
      resolve()
    }, timeoutMs)
    timer.unref()
    server.tryShutdown(() => {
      clearTimeout(timer)
      resolve()
    })
  })
}
