/**
 * A lean gRPC server on `node:http2` for the two services this package answers
 * (`envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit` and `grpc.health.v1.Health`),
 * without @grpc/grpc-js's per-call machinery (interceptors, metadata objects, channelz). It speaks
 * the gRPC over HTTP/2 wire protocol directly: length-prefixed messages, `grpc-status` /
 * `grpc-message` trailers (or trailers-only responses for errors), `GOAWAY` after
 * `GRPC_MAX_CONNECTION_AGE` (±10% jitter) and a hard close after the grace period.
 *
 * Limits, as the grpc-js server applies them: at most `GRPC_MAX_CONCURRENT_STREAMS` calls per
 * connection; every call ends with DEADLINE_EXCEEDED at the earlier of its `grpc-timeout` and
 * `GRPC_MAX_CALL_DURATION` (so an unfinished request cannot hold its bytes); a connection with
 * no call for `GRPC_MAX_CONNECTION_IDLE` gets GOAWAY. Deadlines and idleness are checked by one
 * timer per server, so a call costs a map insertion and removal, not a timer.
 *
 * The methods themselves are the shared handlers of `grpc-handlers.ts`, as on the grpc-js server
 * of `grpc.ts` (`GRPC_SERVER_IMPLEMENTATION=grpc-js`), so both answer alike. This module
 * dispatches calls to them; the wire format is in `grpc-wire.ts`, the deadline sweeper in
 * `grpc-deadlines.ts` and the connection policy (TLS, client SAN, connection age) in
 * `grpc-connections.ts`.
 *
 * @see https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md
 * @module
 */
import type {
  Http2SecureServer,
  Http2Server,
  Http2Session,
  IncomingHttpHeaders,
  ServerHttp2Stream,
} from 'node:http2'
import { constants } from 'node:http2'
import type { Server as NetServer } from 'node:net'
import { systemMonotonicClock, systemRandom, type MonotonicClock, type Random } from '../clock.js'
import { createConnectionPolicy } from './grpc-connections.js'
import { CallDeadlines } from './grpc-deadlines.js'
import { HEALTH_CHECK_PATH, HEALTH_WATCH_PATH, SHOULD_RATE_LIMIT_PATH } from '../protocol/grpc.js'
import { type GrpcHandlers, type ResponseHeaders, type UnaryCallback } from './grpc-handlers.js'
import {
  OK_TRAILERS,
  RESPONSE_HEADERS,
  TRAILERS_ONLY,
  WITH_TRAILERS,
  ignoreStreamError,
  methodName,
  parseGrpcTimeout,
  readUnary,
  sendError,
  sendFramed,
} from './grpc-wire.js'
import { GRPC_STATUS } from './status.js'
import type { ServerTls } from './tls.js'

export { MAX_RECEIVE_MESSAGE_BYTES, grpcMessage, parseGrpcTimeout } from './grpc-wire.js'

/** Dependencies of {@link buildNativeGrpcServer}. */
export interface NativeGrpcDeps {
  /** The methods (`createGrpcHandlers`). */
  readonly handlers: GrpcHandlers
  /** Deadlines and idleness. @default {@link systemMonotonicClock} */
  readonly monotonicClock?: MonotonicClock
  /** The ±10% jitter of `GRPC_MAX_CONNECTION_AGE`. @default {@link systemRandom} */
  readonly random?: Random
}

/** Options of {@link buildNativeGrpcServer}. */
export interface NativeGrpcOptions {
  /** `GRPC_MAX_CONNECTION_AGE` in milliseconds. */
  readonly maxConnectionAgeMs: number
  /** `GRPC_MAX_CONNECTION_AGE_GRACE` in milliseconds. */
  readonly maxConnectionAgeGraceMs: number
  /** `GRPC_MAX_CONNECTION_IDLE` in milliseconds; 0 never closes idle connections. @default 0 */
  readonly maxConnectionIdleMs?: number
  /** `GRPC_MAX_CONCURRENT_STREAMS`. @default 100 */
  readonly maxConcurrentStreams?: number
  /** `GRPC_MAX_CALL_DURATION` in milliseconds. @default 10000 */
  readonly maxCallDurationMs?: number
  /**
   * `GRPC_SERVER_USE_TLS`: serve TLS only (HTTP/2 over TLS, ALPN `h2`), with this certificate,
   * taken anew by new connections whenever it reloads. @default plaintext HTTP/2
   */
  readonly tls?: ServerTls
}

