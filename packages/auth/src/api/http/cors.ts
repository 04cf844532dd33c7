import type { FastifyInstance } from 'fastify'

/** Request headers browsers may send (upstream's list). */
export const CORS_ALLOWED_HEADERS = [
  'Accept',
  'Authorization',
  'Content-Type',
  'X-Client-IP',
  'X-Client-Info',
  'X-JWT-AUD',
  'x-use-cookie',
  'X-Supabase-Api-Version',
]

/** Response headers browsers may read (upstream's list). */
export const CORS_EXPOSED_HEADERS = ['X-Total-Count', 'Link', 'X-Supabase-Api-Version']

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])
const ALLOWED = new Set(CORS_ALLOWED_HEADERS.map((h) => h.toLowerCase()))

/**
 * CORS as upstream (rs/cors with any origin and credentials): the request's `Origin` is echoed
 * with `Access-Control-Allow-Credentials: true`; preflights for GET/POST/PUT/PATCH/DELETE with allowed
 * headers get 204 and the allowed method and headers; other preflights get no CORS headers.
 */
export function registerCors(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin
    reply.header('vary', 'Origin')
    if (origin === undefined) return
    const method = request.headers['access-control-request-method']
    if (request.method === 'OPTIONS' && typeof method === 'string') {
      reply.header('vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers')
      const requested = (request.headers['access-control-request-headers'] ?? '')
        .split(',')
        .map((h) => h.trim())
        .filter((h) => h !== '')
      if (
        METHODS.has(method.toUpperCase()) &&
        requested.every((h) => ALLOWED.has(h.toLowerCase()))
      ) {
        reply.header('access-control-allow-origin', origin)
        reply.header('access-control-allow-credentials', 'true')
        reply.header('access-control-allow-methods', method.toUpperCase())
        if (requested.length > 0) reply.header('access-control-allow-headers', requested.join(', '))
      }
      return reply.code(204).send()
    }
    reply.header('access-control-allow-origin', origin)
    reply.header('access-control-allow-credentials', 'true')
    reply.header('access-control-expose-headers', CORS_EXPOSED_HEADERS.join(', '))
    return undefined
  })
}
