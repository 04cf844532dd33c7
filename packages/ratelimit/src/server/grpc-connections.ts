/**
 * The lean gRPC server's connection policy: the HTTP/2 server itself (plaintext, or TLS with the
 * certificate reloaded for new connections), the refusal of connections whose client
 * certificate lacks `GRPC_CLIENT_TLS_SAN`, `GRPC_MAX_CONCURRENT_STREAMS`, and the connection age:
 * GOAWAY after `GRPC_MAX_CONNECTION_AGE` (±10% jitter) and a hard close after
 * `GRPC_MAX_CONNECTION_AGE_GRACE`.
 *
 * @module
 */
import {
  createSecureServer,
  createServer,
  type Http2SecureServer,
  type Http2Server,
  type Http2Session,
} from 'node:http2'
import type { TLSSocket } from 'node:tls'
import type { Random } from '../clock.js'
import { GRPC_STATUS, type GrpcStatus } from './status.js'
import { clientSanProblem, type ServerTls } from './tls.js'

/** Options of {@link createConnectionPolicy}. */
export interface ConnectionPolicyOptions {
  /** `GRPC_MAX_CONNECTION_AGE` in milliseconds. */
  readonly maxConnectionAgeMs: number
  /** `GRPC_MAX_CONNECTION_AGE_GRACE` in milliseconds. */
  readonly maxConnectionAgeGraceMs: number
  /** `GRPC_MAX_CONCURRENT_STREAMS`. */
  readonly maxConcurrentStreams: number
  /** `GRPC_SERVER_USE_TLS`: serve TLS only, with this certificate. @default plaintext HTTP/2 */
  readonly tls?: ServerTls | undefined
  /** The ±10% jitter of the connection age. */
  readonly random: Random
}

/** The server and its connections. */
export interface ConnectionPolicy {
  readonly server: Http2Server | Http2SecureServer
  /** The open connections. */
  readonly sessions: ReadonlySet<Http2Session>
  /**
   * Admits a new connection: checks its client certificate, starts its age timers and forgets it
   * when it closes.
   *
   * @param onClose Called once when the connection closes.
   */
  admit(session: Http2Session, onClose: () => void): void
  /** Why calls on this connection are refused (its client certificate), if they are. */
  refusal(session: Http2Session): GrpcStatus | undefined
}

/** Builds the HTTP/2 server (not yet listening) and the policy for its connections. */
export function createConnectionPolicy(options: ConnectionPolicyOptions): ConnectionPolicy {
  const serverOptions = {
    maxSessionMemory: 64,
    settings: { maxConcurrentStreams: options.maxConcurrentStreams },
  }
  const { tls } = options
  let server: Http2Server | Http2SecureServer
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
  const sessions = new Set<Http2Session>()
  /** Connections whose client certificate lacks `GRPC_CLIENT_TLS_SAN`, with the refusal. */
  const refused = new WeakMap<Http2Session, GrpcStatus>()

  const admit = (session: Http2Session, onClose: () => void): void => {
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
    session.on('error', () => {
      // A broken connection; its streams are reported closed.
    })
    let graceTimer: NodeJS.Timeout | undefined
    const age = options.maxConnectionAgeMs * (0.9 + options.random() * 0.2)
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
    session.once('close', () => {
      sessions.delete(session)
      clearTimeout(ageTimer)
      clearTimeout(graceTimer)
      onClose()
    })
  }

  return { server, sessions, admit, refusal: (session) => refused.get(session) }
}
