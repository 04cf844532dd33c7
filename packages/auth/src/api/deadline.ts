import type { FastifyInstance, FastifyRequest } from 'fastify'
import { RequestTimeoutError } from '../errors.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Aborted when the request runs out of `API_MAX_REQUEST_DURATION` or its client goes away
     * before the answer: work for it that has not started yet (a queued password check) is
     * dropped. Set by {@link registerRequestDeadline}.
     */
    readonly deadline: AbortSignal
    /**
     * The controller behind {@link deadline}, made when first needed (most requests never ask).
     *
     * @internal
     */
    deadlineController: AbortController | null
  }
}

/**
 * Cuts every request at `maxDurationMs` (upstream `API_MAX_REQUEST_DURATION`): if no answer was
 * sent by then, 504 `request_timeout` is sent and `request.deadline` aborts; the handler's work
 * goes on but its late answer is dropped. `request.deadline` also aborts when the client closes
 * the connection before the answer.
 *
 * Fastify's own `handlerTimeout` and `request.signal` are not used: on Node 20 they react to the
 * request's `close` event, which fires as soon as a body has been read, so a POST's signal aborts
 * (and its timer is cleared) before the handler runs.
 *
 * @param maxDurationMs Milliseconds; 0 for no limit (`deadline` then only follows the client).
 */
export function registerRequestDeadline(app: FastifyInstance, maxDurationMs: number): void {
  app.decorateRequest('deadlineController', null)
  app.decorateRequest('deadline', {
    getter(this: FastifyRequest) {
      return (this.deadlineController ??= new AbortController()).signal
    },
  })
  app.addHook('onRequest', (request, reply, done) => {
    const res = reply.raw
    const timer =
      maxDurationMs > 0
        ? setTimeout(() => {
            const error = new RequestTimeoutError()
            ;(request.deadlineController ??= new AbortController()).abort(error)
            if (!reply.sent) reply.send(error)
          }, maxDurationMs)
        : undefined
    res.once('close', () => {
      clearTimeout(timer)
      if (!res.writableFinished) {
        ;(request.deadlineController ??= new AbortController()).abort(
          new Error('the client closed the connection'),
        )
      }
    })
    done()
  })
}
