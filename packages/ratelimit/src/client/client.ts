/**
 * Clients of the rate limit service: a one-shot `ShouldRateLimit` call over @grpc/grpc-js (what
 * `gatehouse-ratelimit-client` sends), and the long-lived {@link RateLimitClient} for embedding,
 * which speaks gRPC over `node:http2` itself.
 *
 * @module
 */
import { connect, constants, type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2'
import * as grpc from '@grpc/grpc-js'
import { RequestCoalescer } from './coalesce.js'
import { systemClock, type Clock } from '../clock.js'
import { encodeRateLimitRequest } from '../protocol/protobuf/request.js'
import { decodeRateLimitResponse } from '../protocol/protobuf/response.js'
import type { RateLimitRequest, RateLimitResponse } from '../protocol/types.js'
import {
  COALESCE_MAX_DESCRIPTORS_HEADER,
  ERROR_CODE_TRAILER,
  rateLimitServiceDefinition,
} from '../protocol/grpc.js'

/** Options of {@link callShouldRateLimit}. */
export interface CallOptions {
  /** The call's deadline, in milliseconds from now. @default 10000 */
  readonly timeoutMs?: number
  /** What "now" is. @default {@link systemClock} */
  readonly clock?: Clock
  /** The channel's credentials (TLS). @default plaintext */
  readonly credentials?: grpc.ChannelCredentials
}

/**
 * Sends one request over a grpc-js channel of its own (the command-line client's call).
 *
 * @param dialString The service's gRPC address (grpc-js target syntax, `host:port`).
 * @throws {Error} The gRPC error (status and details).
 */
export function callShouldRateLimit(
  dialString: string,
  request: RateLimitRequest,
  options: CallOptions = {},
): Promise<RateLimitResponse> {
  const timeoutMs = options.timeoutMs ?? 10_000
  const clock = options.clock ?? systemClock
  const Client = grpc.makeGenericClientConstructor(rateLimitServiceDefinition, 'RateLimitService')
  const client = new Client(dialString, options.credentials ?? grpc.credentials.createInsecure())
  return new Promise<RateLimitResponse>((resolve, reject) => {
    client.makeUnaryRequest(
      rateLimitServiceDefinition.ShouldRateLimit.path,
      rateLimitServiceDefinition.ShouldRateLimit.requestSerialize,
      rateLimitServiceDefinition.ShouldRateLimit.responseDeserialize,
      request,
      { deadline: clock.now() + timeoutMs },
      (error, response) => {
        client.close()
        if (error !== null) reject(error)
        else if (response === undefined) reject(new Error('empty response'))
        else resolve(response)
      },
    )
  })
}

/** Options of {@link RateLimitClient}. */
export interface RateLimitClientOptions {
  /**
   * Deadline of each call, in milliseconds from its start (sent as `grpc-timeout`); a call past it
   * fails with gRPC `DEADLINE_EXCEEDED`. @default 10000
   */
  readonly timeoutMs?: number
  /**
   * What "now" is for the deadlines of calls through grpc-js (absolute epoch milliseconds).
   * @default {@link systemClock}
   */
  readonly clock?: Clock
  /**
   * Channel credentials (TLS, call credentials): calls then go through a grpc-js channel.
   * @default plaintext over one `node:http2` session of this client's own
   */
  readonly credentials?: grpc.ChannelCredentials
  /**
   * Calls per `node:http2` session before the client dials a new one (the old one closes once
   * its calls in flight end). A client's stream ids are the odd numbers below 2^31 (RFC 9113
   * §5.1.1), so one session cannot carry more than 2^30 calls. @default 2^30 - 1
   */
  readonly maxStreamsPerSession?: number
  /**
   * Coalesce the calls of one event-loop turn into one `ShouldRateLimit` (fewer messages, so less
   * CPU per decision on both sides), when the service allows it.
   *
   * Concatenating independent requests is equivalent to sending them one by one only when the
   * service decides each descriptor on its own. With `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`
   * one descriptor over its limit stops the counting of the other descriptors of its request, so
   * one caller over its limit would stop the counting of every other caller of the batch (a
   * bypass); `QUOTA_MODE`, and rules with `replaces` or `quota_mode`, couple descriptors too. So
   * the client coalesces only while the service says it may: gatehouse-ratelimit sends the
   * response header `gatehouse-coalesce-max-descriptors: <MAX_DESCRIPTORS_PER_REQUEST>` when none
   * of that applies. The client reads it on every successful response: any response without it
   * (upstream's service, STOP on, a restarted service with another configuration) turns
   * coalescing off until a response has it again; until the first response calls go one by one.
   *
   * While allowed, the calls made in one turn that share `domain` and effective request
   * `hitsAddend` (0 counts as 1) are flushed with one `setImmediate` as one call whose
   * descriptors are theirs concatenated in order (per-descriptor `hitsAddend` kept), split so
   * that no call carries more than the advertised maximum; a call with no descriptor or more than
   * the maximum goes alone, as does a turn's only call (answered with the service's response
   * unchanged). The others each get their own statuses (by position), `overallCode`
   * `OVER_LIMIT` when one of them is `OVER_LIMIT` (and the service's overall code is; with
   * `SHADOW_MODE` it is `OK`), and no `responseHeadersToAdd` or `dynamicMetadata` (they describe
   * a whole request). A call the service refused as a request (its `gatehouse-error-code` trailer
   * is `ERR_SERVICE`, `ERR_REQUEST_TOO_LARGE` or `ERR_BACKEND_KEY`: a descriptor over a cap, a bad
   * override, a key memcache cannot hold, which it checks before counting anything) is sent
   * again as one call per caller, so only the callers whose own request is at fault fail. Any other failure (unreachable, deadline, a backend error,
   * which may come after some counting) fails every caller of its batch with its error; an answer
   * whose number of statuses differs from the number of descriptors sent fails them with
   * {@link RateLimitCallError} `INTERNAL`. Calls wait at most until the end of the turn they are
   * made in.
   *
   * @default false
   */
  readonly coalesce?: boolean
}

/** What a {@link RateLimitClient} has done: the requests it was given and the calls it made. */
export interface RateLimitClientCounts {
  /** `shouldRateLimit` requests. */
  readonly requests: number
  /** `ShouldRateLimit` calls sent (fewer than the requests when calls were coalesced). */
  readonly calls: number
}

/**
 * The value of `gatehouse-coalesce-max-descriptors`: a positive decimal integer.
 *
 * @returns The maximum, or undefined when absent or not such a number.
 */
function coalesceMaxOf(value: string | string[] | Buffer | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value
  if (text === undefined) return undefined
  const digits = typeof text === 'string' ? text : text.toString('latin1')
  if (!/^[1-9]\d{0,8}$/.test(digits)) return undefined
  return Number(digits)
}

/** The default of {@link RateLimitClientOptions.maxStreamsPerSession}. */
const MAX_STREAMS_PER_SESSION = 2 ** 30 - 1

/** gRPC status codes a call can fail with (`grpc/status.h`). */
export const GRPC_CALL_STATUS = {
  CANCELLED: 1,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const

/** Largest response message {@link RateLimitClient} reads (grpc-js' default), in bytes. */
export const MAX_RESPONSE_MESSAGE_BYTES = 4 * 1024 * 1024

/**
 * A failed `ShouldRateLimit` call of {@link RateLimitClient}: the gRPC status `code` (a number of
 * {@link GRPC_CALL_STATUS}) and its `details`, as grpc-js' `ServiceError` has them.
 */
export class RateLimitCallError extends Error {
  /** The gRPC status code. */
  readonly code: number
  /** The status message (`grpc-message`, decoded), or what failed locally. */
  readonly details: string
  /**
   * The service's error code (its `gatehouse-error-code` trailer, e.g. `ERR_BACKEND`), when it
   * sent one; see {@link serviceErrorCode}.
   */
  readonly errorCode: string | undefined

  constructor(
    code: number,
    details: string,
    options?: { cause?: unknown; errorCode?: string | undefined },
  ) {
    super(`${String(code)} ${STATUS_NAMES.get(code) ?? 'UNKNOWN'}: ${details}`, options)
    this.name = 'RateLimitCallError'
    this.code = code
    this.details = details
    this.errorCode = options?.errorCode
  }
}

/**
 * The error code gatehouse-ratelimit gave a failed call (`ERR_SERVICE`, `ERR_REQUEST_TOO_LARGE`,
 * `ERR_BACKEND`, …: its `gatehouse-error-code` trailer, which upstream's service does not send),
 * from a {@link RateLimitCallError} or a grpc-js `ServiceError`.
 *
 * @returns The code, or undefined when there is none.
 */
export function serviceErrorCode(error: unknown): string | undefined {
  if (error instanceof RateLimitCallError) return error.errorCode
  if (typeof error === 'object' && error !== null && 'metadata' in error) {
    const { metadata } = error
    if (metadata instanceof grpc.Metadata) {
      const value = metadata.get(ERROR_CODE_TRAILER)[0]
      return typeof value === 'string' ? value : undefined
    }
  }
  return undefined
}

/** Codes of requests the service refused before counting any of their descriptors. */
const REFUSED_REQUEST_CODES: ReadonlySet<string | undefined> = new Set([
  'ERR_SERVICE',
  'ERR_REQUEST_TOO_LARGE',
  'ERR_BACKEND_KEY',
])

const STATUS_NAMES = new Map<number, string>(
  Object.entries(GRPC_CALL_STATUS).map(([name, code]) => [code, name]),
)

/**
 * The status of a response whose HTTP status is not 200 (gRPC's "HTTP to gRPC Status Code
 * Mapping").
 */
function statusOfHttp(status: number): number {
  switch (status) {
    case 400:
      return GRPC_CALL_STATUS.INTERNAL
    case 401:
      return GRPC_CALL_STATUS.UNAUTHENTICATED
    case 403:
      return GRPC_CALL_STATUS.PERMISSION_DENIED
    case 404:
      return GRPC_CALL_STATUS.UNIMPLEMENTED
    case 429:
    case 502:
    case 503:
    case 504:
      return GRPC_CALL_STATUS.UNAVAILABLE
    default:
      return GRPC_CALL_STATUS.UNKNOWN
  }
}

/** `grpc-message` is percent-encoded; a value that does not decode is kept as sent. */
function grpcMessage(value: string | string[] | undefined): string {
  const text = Array.isArray(value) ? value.join(',') : (value ?? '')
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** `host:port` or `[v6]:port`: the targets {@link RateLimitClient} dials itself. */
const HOST_PORT = /^(?:[^:/[\]]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/

const SHOULD_RATE_LIMIT = rateLimitServiceDefinition.ShouldRateLimit

/** An HTTP/2 session and its calls in flight: it keeps the process alive only while it has some. */
interface Channel {
  readonly session: ClientHttp2Session
  active: number
  /** Streams opened on it so far. */
  streams: number
  /** Out of stream ids: closed once its calls in flight end. */
  retired: boolean
}

/**
 * A long-lived client of the service's `ShouldRateLimit` (gRPC `envoy.service.ratelimit.v3`), for
 * embedding (the auth server asks it for each decision); the one-shot {@link callShouldRateLimit}
 * serves the command-line client.
 *
 * For a plaintext `host:port` target, the client speaks gRPC over one `node:http2` session itself
 * (one length-prefixed message each way, the status in the trailers): about half the CPU of a
 * grpc-js call per decision, which the auth server pays on every limited request. The session is
 * opened on the first call and again on the first call after it closed (the service restarted,
 * sent GOAWAY or could not be reached); calls made while it connects wait for it, so a service
 * that is down costs one connection attempt per wave of calls, each failing at once with
 * `UNAVAILABLE`. With `credentials`, or another target syntax (`dns:`, `unix:`, …), calls go
 * through a grpc-js channel, reconnected by grpc-js.
 *
 * Per-request `hitsAddend` (0 means 1, upstream) and per-descriptor `hitsAddend` are sent as
 * given; each status's `durationUntilReset` (seconds) says when an `OVER_LIMIT` window ends.
 *
 * @example
 * ```ts
 * const client = new RateLimitClient('127.0.0.1:8081', { timeoutMs: 250 })
 * const answer = await client.shouldRateLimit({
 *   domain: 'gatehouse-auth',
 *   descriptors: [{ entries: [{ key: 'operation', value: 'token' }] }],
 *   hitsAddend: 1,
 * })
 * client.close()
 * ```
 */
export class RateLimitClient {
  readonly #authority: string | undefined
  readonly #client: grpc.Client | undefined
  readonly #timeoutMs: number
  readonly #timeoutHeader: string
  readonly #clock: Clock
  readonly #maxStreams: number
  readonly #coalescer: RequestCoalescer | undefined
  #session: Channel | undefined
  #closed = false
  /** The service's `gatehouse-coalesce-max-descriptors` of its last successful response. */
  #coalesceMax: number | undefined
  #requests = 0
  #calls = 0

  /**
   * @param dialString `host:port` of the service's gRPC listener (grpc-js target syntax).
   */
  constructor(dialString: string, options: RateLimitClientOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? 10_000
    this.#timeoutHeader = `${String(Math.max(1, Math.ceil(this.#timeoutMs)))}m`
    this.#clock = options.clock ?? systemClock
    this.#maxStreams = options.maxStreamsPerSession ?? MAX_STREAMS_PER_SESSION
    if (options.coalesce === true) {
      this.#coalescer = new RequestCoalescer({
        send: (request) => this.#send(request),
        maxDescriptors: () => this.#coalesceMax,
        malformed: (details) => new RateLimitCallError(GRPC_CALL_STATUS.INTERNAL, details),
        refusedRequest: (error) => REFUSED_REQUEST_CODES.has(serviceErrorCode(error)),
      })
    }
    if (options.credentials === undefined && HOST_PORT.test(dialString)) {
      this.#authority = `http://${dialString}`
    } else {
      const Client = grpc.makeGenericClientConstructor(
        rateLimitServiceDefinition,
        'RateLimitService',
      )
      this.#client = new Client(
        dialString,
        options.credentials ?? grpc.credentials.createInsecure(),
      )
    }
  }

  /**
   * Asks for one decision (with `coalesce`, possibly in one call with the other requests of this
   * turn: see {@link RateLimitClientOptions.coalesce} for what the answer then holds).
   *
   * @throws {@link RateLimitCallError} (or grpc-js' `ServiceError`, with `credentials`): gRPC
   *   `code` and `details`: `UNAVAILABLE` when the service cannot be reached or the connection
   *   breaks, `DEADLINE_EXCEEDED` past the deadline, `RESOURCE_EXHAUSTED` for a response over
   *   {@link MAX_RESPONSE_MESSAGE_BYTES}, `INTERNAL` for a malformed one, and the service's own
   *   status otherwise (`UNKNOWN` for its errors).
   */
  shouldRateLimit(request: RateLimitRequest): Promise<RateLimitResponse> {
    this.#requests++
    if (this.#coalescer !== undefined && this.#coalesceMax !== undefined) {
      return this.#coalescer.add(request)
    }
    return this.#send(request)
  }

  /** The requests and calls so far (see {@link RateLimitClientOptions.coalesce}). */
  get counts(): RateLimitClientCounts {
    return { requests: this.#requests, calls: this.#calls }
  }

  /** One `ShouldRateLimit` call. */
  #send(request: RateLimitRequest): Promise<RateLimitResponse> {
    this.#calls++
    const client = this.#client
    if (client) {
      return new Promise<RateLimitResponse>((resolve, reject) => {
        let advertised: number | undefined
        const call = client.makeUnaryRequest(
          SHOULD_RATE_LIMIT.path,
          SHOULD_RATE_LIMIT.requestSerialize,
          SHOULD_RATE_LIMIT.responseDeserialize,
          request,
          { deadline: this.#clock.now() + this.#timeoutMs },
          (error, response) => {
            if (error !== null) reject(error)
            else if (response === undefined) reject(new Error('empty response'))
            else {
              this.#coalesceMax = advertised
              resolve(response)
            }
          },
        )
        call.on('metadata', (metadata: grpc.Metadata) => {
          advertised = coalesceMaxOf(metadata.get(COALESCE_MAX_DESCRIPTORS_HEADER)[0])
        })
      })
    }
    return this.#call(request)
  }

  /** The open session, or a new one (dialled now; requests wait for the connection). */
  #channel(): Channel {
    const current = this.#session
    if (current && !current.session.closed && !current.session.destroyed) {
      if (current.streams < this.#maxStreams) return current
      // Out of stream ids: no new streams here; it closes once its calls in flight end (closing
      // it now would fail the calls still waiting for it to connect).
      current.retired = true
      if (current.active === 0) current.session.close()
    }
    const channel: Channel = {
      session: connect(this.#authority as string),
      active: 0,
      streams: 0,
      retired: false,
    }
    const forget = (): void => {
      if (this.#session === channel) this.#session = undefined
    }
    // Every call in flight fails with its stream's error; nothing else to report here.
    channel.session.on('error', forget)
    channel.session.on('close', forget)
    channel.session.on('goaway', forget)
    channel.session.unref()
    this.#session = channel
    return channel
  }

  #call(request: RateLimitRequest): Promise<RateLimitResponse> {
    return new Promise<RateLimitResponse>((resolve, reject) => {
      if (this.#closed) {
        reject(new RateLimitCallError(GRPC_CALL_STATUS.UNAVAILABLE, 'client closed'))
        return
      }
      const message = encodeRateLimitRequest(request)
      const frame = Buffer.allocUnsafe(5 + message.length)
      frame[0] = 0
      frame.writeUInt32BE(message.length, 1)
      frame.set(message, 5)
      const channel = this.#channel()
      let stream
      try {
        stream = channel.session.request({
          [constants.HTTP2_HEADER_METHOD]: 'POST',
          [constants.HTTP2_HEADER_PATH]: SHOULD_RATE_LIMIT.path,
          [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
          [constants.HTTP2_HEADER_TE]: 'trailers',
          'grpc-timeout': this.#timeoutHeader,
        })
      } catch (error) {
        reject(
          new RateLimitCallError(GRPC_CALL_STATUS.UNAVAILABLE, 'no connection', { cause: error }),
        )
        return
      }
      channel.streams++
      if (channel.active++ === 0) channel.session.ref()
      let settled = false
      let status: number | undefined
      let details = ''
      let errorCode: string | undefined
      let advertised: number | undefined
      const chunks: Buffer[] = []
      let received = 0
      const finish = (
        error: RateLimitCallError | undefined,
        response?: RateLimitResponse,
      ): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (--channel.active === 0) {
          channel.session.unref()
          if (channel.retired) channel.session.close()
        }
        if (error) {
          if (!stream.closed) stream.close(constants.NGHTTP2_CANCEL)
          reject(error)
        } else resolve(response as RateLimitResponse)
      }
      const timer = setTimeout(() => {
        finish(new RateLimitCallError(GRPC_CALL_STATUS.DEADLINE_EXCEEDED, 'Deadline exceeded'))
      }, this.#timeoutMs)
      const readStatus = (headers: IncomingHttpHeaders): void => {
        const code = headers['grpc-status']
        if (code === undefined) return
        status = Number(code)
        details = grpcMessage(headers['grpc-message'])
        const named = headers[ERROR_CODE_TRAILER]
        errorCode = typeof named === 'string' ? named : undefined
      }
      stream.on('response', (headers) => {
        const http = Number(headers[constants.HTTP2_HEADER_STATUS])
        if (http !== 200) {
          finish(new RateLimitCallError(statusOfHttp(http), `HTTP status ${String(http)}`))
          return
        }
        advertised = coalesceMaxOf(headers[COALESCE_MAX_DESCRIPTORS_HEADER])
        readStatus(headers)
      })
      stream.on('trailers', readStatus)
      stream.on('data', (chunk: Buffer) => {
        received += chunk.length
        if (received > MAX_RESPONSE_MESSAGE_BYTES + 5) {
          finish(
            new RateLimitCallError(
              GRPC_CALL_STATUS.RESOURCE_EXHAUSTED,
              `response over ${String(MAX_RESPONSE_MESSAGE_BYTES)} bytes`,
            ),
          )
        } else chunks.push(chunk)
      })
      stream.on('error', (error: Error) => {
        finish(
          new RateLimitCallError(GRPC_CALL_STATUS.UNAVAILABLE, error.message, { cause: error }),
        )
      })
      stream.on('close', () => {
        if (status === undefined) {
          finish(
            new RateLimitCallError(GRPC_CALL_STATUS.UNAVAILABLE, 'stream ended without a status'),
          )
        } else if (status !== 0) {
          finish(new RateLimitCallError(status, details, { errorCode }))
        } else {
          const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)
          if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
            finish(new RateLimitCallError(GRPC_CALL_STATUS.INTERNAL, 'malformed response message'))
            return
          }
          let response: RateLimitResponse
          try {
            response = decodeRateLimitResponse(body.subarray(5))
          } catch (error) {
            finish(
              new RateLimitCallError(GRPC_CALL_STATUS.INTERNAL, 'undecodable response message', {
                cause: error,
              }),
            )
            return
          }
          this.#coalesceMax = advertised
          finish(undefined, response)
        }
      })
      stream.end(frame)
    })
  }

  /** Closes the channel; calls made afterwards fail (`UNAVAILABLE`). */
  close(): void {
    this.#closed = true
    this.#client?.close()
    this.#session?.session.close()
    this.#session = undefined
  }
}
