import { VERSION } from '../../version.js'
import type { RouteGroup } from './group.js'

/**
 * `GET /health` (upstream's body: the package's version, name, description) and `GET /.well-known/jwks.json`
 * (public signing keys; `Cache-Control: public, max-age=600`).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/jwks.go
 */
export const healthRoutes: RouteGroup = (app, ctx) => {
  const health = {
    version: VERSION,
    name: 'GoTrue',
    description: 'GoTrue is a user registration and authentication API',
  }
  app.get('/health', () => health)
  const jwks = ctx.keys.jwks()
  app.get('/.well-known/jwks.json', (_request, reply) =>
    reply.header('cache-control', 'public, max-age=600').send(jwks),
  )
}
