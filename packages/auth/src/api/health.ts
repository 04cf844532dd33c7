import type { FastifyInstance } from 'fastify'
import type { AppContext } from './context.js'

/** Version reported by `GET /health`. */
export const VERSION = '0.1.0'

/**
 * `GET /health` (upstream's body: version, name, description) and `GET /.well-known/jwks.json`
 * (public signing keys; `Cache-Control: public, max-age=600`).
 */
export function healthRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.get('/health', async (_request, reply) =>
    reply.send({
      version: VERSION,
      name: 'GoTrue',
      description: 'GoTrue is a user registration and authentication API',
    }),
  )
  const jwks = ctx.keys.jwks()
  app.get('/.well-known/jwks.json', async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=600').send(jwks),
  )
}
