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
 * of `grpc.ts` (`GRPC_SERVER_IMPLEMENTATION=grpc-js`), so both answer alike; this module is the
 * transport: framing, statuses on the wire, deadlines and connection management.
 *
 * @see https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md
 * @module
 */
import {
  constants,
  createSecureServer,
  createServer,
  type Http2SecureServer,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from 'node:http2'
import type { Server as NetServer } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { systemMonotonicClock, systemRandom, type MonotonicClock, type Random } from '../clock.js'
import {
  HEALTH_CHECK_PATH,
  HEALTH_WATCH_PATH,
  SHOULD_RATE_LIMIT_PATH,
  type GrpcHandlers,
  type ResponseHeaders,
  type UnaryCallback,
} from './grpc-handlers.js'
import { ERROR_CODE_TRAILER, GRPC_STATUS, type GrpcStatus } from './status.js'
import { clientSanProblem, type ServerTls } from './tls.js'

/** Largest accepted request message (grpc-js' and grpc-go's default), in bytes. */
export const MAX_RECEIVE_MESSAGE_BYTES = 4 * 1024 * 1024

const RESPONSE_HEADERS = {
  [constants.HTTP2_HEADER_STATUS]: 200,
  [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
}
const OK_TRAILERS = { 'grpc-status': '0' }
/** `respond()` options of an answer with a message: trailers follow the data. */
const WITH_TRAILERS = { waitForTrailers: true }

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

/** How often deadlines and idle connections are checked, in milliseconds. */
const HOUSEKEEPING_MS = 50

/**
 * Parses a `grpc-timeout` header (1 to 8 digits and a unit: `H`, `M`, `S`, `m`, `u`, `n`) the
 * way grpc-js does, so that both servers accept the same values.
 *
 * @returns Milliseconds, or undefined when the value is not a timeout.
 */
export function parseGrpcTimeout(value: string): number | undefined {
  // The form clients send (`250m`), without a regular expression: Envoy sends one per call.
  const last = value.length - 1
  const unit = last >= 1 && last <= 8 ? TIMEOUT_UNITS_MS[value.charAt(last)] : undefined
  if (unit !== undefined) {
    let digits = 0
    let i = 0
    for (; i < last; i++) {
      const digit = value.charCodeAt(i) - 48
      if (digit < 0 || digit > 9) break
      digits = digits * 10 + digit
    }
    if (i === last) return Math.floor(digits * unit)
  }
  // Anything else as grpc-js reads it (the first digits-and-unit anywhere in the value).
  const match = /(\d{1,8})\s*([HMSmun])/.exec(value)
  if (match === null) return undefined
  return Math.floor(Number(match[1]) * (TIMEOUT_UNITS_MS[match[2] ?? ''] ?? 0))
}

const TIMEOUT_UNITS_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 0.001,
  n: 0.000_001,
}

/** The server plus a graceful shutdown. */
export interface NativeGrpcServer {
  readonly server: Http2Server | Http2SecureServer
  /** Stops accepting, sends GOAWAY to every connection and waits for in-flight calls (or `timeoutMs`, then closes them). */
  shutdown(timeoutMs: number): Promise<void>
}

/**
 * Percent-encodes a status message as gRPC requires for `grpc-message`: bytes outside printable
 * ASCII, and `%`, become `%XX` of their UTF-8 encoding.
 */
export function grpcMessage(message: string): string {
  let out = ''
  for (const byte of Buffer.from(message, 'utf8')) {
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

/** Client resets and broken connections end the call; nothing to answer (one shared listener). */
function ignoreStreamError(): void {
  // Nothing to do.
}

/** `Check` for `/grpc.health.v1.Health/Check` (for logs). */
function methodName(path: string | string[] | undefined): string {
  const text = String(path)
  return text.slice(text.lastIndexOf('/') + 1)
}

/**
 * Ends a call with an error status (a trailers-only response). Nothing happens when the call was
 * already answered (e.g. after its deadline); a call whose answer has begun is reset. When the
 * request is not complete, the stream is then reset with NO_ERROR (RFC 9113 §8.1), so that the
 * client stops sending and what it sent is released.
 */
function sendError(stream: ServerHttp2Stream, { code, details, errorCode }: GrpcStatus): void {
  if (stream.destroyed || stream.closed || stream.writableEnded) return
  if (stream.headersSent) {
    stream.close(constants.NGHTTP2_INTERNAL_ERROR)
    return
  }
  stream.respond(
    {
      ...RESPONSE_HEADERS,
      'grpc-status': String(code),
      'grpc-message': grpcMessage(details),
      ...(errorCode === undefined ? {} : { [ERROR_CODE_TRAILER]: errorCode }),
    },
    { endStream: true },
  )
  if (!stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR)
}

/**
 * Sends one already framed message (after `headers`, {@link RESPONSE_HEADERS} and the handler's
 * own) and the OK trailers, unless the call was answered.
 */
function sendFramed(
  stream: ServerHttp2Stream,
  framed: Buffer,
  headers: typeof RESPONSE_HEADERS,
): void {
  if (stream.destroyed || stream.closed || stream.headersSent) return
  stream.respond(headers, WITH_TRAILERS)
  // 'wantTrailers' is emitted once per stream: `on` spares the wrapper `once` allocates.
  stream.on('wantTrailers', sendOkTrailers)
  stream.end(framed)
}

function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS)
}

/**
 * Reads the single request message of a unary call.
 *
 * @returns The message bytes, or undefined after answering an error.
 */
function readUnary(stream: ServerHttp2Stream, done: (message: Buffer) => void): void {
  const chunks: Buffer[] = []
  let size = 0
  let failed = false
  stream.on('data', (chunk: Buffer) => {
    if (failed) return
    size += chunk.length
    if (size > MAX_RECEIVE_MESSAGE_BYTES + 5) {
      failed = true
      chunks.length = 0
      sendError(stream, {
        code: GRPC_STATUS.RESOURCE_EXHAUSTED,
        details: `Received message larger than max (${String(size - 5)} vs. ${String(MAX_RECEIVE_MESSAGE_BYTES)})`,
      })
      return
    }
    chunks.push(chunk)
  })
  stream.on('end', () => {
    if (failed) return
    const body = chunks.length === 1 ? (chunks[0] ?? Buffer.alloc(0)) : Buffer.concat(chunks, size)
    if (body.length < 5) {
      sendError(stream, {
        code: GRPC_STATUS.UNIMPLEMENTED,
        details: 'Received no request message for a unary method',
      })
      return
    }
    if (body[0] !== 0) {
      sendError(stream, {
        code: GRPC_STATUS.UNIMPLEMENTED,
        details: 'compressed messages are not supported (send grpc-encoding identity)',
      })
      return
    }
    const length = body.readUInt32BE(1)
    if (length !== body.length - 5) {
      sendError(stream, {
        code: GRPC_STATUS.UNIMPLEMENTED,
        details: 'a unary method takes exactly one request message',
      })
      return
    }
    done(body.subarray(5))
  })
}

/**
 * Builds the lean gRPC server (not yet listening).
 */
export function buildNativeGrpcServer(
  deps: NativeGrpcDeps,
  options: NativeGrpcOptions,
): NativeGrpcServer {
  const { handlers } = deps
  const clock = deps.monotonicClock ?? systemMonotonicClock
  const random = deps.random ?? systemRandom
  const maxCallDurationMs = options.maxCallDurationMs ?? 10_000
  const maxIdleMs = options.maxConnectionIdleMs ?? 0
  /**
   * Calls not answered yet, with their deadline ({@link MonotonicClock} milliseconds): the
   * earlier of the client's `grpc-timeout` and `GRPC_MAX_CALL_DURATION`. Answers remove their
   * call; the housekeeping timer ends the overdue ones and forgets the ones the client reset.
   */
  const deadlines = new Map<ServerHttp2Stream, number>()
  /** `Health/Watch` calls being served (they keep their connection busy). */
  const watching = new Set<ServerHttp2Stream>()
  /** Watch calls whose `grpc-timeout` passed: their trailers say DEADLINE_EXCEEDED. */
  const expiredWatches = new WeakSet<ServerHttp2Stream>()
  /** Per connection: when it last started a call and was last seen with one in flight. */
  const activity = new Map<Http2Session, { lastCall: number; lastBusy: number }>()
  let housekeeping: NodeJS.Timeout | undefined
  const sessions = new Set<Http2Session>()

  /** Last resort: a transport step failed unexpectedly (a bug). Logged; the call ends with INTERNAL. */
  const fail = (stream: ServerHttp2Stream, method: string, error: unknown): void => {
    const status = handlers.internal(method, error)
    try {
      sendError(stream, status)
    } catch {
      stream.destroy()
    }
  }

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
    (stream: ServerHttp2Stream, path: string): UnaryCallback =>
    (status, message, headers) => {
      deadlines.delete(stream)
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
  const watch = (stream: ServerHttp2Stream, bytes: Buffer, clientTimeout: boolean): void => {
    const accepted = handlers.watch(bytes, true)
    if ('code' in accepted) {
      sendError(stream, accepted)
      return
    }
    if (!clientTimeout) deadlines.delete(stream)
    watching.add(stream)
    stream.once('close', () => watching.delete(stream))
    stream.respond(RESPONSE_HEADERS, WITH_TRAILERS)
    stream.once('wantTrailers', () => {
      stream.sendTrailers(
        expiredWatches.has(stream)
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

  /** Ends a call whose deadline passed with DEADLINE_EXCEEDED, as grpc-js does. */
  const expire = (stream: ServerHttp2Stream): void => {
    if (watching.has(stream)) {
      expiredWatches.add(stream)
      stream.end()
    } else sendError(stream, { code: GRPC_STATUS.DEADLINE_EXCEEDED, details: 'Deadline exceeded' })
  }

  /**
   * Every {@link HOUSEKEEPING_MS}: ends overdue calls, forgets calls the client reset, and sends
   * GOAWAY to connections that have had no call for `GRPC_MAX_CONNECTION_IDLE`. Runs while
   * there are connections.
   */
  const houseKeep = (): void => {
    const now = clock.now()
    const busy = new Set<Http2Session | undefined>()
    for (const [stream, deadline] of deadlines) {
      if (stream.destroyed || stream.closed || (stream.headersSent && !watching.has(stream))) {
        deadlines.delete(stream) // reset by the client, or being answered
      } else if (deadline <= now) {
        deadlines.delete(stream)
        try {
          expire(stream)
        } catch (error) {
          fail(stream, 'deadline', error)
        }
      } else busy.add(stream.session)
    }
    for (const stream of watching) busy.add(stream.session)
    for (const [session, state] of activity) {
      if (busy.has(session)) state.lastBusy = now
      else if (
        maxIdleMs > 0 &&
        !session.closed &&
        now - Math.max(state.lastCall, state.lastBusy) >= maxIdleMs
      ) {
        session.close() // GOAWAY; nothing is in flight
      }
    }
    if (activity.size === 0 && deadlines.size === 0) {
      clearInterval(housekeeping)
      housekeeping = undefined
    }
  }

  const onStream = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void => {
    stream.on('error', ignoreStreamError)
    const path = headers[constants.HTTP2_HEADER_PATH]
    const contentType = String(headers[constants.HTTP2_HEADER_CONTENT_TYPE] ?? '')
    if (
      headers[constants.HTTP2_HEADER_METHOD] !== 'POST' ||
      !contentType.startsWith('application/grpc')
    ) {
      stream.respond({ [constants.HTTP2_HEADER_STATUS]: 415 }, { endStream: true })
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
    const now = clock.now()
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
    deadlines.set(stream, now + timeout)
    const state = activity.get(stream.session as Http2Session)
    if (state !== undefined) state.lastCall = now
    readUnary(stream, (bytes) => {
      try {
        if (unary !== undefined) unary(bytes, true, answer(stream, String(path)), headers)
        else watch(stream, bytes, timeoutHeader !== undefined)
      } catch (error) {
        fail(stream, methodName(path), error)
      }
    })
  }

  const serverOptions = {
    maxSessionMemory: 64,
    settings: { maxConcurrentStreams: options.maxConcurrentStreams ?? 100 },
  }
  const { tls } = options
  let server: Http2Server | Http2SecureServer
  /** Connections whose client certificate lacks `GRPC_CLIENT_TLS_SAN`, with the refusal. */
  const refused = new WeakMap<Http2Session, GrpcStatus>()
  if (tls === undefined) server = createServer(serverOptions)
  else {
    const secure = createSecureServer({
      ...serverOptions,
      ...tls.contextOptions,
      requestCert: tls.mutual,
      rejectUnauthorized: tls.mutual,
    })
    const unsubscribe = tls.onChange((context) => {
      secure.setSecureContext(context)
    })
    secure.once('close', unsubscribe)
    // A failed handshake (a plaintext client, an unknown client certificate) only closes that socket.
    secure.on('tlsClientError', () => undefined)
    server = secure
  }
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
    try {
      const refusal = refused.get(stream.session as Http2Session)
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
    sessions.add(session)
    if (tls !== undefined && tls.clientSan !== '') {
      const problem = clientSanProblem(
        (session.socket as TLSSocket).getPeerCertificate(),
        tls.clientSan,
      )
      if (problem !== undefined) {
        refused.set(session, { code: GRPC_STATUS.UNAUTHENTICATED, details: problem })
      }
    }
    const now = clock.now()
    activity.set(session, { lastCall: now, lastBusy: now })
    if (housekeeping === undefined) {
      housekeeping = setInterval(houseKeep, HOUSEKEEPING_MS)
      housekeeping.unref()
    }
    session.on('error', () => {
      // A broken connection; its streams are reported closed.
    })
    session.once('close', () => {
      sessions.delete(session)
      activity.delete(session)
      clearTimeout(ageTimer)
      clearTimeout(graceTimer)
    })
    let graceTimer: NodeJS.Timeout | undefined
    const age = options.maxConnectionAgeMs * (0.9 + random() * 0.2)
    const ageTimer = setTimeout(
      () => {
        // GOAWAY: the client opens a new connection for new calls; running calls get the grace.
        session.close()
        graceTimer = setTimeout(() => {
          session.destroy()
        }, options.maxConnectionAgeGraceMs)
        graceTimer.unref()
      },
      Math.min(age, 2 ** 31 - 1),
    )
    ageTimer.unref()
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
          clearInterval(housekeeping)
          housekeeping = undefined
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
