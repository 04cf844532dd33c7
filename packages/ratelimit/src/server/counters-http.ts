/**
 * `GET /counters` and `DELETE /counters` on the HTTP port (issue 32): the counter API, behind a
 * bearer token (`ADMIN_API_TOKEN`; without one the path answers 404 as any unknown path). The
 * body is a `/json` request (`domain`, `descriptors`); the answer lists each descriptor's windows
 * with their count, remaining, reset and algorithm state ({@link CounterApi}); `DELETE` resets
 * them. Every call is logged (method, domain, number of descriptors, status: never the token or
 * the descriptor values) and counted (`ratelimit.service.admin.counters.{get,delete,unauthorized}`).
 *
 * @module
 */
import { readBody } from './body.js'
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from 'pino'
import { RateLimitError } from '../errors.js'
import { parseJsonRateLimitRequest } from '../protocol/json.js'
import type { RequestLimits } from '../protocol/limits.js'
import type { CounterApi, DescriptorCounters } from '../service/counters.js'
import type { StatsStore } from '../stats/store.js'

/** What the `/counters` handler needs. */
export interface CountersHttpDeps {
  readonly api: CounterApi
  /** `ADMIN_API_TOKEN` (not empty). */
  readonly token: string
  readonly logger: Logger
  readonly stats: StatsStore
  /** The caps `/json` applies to a request. */
  readonly requestLimits: RequestLimits
}

/** What a request body may weigh. */
const MAX_BODY_BYTES = 1024 * 1024

/** Compares the presented token with the configured one in constant time (both hashed first). */
export function tokenMatches(presented: string, expected: string): boolean {
  const digest = (text: string): Buffer => createHash('sha256').update(text).digest()
  return timingSafeEqual(digest(presented), digest(expected))
}

function send(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  const json = status === 200
  res.writeHead(status, {
    'content-type': json ? 'application/json' : 'text/plain; charset=utf-8',
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  })
  res.end(body)
}

function sendError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  send(res, status, `${message}\n`, {
    'x-gatehouse-error-code': code,
    'x-gatehouse-error': message.replace(/[^\x20-\x7e]/g, '?').slice(0, 300),
    ...headers,
  })
}

/** Handles one `/counters` call. */
export async function handleCounters(
  req: IncomingMessage,
  res: ServerResponse,
  deps: CountersHttpDeps,
): Promise<void> {
  const method = req.method ?? ''
  const stat = (name: string): void => {
    deps.stats.counter(`ratelimit.service.admin.counters.${name}`).add()
  }
  const log = (status: number, detail: string): void => {
    deps.logger.info(`counter API: ${method} /counters ${String(status)} ${detail}`)
  }
  if (method !== 'GET' && method !== 'DELETE') {
    req.resume()
    log(405, 'method not allowed')
    sendError(res, 405, 'ERR_METHOD', 'use GET to inspect counters or DELETE to reset them', {
      allow: 'GET, DELETE',
    })
    return
  }
  const body = await readBody(req, MAX_BODY_BYTES)
  if (body === undefined) {
    log(413, 'body too large')
    sendError(
      res,
      413,
      'ERR_BODY_TOO_LARGE',
      `request body exceeds ${String(MAX_BODY_BYTES)} bytes`,
    )
    return
  }
  const header = req.headers.authorization ?? ''
  const presented = /^Bearer +(\S+)$/i.exec(header)?.[1]
  if (presented === undefined || !tokenMatches(presented, deps.token)) {
    stat('unauthorized')
    log(401, presented === undefined ? 'without a bearer token' : 'with a wrong token')
    sendError(
      res,
      401,
      'ERR_UNAUTHORIZED',
      'send Authorization: Bearer <ADMIN_API_TOKEN> to use the counter API',
      { 'www-authenticate': 'Bearer' },
    )
    return
  }
  let request
  try {
    request = parseJsonRateLimitRequest(body, deps.requestLimits)
    if (request.domain === '') throw new Error('domain must not be empty')
  } catch (error) {
    const message = (error as Error).message
    log(400, message)
    sendError(
      res,
      400,
      error instanceof RateLimitError ? error.code : 'ERR_INVALID_MESSAGE',
      message,
    )
    return
  }
  const reset = method === 'DELETE'
  stat(reset ? 'delete' : 'get')
  const what = `domain=${JSON.stringify(request.domain)} descriptors=${String(request.descriptors.length)}`
  let descriptors: DescriptorCounters[]
  try {
    descriptors = reset ? await deps.api.reset(request) : await deps.api.inspect(request)
  } catch (error) {
    const backend = error instanceof RateLimitError
    const status = backend ? 503 : 500
    log(status, `${what}: ${(error as Error).message}`)
    sendError(
      res,
      status,
      backend ? error.code : 'ERR_INTERNAL',
      backend ? (error as Error).message : 'internal error',
    )
    return
  }
  log(200, `${what}${reset ? ' reset' : ''}`)
  send(res, 200, JSON.stringify({ domain: request.domain, reset, descriptors }))
}
