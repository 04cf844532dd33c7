/**
 * The one mapping from a failed request to what each transport answers: a gRPC status (both gRPC
 * servers) and an HTTP status (`/json`). Service and backend errors keep upstream's answers (gRPC
 * UNKNOWN with the message; `/json` 400); a request whose bytes cannot be decoded is gRPC INTERNAL
 * `grpc: error unmarshalling request: …`, as Go's gRPC server answers. Anything that is not a
 * request error (a bug, or a configuration error that should never reach a request) is
 * "internal": gRPC INTERNAL `internal error`, HTTP 500, and the caller logs it.
 *
 * @see https://grpc.github.io/grpc/core/md_doc_statuscodes.html
 * @module
 */
import { RateLimitError, type RateLimitErrorCode } from '../errors.js'

/** The gRPC status codes the servers answer with. */
export const GRPC_STATUS = {
  OK: 0,
  UNKNOWN: 2,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  RESOURCE_EXHAUSTED: 8,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAUTHENTICATED: 16,
} as const

/** A gRPC status code number of {@link GRPC_STATUS}. */
export type GrpcStatusCode = (typeof GRPC_STATUS)[keyof typeof GRPC_STATUS]

/** The status a call ends with (the shape of grpc-js' `StatusObject`, so it passes as is). */
export interface GrpcStatus {
  readonly code: GrpcStatusCode
  /** The `grpc-message` text (not yet percent-encoded). */
  readonly details: string
  /** The error's code, sent as `ERROR_CODE_TRAILER`; absent for internal errors. */
  readonly errorCode?: RateLimitErrorCode | undefined
}

/** An HTTP error answer: status line, plain-text body and the `x-gatehouse-error*` headers. */
export interface HttpError {
  /** HTTP status code. */
  readonly status: number
  /** Response body (Go's status text). */
  readonly body: string
  /** `x-gatehouse-error-code`. */
  readonly code: string
  /** `x-gatehouse-error`: the reason. */
  readonly message: string
}

/** The answer to a call that failed unexpectedly. */
export const INTERNAL_GRPC_STATUS: GrpcStatus = {
  code: GRPC_STATUS.INTERNAL,
  details: 'internal error',
}

/** How each code is answered; `internal` codes never come from a request. */
const ANSWERS: Readonly<
  Record<RateLimitErrorCode, { grpc: GrpcStatusCode | 'unmarshal' | 'internal'; http: number }>
> = {
  ERR_SERVICE: { grpc: GRPC_STATUS.UNKNOWN, http: 400 },
  ERR_REQUEST_TOO_LARGE: { grpc: GRPC_STATUS.UNKNOWN, http: 400 },
  ERR_BACKEND: { grpc: GRPC_STATUS.UNKNOWN, http: 400 },
  ERR_BACKEND_KEY: { grpc: GRPC_STATUS.UNKNOWN, http: 400 },
  ERR_INVALID_WIRE_FORMAT: { grpc: 'unmarshal', http: 400 },
  ERR_EMPTY_BODY: { grpc: 'unmarshal', http: 400 },
  ERR_INVALID_UTF8: { grpc: 'unmarshal', http: 400 },
  ERR_INVALID_JSON: { grpc: 'unmarshal', http: 400 },
  ERR_INVALID_MESSAGE: { grpc: 'unmarshal', http: 400 },
  ERR_RATELIMIT_CONFIG: { grpc: 'internal', http: 500 },
}

/**
 * The gRPC status a failed call ends with.
 *
 * @returns The status, or undefined when `error` is not a request error (answer
 *   {@link INTERNAL_GRPC_STATUS} and log it).
 */
export function grpcStatusOf(error: unknown): GrpcStatus | undefined {
  if (!(error instanceof RateLimitError)) return undefined
  const grpc = ANSWERS[error.code].grpc
  if (grpc === 'internal') return undefined
  if (grpc === 'unmarshal') {
    return {
      code: GRPC_STATUS.INTERNAL,
      details: `grpc: error unmarshalling request: ${error.message}`,
      errorCode: error.code,
    }
  }
  return { code: grpc, details: error.message, errorCode: error.code }
}

/**
 * The HTTP answer to a failed `/json` request: 400 `Bad Request` with the error's code and
 * message in `x-gatehouse-error-code` / `x-gatehouse-error`.
 *
 * @returns The answer, or undefined when `error` is not a request error (answer 500 and log it).
 */
export function httpErrorOf(error: unknown): HttpError | undefined {
  if (!(error instanceof RateLimitError)) return undefined
  const status = ANSWERS[error.code].http
  if (status >= 500) return undefined
  return { status, body: 'Bad Request\n', code: error.code, message: error.message }
}
