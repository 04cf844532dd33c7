/**
 * The gRPC server on @grpc/grpc-js (`GRPC_SERVER_IMPLEMENTATION=grpc-js`): a thin adapter that
 * hands request bytes to the shared handlers of `grpc-handlers.ts` (as the lean `node:http2`
 * server does) and leaves framing, deadlines and connection limits to grpc-js. The services'
 * definitions for grpc-js clients are in `protocol/grpc.ts`.
 *
 * @module
 */
import * as grpc from '@grpc/grpc-js'
import { constants as http2 } from 'node:http2'
import {
  ERROR_CODE_TRAILER,
  HEALTH_CHECK_PATH,
  HEALTH_WATCH_PATH,
  SHOULD_RATE_LIMIT_PATH,
} from '../protocol/grpc.js'
import type { GrpcHandlers, ResponseHeaders } from './grpc-handlers.js'
import type { GrpcStatus } from './status.js'
import { clientSanProblem, type ServerTls } from './tls.js'

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
 * A failed call's status with its {@link ERROR_CODE_TRAILER} (grpc-js sends a status's `metadata`
 * as trailers).
 */
function withErrorTrailer(status: GrpcStatus): GrpcStatus & { metadata: grpc.Metadata } {
  const metadata = new grpc.Metadata()
  metadata.set(ERROR_CODE_TRAILER, status.errorCode ?? '')
  return { ...status, metadata }
}

/**
 * Builds the gRPC server (not yet bound).
 *
 * @returns A grpc-js server with both services registered.
 */
