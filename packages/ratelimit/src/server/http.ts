/**
 * The HTTP server on `HOST:PORT` (upstream `server_impl.go`): `/json` takes a proto3 JSON
 * `RateLimitRequest` with any method and answers 200 (OK) or 429 (OVER_LIMIT) with the JSON
 * response, or 400 `Bad Request` for unreadable requests and service errors; `/healthcheck`
 * answers 200 `OK` or 500 with why (one line per unhealthy component; upstream's body is
 * empty). Other paths: Go's `404 page not found` (400 for a request target
 * that is not a URL, as Go's server answers).
 *
 * The wire stays upstream's; as an addition, every error answer carries
 * `x-gatehouse-error-code` (machine-readable) and `x-gatehouse-error` (the reason).
 *
 * @module
 */
import { onBody } from './body.js'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Logger } from 'pino'
import { formatJsonRateLimitResponse, parseJsonRateLimitRequest } from '../protocol/json.js'
import { RequestLimitError } from '../protocol/limits.js'
import type { RateLimitResponse } from '../protocol/types.js'
import type { RateLimitService } from '../service/service.js'
import { endWithError, type TraceSpan, type Tracing } from '../telemetry/tracing.js'
import { handleCounters, type CountersHttpDeps } from './counters-http.js'
import { answerInternalError, guardRequests } from './guard.js'
import type { HealthChecker } from './health.js'
import { httpErrorOf } from './status.js'

/** Largest `/json` body accepted, in bytes. */
export const MAX_JSON_BODY_BYTES = 4 * 1024 * 1024

/** Dependencies of {@link buildHttpServer}. */
export interface HttpServerDeps {
  readonly service: RateLimitService
  readonly health: HealthChecker
  readonly logger: Logger
  /** A server span per `/json` call (`TRACING_ENABLED`); undefined = no tracer calls. */
  readonly tracing?: Tracing
  /** The counter API (`ADMIN_API_TOKEN` set); undefined = `/counters` answers 404. */
  readonly counters?: CountersHttpDeps | undefined
}

function headerSafe(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').slice(0, 300)
}

function sendText(
  res: ServerResponse,
  status: number,
  body: string,
  error?: { code: string; message: string },
): void {
  const headers: Record<string, string> = {
    'content-type': 'text/plain; charset=utf-8',
    'x-content-type-options': 'nosniff',
    'content-length': String(Buffer.byteLength(body)),
  }
  if (error !== undefined) {
    headers['x-gatehouse-error-code'] = error.code
    headers['x-gatehouse-error'] = headerSafe(error.message)
  }
  res.writeHead(status, headers)
  res.end(body)
}

const POST_JSON_SPAN = 'POST /json'
const POST_JSON_ATTRIBUTES = Object.freeze({
  'http.request.method': 'POST',
  'http.route': '/json',
  'url.path': '/json',
})

/** `/json` in a server span `POST /json` that continues the caller's `traceparent`. */
function tracedJson(
  req: IncomingMessage,
  res: ServerResponse,
  deps: HttpServerDeps,
  tracing: Tracing,
): void {
  // Envoy and clients POST: that span's name and attributes are built once, so that an unsampled
  // call allocates nothing for tracing.
  const trace =
    req.method === 'POST'
      ? tracing.startServer(POST_JSON_SPAN, POST_JSON_ATTRIBUTES, req.headers)
      : tracing.startServer(
          `${req.method ?? 'POST'} /json`,
          { 'http.request.method': req.method ?? '', 'http.route': '/json', 'url.path': '/json' },
          req.headers,
        )
  if (trace === undefined) {
    handleJson(req, res, deps)
    return
  }
  res.once('close', () => {
    trace.span.setAttribute('http.response.status_code', res.statusCode)
    if (res.statusCode >= 500) endWithError(trace.span, `HTTP ${String(res.statusCode)}`)
    else trace.span.end()
  })
  handleJson(req, res, deps, trace)
}

/**
 * `/json`: reads the body, decides, answers. Callbacks and one promise (the decision's), not an
 * async function: this runs once per decision. Anything unexpected is answered as the guard
 * answers it (500 `ERR_INTERNAL`, logged).
 */