/** The server plus a graceful shutdown. */
export interface NativeGrpcServer {
  readonly server: Http2Server | Http2SecureServer
  /** Stops accepting, sends GOAWAY to every connection and waits for in-flight calls (or `timeoutMs`, then closes them). */
  shutdown(timeoutMs: number): Promise<void>
}

/**
 * Builds the lean gRPC server (not yet listening): dispatches each call to its handler under its
 * deadline, on connections that follow the connection policy.
 */
export function buildNativeGrpcServer(
  deps: NativeGrpcDeps,
  options: NativeGrpcOptions,
): NativeGrpcServer {
  const { handlers } = deps
  const maxCallDurationMs = options.maxCallDurationMs ?? 10_000

  /** Last resort: a transport step failed unexpectedly (a bug). Logged; the call ends with INTERNAL. */
  const fail = (stream: ServerHttp2Stream, method: string, error: unknown): void => {
    const status = handlers.internal(method, error)
    try {
      sendError(stream, status)
    } catch {
      stream.destroy()
    }
  }
  const calls = new CallDeadlines({
    clock: deps.monotonicClock ?? systemMonotonicClock,
    maxConnectionIdleMs: options.maxConnectionIdleMs ?? 0,
    onFailure: (stream, error) => {
      fail(stream, 'deadline', error)
    },
  })
  const connections = createConnectionPolicy({
    maxConnectionAgeMs: options.maxConnectionAgeMs,
    maxConnectionAgeGraceMs: options.maxConnectionAgeGraceMs,
    maxConcurrentStreams: options.maxConcurrentStreams ?? 100,
    tls: options.tls,
    random: deps.random ?? systemRandom,
  })

  /**
   * The response headers with a handler's own: built once per object the handlers pass (they
   * pass one precomputed object), so an answer allocates no headers.
   */
  let extraHeaders: ResponseHeaders | undefined
  let withExtraHeaders = RESPONSE_HEADERS
  const headersWith = (extra: ResponseHeaders | undefined): typeof RESPONSE_HEADERS => {
    if (extra === undefined) return RESPONSE_HEADERS
    if (extra !== extraHeaders) {
      withExtraHeaders = { ...extra, ...RESPONSE_HEADERS }
      extraHeaders = extra
    }
    return withExtraHeaders
  }

  /** Answers a unary call with the handler's outcome. */
  const answer =
    (stream: ServerHttp2Stream, path: string, slot: number): UnaryCallback =>
    (status, message, headers) => {
      calls.callAnswered(slot, stream)
      try {
        if (status !== null) sendError(stream, status)
        else if (message !== undefined) sendFramed(stream, message, headersWith(headers))
      } catch (error) {
        fail(stream, methodName(path), error)
      }
    }

  /**
   * `Health/Watch`: the current status, then every change, until the client cancels or its own
   * `grpc-timeout` passes (`GRPC_MAX_CALL_DURATION` bounds only the wait for the request).
   */
  const watch = (
    stream: ServerHttp2Stream,
    bytes: Buffer,
    clientTimeout: boolean,
    slot: number,
  ): void => {
    const accepted = handlers.watch(bytes, true)
    if ('code' in accepted) {
      sendError(stream, accepted)
      return
    }
    calls.watchStarted(slot, stream, clientTimeout)
    stream.respond(RESPONSE_HEADERS, WITH_TRAILERS)
    stream.once('wantTrailers', () => {
      stream.sendTrailers(
        calls.watchExpired(stream)
          ? {
              'grpc-status': String(GRPC_STATUS.DEADLINE_EXCEEDED),
              'grpc-message': 'Deadline exceeded',
            }
          : OK_TRAILERS,
      )
    })
    stream.write(accepted.first)
    const unsubscribe = accepted.subscribe((message) => {
      if (!stream.closed) stream.write(message)
    })
    stream.once('close', unsubscribe)
  }

  /** Dispatches one call: checks the request's headers, starts its deadline, reads it, runs it. */
  const onStream = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void => {
    stream.on('error', ignoreStreamError)
    const path = headers[constants.HTTP2_HEADER_PATH]
    const contentType = String(headers[constants.HTTP2_HEADER_CONTENT_TYPE] ?? '')
    if (
      headers[constants.HTTP2_HEADER_METHOD] !== 'POST' ||
      !contentType.startsWith('application/grpc')
    ) {
      stream.respond({ [constants.HTTP2_HEADER_STATUS]: 415 }, TRAILERS_ONLY)
      return
    }
    const unary =
      path === SHOULD_RATE_LIMIT_PATH
        ? handlers.shouldRateLimit
        : path === HEALTH_CHECK_PATH
          ? handlers.check
          : undefined
    if (unary === undefined && path !== HEALTH_WATCH_PATH) {
      stream.resume()
      sendError(stream, {
        code: GRPC_STATUS.UNIMPLEMENTED,
        details: `unknown method ${String(path)}`,
      })
      return
    }
    let timeout = maxCallDurationMs
    const timeoutHeader = headers['grpc-timeout']
    if (timeoutHeader !== undefined) {
      const requested = parseGrpcTimeout(String(timeoutHeader))
      if (requested === undefined) {
        stream.resume()
        sendError(stream, {
          code: GRPC_STATUS.INTERNAL,
          details: `Invalid grpc-timeout value "${String(timeoutHeader)}"`,
        })
        return
      }
      if (requested < timeout) timeout = requested
    }
    const slot = calls.callStarted(stream, timeout)
    readUnary(stream, (bytes) => {
      try {
        if (unary !== undefined) unary(bytes, true, answer(stream, String(path), slot), headers)
        else watch(stream, bytes, timeoutHeader !== undefined, slot)
      } catch (error) {
        fail(stream, methodName(path), error)
      }
    })
  }

  const { server, sessions } = connections
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    try {
      const refusal = connections.refusal(stream.session as Http2Session)
      if (refusal !== undefined) {
        stream.resume()
        sendError(stream, refusal)
        return
      }
      onStream(stream, headers)
    } catch (error) {
      fail(stream, methodName(headers[constants.HTTP2_HEADER_PATH]), error)
    }
  })
  server.on('session', (session: Http2Session) => {
    connections.admit(session, () => {
      calls.connectionClosed(session)
    })
    calls.connectionOpened(session)
  })

  return {
    server,
    shutdown: (timeoutMs) =>
      new Promise<void>((resolve) => {
        // GOAWAY to every connection: running calls finish, then the connections close.
        const force = setTimeout(() => {
          for (const session of sessions) session.destroy()
        }, timeoutMs)
        force.unref()
        server.close(() => {
          clearTimeout(force)
          calls.stop()
          resolve()
        })
        for (const session of sessions) session.close()
      }),
  }
}

/**
 * Binds the lean server.
 *
 * @param address `host:port` or `unix:/path`.
 * @returns The bound port (0 for unix sockets).
 */
export function listenNativeGrpc(server: NetServer, address: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    const done = (): void => {
      server.off('error', reject)
      const bound = server.address()
      resolve(typeof bound === 'object' && bound !== null ? bound.port : 0)
    }
    if (address.startsWith('unix:')) server.listen(address.slice('unix:'.length), done)
    else {
      const at = address.lastIndexOf(':')
      server.listen(
        Number(address.slice(at + 1)),
        address.slice(0, at).replace(/^\[|\]$/g, ''),
        done,
      )
    }
  })
}
