/**
 * The gRPC over HTTP/2 wire protocol as the lean server (`grpc-native.ts`) speaks it:
 * length-prefixed request messages, `grpc-status` / `grpc-message` trailers (or trailers-only
 * responses for errors) and the `grpc-timeout` header.
 *
 * @see https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md
 * @module
 */
import { constants, type ServerHttp2Stream } from 'node:http2'
import { ERROR_CODE_TRAILER } from '../protocol/grpc.js'
import { GRPC_STATUS, type GrpcStatus } from './status.js'

/** Largest accepted request message (grpc-js' and grpc-go's default), in bytes. */
export const MAX_RECEIVE_MESSAGE_BYTES = 4 * 1024 * 1024

/** Headers of every answer. */
export const RESPONSE_HEADERS = {
  [constants.HTTP2_HEADER_STATUS]: 200,
  [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
}
/** Trailers of a successful call. */
export const OK_TRAILERS = { 'grpc-status': '0' }
/**
 * `respond()` options of an answer with a message: trailers follow the data. No `date` header
 * (Node's http2 adds one by default), as grpc-go answers: one header less to build and encode
 * per call.
 */
export const WITH_TRAILERS = { waitForTrailers: true, sendDate: false }
/** `respond()` options of a trailers-only answer (an error), without `date` as above. */
export const TRAILERS_ONLY = { endStream: true, sendDate: false }

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
export function ignoreStreamError(): void {
  // Nothing to do.
}

/** `Check` for `/grpc.health.v1.Health/Check` (for logs). */
export function methodName(path: string | string[] | undefined): string {
  const text = String(path)
  return text.slice(text.lastIndexOf('/') + 1)
}

/**
 * Ends a call with an error status (a trailers-only response). Nothing happens when the call was
 * already answered (e.g. after its deadline); a call whose answer has begun is reset. When the
 * request is not complete, the stream is then reset with NO_ERROR (RFC 9113 §8.1), so that the
 * client stops sending and what it sent is released.
 */
export function sendError(
  stream: ServerHttp2Stream,
  { code, details, errorCode }: GrpcStatus,
): void {
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
    TRAILERS_ONLY,
  )
  if (!stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR)
}

/**
 * Sends one already framed message (after `headers`, {@link RESPONSE_HEADERS} and the handler's
 * own) and the OK trailers, unless the call was answered.
 */
export function sendFramed(
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
 * Reads the single request message of a unary call and calls `done` with its bytes; a message
 * that is too large, compressed, missing or followed by another is answered with an error
 * instead (and `done` is not called).
 */
export function readUnary(stream: ServerHttp2Stream, done: (message: Buffer) => void): void {
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