function handleJson(
  req: IncomingMessage,
  res: ServerResponse,
  deps: HttpServerDeps,
  trace?: TraceSpan,
): void {
  const fail = (error: unknown): void => {
    answerInternalError(res, deps.logger, 'http', error)
  }
  onBody(
    req,
    MAX_JSON_BODY_BYTES,
    (body) => {
      try {
        decideJson(body, res, deps, fail, trace)
      } catch (error) {
        fail(error)
      }
    },
    fail,
  )
}

function decideJson(
  body: Buffer | undefined,
  res: ServerResponse,
  deps: HttpServerDeps,
  fail: (error: unknown) => void,
  trace: TraceSpan | undefined,
): void {
  if (body === undefined) {
    sendText(res, 413, 'Request Entity Too Large\n', {
      code: 'ERR_BODY_TOO_LARGE',
      message: `request body exceeds ${String(MAX_JSON_BODY_BYTES)} bytes`,
    })
    return
  }
  let pending
  try {
    pending = deps.service.shouldRateLimit(
      parseJsonRateLimitRequest(body, deps.service.requestLimits),
      trace,
    )
  } catch (error) {
    answerJsonError(res, deps, error)
    return
  }
  pending.then(
    (response) => {
      try {
        sendJsonResponse(res, response)
      } catch (error) {
        fail(error)
      }
    },
    (error: unknown) => {
      try {
        answerJsonError(res, deps, error)
      } catch (unexpected) {
        fail(unexpected)
      }
    },
  )
}

/**
 * Answers a request the service refused or could not decide (400, or a backend's status).
 *
 * @throws The error itself when it is none of those (a bug): the caller answers 500.
 */
function answerJsonError(res: ServerResponse, deps: HttpServerDeps, caught: unknown): void {
  // A request beyond a cap is refused (and counted) as the service refuses any other.
  const error = caught instanceof RequestLimitError ? deps.service.refuse(caught) : caught
  const answer = httpErrorOf(error)
  if (answer === undefined) throw error
  deps.logger.debug(`/json: ${answer.message}`)
  sendText(res, answer.status, answer.body, answer)
}

/** 200 (OK), 429 (OVER_LIMIT) or 500 with the response's JSON. */
function sendJsonResponse(res: ServerResponse, response: RateLimitResponse): void {
  const json = formatJsonRateLimitResponse(response)
  const status =
    response.overallCode === 'OK' ? 200 : response.overallCode === 'OVER_LIMIT' ? 429 : 500
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(json)),
  })
  res.end(json)
}

/**
 * Builds the HTTP server (not yet listening). Anything a handler throws is logged and answered
 * with 500 (`x-gatehouse-error-code: ERR_INTERNAL`); the server keeps serving.
 */
export function buildHttpServer(deps: HttpServerDeps): Server {
  const server = createServer(
    guardRequests('http', deps.logger, (req, res): Promise<void> | undefined => {
      const url = req.url ?? '/'
      const query = url.indexOf('?')
      const path = query < 0 ? url : url.slice(0, query)
      if (path === '/json') {
        if (deps.tracing === undefined) handleJson(req, res, deps)
        else tracedJson(req, res, deps, deps.tracing)
        return undefined
      }
      if (path === '/counters' && deps.counters !== undefined) {
        return handleCounters(req, res, deps.counters)
      }
      req.resume()
      if (path === '/healthcheck') {
        if (deps.health.healthy()) sendText(res, 200, 'OK')
        else sendText(res, 500, `${deps.health.reasons().join('\n')}\n`)
      } else if (!URL.canParse(url, 'http://ratelimit')) {
        // As Go's server answers a request target it cannot parse (e.g. `http://[/`).
        sendText(res, 400, 'Bad Request\n', {
          code: 'ERR_BAD_REQUEST_TARGET',
          message: 'malformed request target',
        })
      } else sendText(res, 404, '404 page not found\n')
      return undefined
    }),
  )
  server.keepAliveTimeout = 65_000
  return server
}
