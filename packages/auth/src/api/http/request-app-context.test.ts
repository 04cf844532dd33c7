import Fastify, { type FastifyInstance } from 'fastify'
import { afterEach, describe, expect, it } from 'vitest'
import type { AppContext } from '../../context.js'
import { RequestTimeoutError } from '../../errors.js'
import { tableNames, type Db } from '../../storage/db.js'
import { registerRequestDeadline } from './deadline.js'
import { registerErrorHandler } from './errors/error-handler.js'
import { registerRequestAppContext } from './request-app-context.js'

/** A database that records the statements it is sent. */
function recordingDb(sent: string[]): Db {
  return {
    t: tableNames(''),
    kind: 'postgres',
    maxConnections: 1,
    query: (text) => {
      sent.push(text)
      return Promise.resolve({ rows: [], rowCount: 0 })
    },
    exec: (script) => {
      sent.push(script)
      return Promise.resolve()
    },
    transaction: (fn) => fn(recordingDb(sent)),
    close: () => Promise.resolve(),
  }
}

describe('request.ctx', () => {
  let app: FastifyInstance | undefined
  afterEach(async () => {
    await app?.close()
  })

  /** A server whose routes are given `shared` as the app context, with the deadline `ms`. */
  function serve(ms: number, shared: AppContext, routes: (scope: FastifyInstance) => void) {
    app = Fastify()
    registerRequestDeadline(app, ms)
    registerErrorHandler(app)
    void app.register((scope, _options, done) => {
      registerRequestAppContext(scope, shared)
      routes(scope)
      done()
    })
    return app
  }

  const shared = (db: Db) => ({ db, settings: { marker: 1 } }) as unknown as AppContext

  it("is one context per request, sharing all but the database, which is the request's", async () => {
    const base = shared(recordingDb([]))
    const seen: AppContext[] = []
    const server = serve(1000, base, (scope) => {
      scope.get('/', (request) => {
        expect(request.ctx).toBe(request.ctx)
        seen.push(request.ctx)
        return {}
      })
    })
    await server.inject('/')
    await server.inject('/')
    const [first, second] = seen as [AppContext, AppContext]
    expect(first).not.toBe(second)
    expect(first.settings).toBe(base.settings)
    expect(first.db).not.toBe(base.db)
    expect(second.db).not.toBe(first.db)
  })

  it('is the shared context itself without a deadline (API_MAX_REQUEST_DURATION 0)', async () => {
    const base = shared(recordingDb([]))
    let seen: AppContext | undefined
    const server = serve(0, base, (scope) => {
      scope.get('/', (request) => {
        seen = request.ctx
        return {}
      })
    })
    await server.inject('/')
    expect(seen).toBe(base)
  })

  it('sends nothing of a request once it was answered with its timeout', async () => {
    const sent: string[] = []
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let settled!: Promise<unknown>
    const server = serve(50, shared(recordingDb(sent)), (scope) => {
      scope.post('/', async (request) => {
        await released
        settled = request.ctx.db.query('UPDATE users SET x = 1').catch((error: unknown) => error)
        await settled
        return {}
      })
    })
    const res = await server.inject({ method: 'POST', url: '/', payload: {} })
    expect(res.statusCode).toBe(504)
    release()
    await expect.poll(() => settled).toBeInstanceOf(RequestTimeoutError)
    expect(sent).toEqual([])
  })
})