export function buildGrpcServer(deps: GrpcServerDeps, options: GrpcServerOptions): grpc.Server {
  const { handlers } = deps
  const idle = options.maxConnectionIdleMs ?? 0
  // The handlers pass one precomputed headers object: its Metadata is built once (grpc-js only
  // reads the Metadata it is given).
  let lastHeaders: ResponseHeaders | undefined
  let lastMetadata = new grpc.Metadata()
  const metadataOf = (headers: ResponseHeaders): grpc.Metadata => {
    if (headers !== lastHeaders) {
      lastMetadata = new grpc.Metadata()
      for (const [key, value] of Object.entries(headers)) lastMetadata.set(key, value)
      lastHeaders = headers
    }
    return lastMetadata
  }
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
        handlers.shouldRateLimit(
          call.request,
          false,
          (status, message, headers) => {
            if (headers !== undefined) call.sendMetadata(metadataOf(headers))
            callback(status?.errorCode === undefined ? status : withErrorTrailer(status), message)
          },
          call.metadata,
        )
      },
    },
  )
  server.addService(
    { Check: rawMethod(HEALTH_CHECK_PATH, false), Watch: rawMethod(HEALTH_WATCH_PATH, true) },
    {
      Check(call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) {
        handlers.check(call.request, false, (status, message) => {
          callback(status, message)
        })
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
 * Feeds grpc-js the certificate of a {@link ServerTls}, and each reloaded one (grpc-js then calls
 * `setSecureContext`: new connections get it, open ones keep theirs). One object serves as both
 * the identity and the CA provider; it only ever hands over material that made a valid context.
 */
class ServerTlsCertificateProvider implements grpc.experimental.CertificateProvider {
  readonly #tls: ServerTls
  readonly #ca = new Set<grpc.experimental.CaCertificateUpdateListener>()
  readonly #identity = new Set<grpc.experimental.IdentityCertificateUpdateListener>()
  #unsubscribe: (() => void) | undefined

  constructor(tls: ServerTls) {
    this.#tls = tls
  }

  #caUpdate(): grpc.experimental.CaCertificateUpdate | null {
    const { ca } = this.#tls.material
    return ca === undefined ? null : { caCertificate: ca }
  }

  #identityUpdate(): grpc.experimental.IdentityCertificateUpdate {
    const { cert, key } = this.#tls.material
    return { certificate: cert, privateKey: key }
  }

  #follow(): void {
    this.#unsubscribe ??= this.#tls.onChange(() => {
      const ca = this.#caUpdate()
      const identity = this.#identityUpdate()
      for (const listener of this.#ca) listener(ca)
      for (const listener of this.#identity) listener(identity)
    })
  }

  #unfollow(): void {
    if (this.#ca.size > 0 || this.#identity.size > 0) return
    this.#unsubscribe?.()
    this.#unsubscribe = undefined
  }

  addCaCertificateListener(listener: grpc.experimental.CaCertificateUpdateListener): void {
    this.#ca.add(listener)
    this.#follow()
    // Later, as grpc-js' own providers do: it reads the context only after adding its listeners.
    process.nextTick(() => {
      if (this.#ca.has(listener)) listener(this.#caUpdate())
    })
  }

  removeCaCertificateListener(listener: grpc.experimental.CaCertificateUpdateListener): void {
    this.#ca.delete(listener)
    this.#unfollow()
  }

  addIdentityCertificateListener(
    listener: grpc.experimental.IdentityCertificateUpdateListener,
  ): void {
    this.#identity.add(listener)
    this.#follow()
    process.nextTick(() => {
      if (this.#identity.has(listener)) listener(this.#identityUpdate())
    })
  }

  removeIdentityCertificateListener(
    listener: grpc.experimental.IdentityCertificateUpdateListener,
  ): void {
    this.#identity.delete(listener)
    this.#unfollow()
  }
}

/**
 * Refuses every call of a connection whose client certificate lacks `GRPC_CLIENT_TLS_SAN`, with
 * UNAUTHENTICATED (as the lean server does; see `tls.ts`).
 */
function clientSanInterceptor(san: string): grpc.ServerInterceptor {
  return (_method, call) => {
    const problem = clientSanProblem(call.getAuthContext().sslPeerCertificate, san)
    if (problem === undefined) return new grpc.ServerInterceptingCall(call)
    let refused = false
    const refuse = (): void => {
      if (refused) return
      refused = true
      call.sendStatus({ code: grpc.status.UNAUTHENTICATED, details: problem, metadata: null })
    }
    return new grpc.ServerInterceptingCall(call, {
      start(next) {
        next({
          onReceiveMetadata(_metadata, _next) {
            refuse()
          },
          onReceiveMessage(_message, _next) {
            refuse()
          },
          onReceiveHalfClose(_next) {
            refuse()
          },
        })
      },
    })
  }
}

/**
 * The credentials of the gRPC server: plaintext, or TLS from a {@link ServerTls} (hot-reloaded,
 * mutual when it has a client CA, with the client SAN check).
 */
export function grpcServerCredentials(tls: ServerTls | undefined): grpc.ServerCredentials {
  if (tls === undefined) return grpc.ServerCredentials.createInsecure()
  const provider = new ServerTlsCertificateProvider(tls)
  // The first argument is the identity provider, the second the CA one (grpc-js 1.14 names them
  // the other way round in its typings but passes them in this order).
  const credentials = grpc.experimental.createCertificateProviderServerCredentials(
    provider,
    tls.mutual ? provider : null,
    tls.mutual,
  )
  return tls.clientSan === ''
    ? credentials
    : grpc.experimental.createServerCredentialsWithInterceptors(credentials, [
        clientSanInterceptor(tls.clientSan),
      ])
}

/**
 * Binds a gRPC server.
 *
 * @param address `host:port` or `unix:/path`.
 * @param credentials From {@link grpcServerCredentials}. @default plaintext
 * @returns The bound port (0 for unix sockets).
 */
export function bindGrpcServer(
  server: grpc.Server,
  address: string,
  credentials: grpc.ServerCredentials = grpc.ServerCredentials.createInsecure(),
): Promise<number> {
  return new Promise((resolve, reject) => {
    server.bindAsync(address, credentials, (error, port) => {
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
