/**
 * Each request's view of the {@link AppContext}: `request.ctx`, whose `db` runs under the
 * request's deadline ({@link guardedDb} with `request.writeGuard`, see `deadline.ts`), so that a
 * request answered with its timeout sends nothing more and never commits afterwards. Services
 * take the context they are given; handlers and hooks give them `request.ctx`.
 *
 * @module
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import { guardedDb, type WriteGuard } from '../../storage/guarded-db.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The app context of this request's work: the shared one, with its `db` under the request's
     * deadline. Made when first read. Set up by {@link registerRequestAppContext}.
     */
    readonly ctx: AppContext
    /** @internal The context made for this request ({@link FastifyRequest.ctx}). */
    madeCtx: AppContext | null
  }
}

/**
 * The context of work done under `guard`: `shared` with its database under it; `shared` itself
 * when there is no guard (`API_MAX_REQUEST_DURATION` 0).
 */
function contextUnder(shared: AppContext, guard: WriteGuard | null): AppContext {
  return guard === null ? shared : { ...shared, db: guardedDb(shared.db, guard) }
}

/**
 * Gives the requests of `app` (a plugin's scope) their `ctx`, made from `shared` (given once the
 * app has started) and the request's `writeGuard`.
 */
export function registerRequestAppContext(app: FastifyInstance, shared: AppContext): void {
  app.decorateRequest('madeCtx', null)
  app.decorateRequest('ctx', {
    getter(this: FastifyRequest): AppContext {
      return (this.madeCtx ??= contextUnder(shared, this.writeGuard))
    },
  })
}
