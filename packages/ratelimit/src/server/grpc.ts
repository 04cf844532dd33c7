/**
 * The gRPC server on @grpc/grpc-js (`GRPC_SERVER_IMPLEMENTATION=grpc-js`): a thin adapter that
 * hands request bytes to the shared handlers of `grpc-handlers.ts` (as the lean `node:http2`
 * server does) and leaves framing, deadlines and connection limits to grpc-js. Also the client
 * side definitions of both services, with the package's codec, for grpc-js clients.
 *
 * @module
 */
import * as grpc from '@grpc/grpc-js'
import { constants as http2 } from 'node:http2'
import {
  decodeHealthCheckRequest,
  decodeHealthCheckResponse,
  encodeHealthCheckRequest,
  encodeHealthCheckResponse,
} from '../protocol/protobuf/health.js'
import { decodeRateLimitRequest, encodeRateLimitRequest } from '../protocol/protobuf/request.js'
import { decodeRateLimitResponse, encodeRateLimitResponse } from '../protocol/protobuf/response.js'
import {
  HEALTH_CHECK_PATH,
  HEALTH_WATCH_PATH,
  SHOULD_RATE_LIMIT_PATH,
  type GrpcHandlers,
} from './grpc-handlers.js'

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

function identity(bytes: Buffer): Buffer {
  return bytes
}

/** A method whose messages reach the handlers as bytes (they decode and encode themselves). */
function rawMethod(path: string, responseStream: boolean) {
  return {
    path,
    requestStream: false,
    responseStream,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  } as const
}

/** Dependencies of {@link buildGrpcServer}. */
export interface GrpcServerDeps {
  /** The methods (`createGrpcHandlers`). */
  readonly handlers: GrpcHandlers
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

/**
 * Builds the gRPC server (not yet bound).
 *
 * @returns A grpc-js server with both services registered.
 */
export function buildGrpcServer(deps: GrpcServerDeps, options: GrpcServerOptions): grpc.Server {
  const { handlers } = deps
  const idle = options.maxConnectionIdleMs ?? 0
  const server = new grpc.Server({
    'grpc.max_connection_age_ms': Math.min(options.maxConnectionAgeMs, 2 ** 31 - 1),
    'grpc.max_connection_age_grace_ms': Math.min(options.maxConnectionAgeGraceMs, 2 ** 31 - 1),
    'grpc.max_concurrent_streams': options.maxConcurrentStreams ?? 100,
    ...(idle > 0 ? { 'grpc.max_connection_idle_ms': Math.min(idle, 2 ** 31 - 2) } : {}),
    interceptors: [maxCallDurationInterceptor(options.maxCallDurationMs ?? 10_000)],
  })

  server.addService(
    { ShouldRateLimit: rawMethod(SHOULD_RATE_LIMIT_PATH, false) },
    {
      ShouldRateLimit(
        call: grpc.ServerUnaryCall<Buffer, Buffer>,
        callback: grpc.sendUnaryData<Buffer>,
      ) {
        handlers.shouldRateLimit(call.request, false, callback)
      },
    },
  )
  server.addService(
    { Check: rawMethod(HEALTH_CHECK_PATH, false), Watch: rawMethod(HEALTH_WATCH_PATH, true) },
    {
      Check(call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) {
        handlers.check(call.request, false, callback)
      },
      Watch(call: grpc.ServerWritableStream<Buffer, Buffer>) {
        try {
          const accepted = handlers.watch(call.request, false)
          if ('code' in accepted) {
            call.emit('error', accepted)
            return
          }
          call.write(accepted.first)
          const unsubscribe = accepted.subscribe((message) => {
            call.write(message)
          })
          call.on('cancelled', unsubscribe)
          call.on('close', unsubscribe)
        } catch (error) {
          call.emit('error', handlers.internal('Watch', error))
        }
      },
    },
  )
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
