import { performance } from 'node:perf_hooks'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { RequestTimeoutError } from '../../errors.js'
import type { WriteGuard } from '../../storage/guarded-db.js'

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
    /**
     * What the request's database work may still do (its {@link RequestDeadline}); `null` when
     * `API_MAX_REQUEST_DURATION` is 0. Set by {@link registerRequestDeadline}; the request's
     * `ctx` puts its statements under it (`request-app-context.ts`).
     */
    writeGuard: WriteGuard | null
  }
}

/**
 * The deadline of one request (`API_MAX_REQUEST_DURATION`), and what it lets the request's
 * database work do ({@link WriteGuard}, through `guardedDb` and the request's `ctx`). When the
 * deadline passes:
 * - with no commit in flight and nothing committed, the request is cut: `onCut` answers 504, and
 *   nothing of it is sent to the database any more (a transaction in progress rolls back instead
 *   of committing);
 * - with a commit in flight, the decision waits for it: committed, the request is no longer cut
 *   and its handler answers what it did, late but true; failed, it is cut;
 * - with something already committed, the handler answers likewise.
 *
 * So an error answer never hides a change made afterwards, and a change made is never answered
 * with a timeout.
 */
export class RequestDeadline implements WriteGuard {
  readonly #maxDurationMs: number
  readonly #endsAt: number
  readonly #onCut: () => void
  #writes = 0
  #committed = false
  #expired = false
  #cut = false

  /**
   * @param maxDurationMs `API_MAX_REQUEST_DURATION` in milliseconds (more than 0).
   * @param onCut Answers the request with its timeout; called at most once.
   */
  constructor(maxDurationMs: number, onCut: () => void) {
    this.#maxDurationMs = maxDurationMs
    this.#endsAt = performance.now() + maxDurationMs
    this.#onCut = onCut
  }

  /** Whether the request was cut (answered with its timeout). */
  get cut(): boolean {
    return this.#cut
  }

  /** @throws {@link RequestTimeoutError} Once the request was cut. */
  check(): void {
    if (this.#cut) throw new RequestTimeoutError()
  }

  async write<T>(send: () => Promise<T>): Promise<T> {
    this.check()
    this.#writes++
    try {
      const result = await send()
      this.#committed = true
      return result
    } finally {
      this.#writes--
      if (this.#writes === 0 && this.#expired) this.#decide()
    }
  }

  transactionTimeoutMs(): number {
    // Past the deadline, only a request that has committed still runs: it gets a full budget.
    if (this.#expired) return this.#maxDurationMs
    return Math.max(1, this.#endsAt - performance.now())
  }

  /** The deadline has passed: cut the request now, or once its commits in flight settle. */
  expire(): void {
    this.#expired = true
    if (this.#writes === 0) this.#decide()
  }

  #decide(): void {
    if (this.#cut || this.#committed) return
    this.#cut = true
    this.#onCut()
  }
}

/**
 * Cuts every request at `maxDurationMs` (upstream `API_MAX_REQUEST_DURATION`): if no answer was
 * sent by then, 504 `request_timeout` is sent and `request.deadline` aborts; the handler's work
 * goes on but its late answer is dropped, and its database work may no longer commit (see
 * {@link RequestDeadline}: a request whose commit is in flight, or done, is not cut).
 * `request.deadline` also aborts when the client closes the connection before the answer.
 *
 * Fastify's own `handlerTimeout` and `request.signal` are not used: on Node 20 they react to the
 * request's `close` event, which fires as soon as a body has been read, so a POST's signal aborts
 * (and its timer is cleared) before the handler runs.
 *
 * @param maxDurationMs Milliseconds; 0 for no limit (`deadline` then only follows the client).
 */
export function registerRequestDeadline(app: FastifyInstance, maxDurationMs: number): void {
  app.decorateRequest('deadlineController', null)
  app.decorateRequest('writeGuard', null)
  app.decorateRequest('deadline', {
    getter(this: FastifyRequest) {
      return (this.deadlineController ??= new AbortController()).signal
    },
  })
  app.addHook('onRequest', (request, reply, done) => {
    const res = reply.raw
    const deadline =
      maxDurationMs > 0
        ? new RequestDeadline(maxDurationMs, () => {
            const error = new RequestTimeoutError()
            ;(request.deadlineController ??= new AbortController()).abort(error)
            if (!reply.sent) reply.send(error)
          })
        : undefined
    const timer = deadline
      ? setTimeout(() => {
          deadline.expire()
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
    if (deadline) request.writeGuard = deadline
    done()
  })
}
