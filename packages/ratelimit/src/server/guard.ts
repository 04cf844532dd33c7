/**
 * The last-resort guard of the HTTP and debug servers: whatever a request handler throws
 * (synchronously or as a rejected promise) is logged and answered with 500, and the process keeps
 * serving. Expected failures (bad input, service errors) are answered by the handlers themselves;
 * this only catches bugs.
 *
 * @module
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http'
import type { Logger } from 'pino'

/** A request handler that may be asynchronous. */
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>

/**
 * Answers a request whose handler failed: 500 `Internal Server Error` with
 * `x-gatehouse-error-code: ERR_INTERNAL` when nothing was sent yet, otherwise the connection is
 * dropped (a half-sent answer cannot be repaired). Never throws.
 */
export function answerInternalError(
  res: ServerResponse,
  logger: Logger,
  where: string,
  error: unknown,
): void {
  logger.error({ err: error }, `${where}: request failed`)
  try {
    if (res.headersSent) {
      res.destroy()
      return
    }
    const body = 'Internal Server Error\n'
    res.writeHead(500, {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': String(Buffer.byteLength(body)),
      'x-gatehouse-error-code': 'ERR_INTERNAL',
      'x-gatehouse-error': 'internal error',
    })
    res.end(body)
  } catch {
    res.destroy()
  }
}

/**
 * Wraps a request handler so that nothing it throws or rejects with reaches the process: the
 * error is logged (`<where>: request failed`) and answered by {@link answerInternalError}.
 *
 * @param where Names the server in the log line (`http`, `debug`).
 */
export function guardRequests(
  where: string,
  logger: Logger,
  handler: RequestHandler,
): RequestListener {
  const fail = (res: ServerResponse, error: unknown): void => {
    answerInternalError(res, logger, where, error)
  }
  return (req, res) => {
    try {
      const pending = handler(req, res)
      if (pending !== undefined) {
        pending.catch((error: unknown) => {
          fail(res, error)
        })
      }
    } catch (error) {
      fail(res, error)
    }
  }
}
