/**
 * The API gateway of `npm start`: the Supabase URL layout in front of the auth server, so that
 * `createClient(url, anonKey).auth` of `@supabase/supabase-js` works. `/auth/v1/<path>` is
 * forwarded to the auth server's `/<path>` (`@fastify/http-proxy`), `/` is the page mailed
 * links land on (`site.ts`) and `/passkeys` a page to try passkeys by hand (`passkeys-page.ts`).
 *
 * @module
 */
import proxy from '@fastify/http-proxy'
import Fastify from 'fastify'
import { bundleAuthJs, PASSKEYS_SCRIPT, passkeysPage } from './passkeys-page.js'
import { SITE_CSP, SITE_SCRIPT, sitePage } from './site.js'

/** Options of {@link startGateway}. */
export interface GatewayOptions {
  readonly host: string
  readonly port: number
  /** The auth server, `http://127.0.0.1:9999`. */
  readonly authUrl: string
  /** The mail inbox's page, linked from the site page. */
  readonly inboxUrl: string
}

/** A running gateway. */
export interface Gateway {
  readonly url: string
  close(): Promise<void>
}

/**
 * Starts the gateway.
 *
 * @throws {Error} When the port cannot be listened on (`EADDRINUSE`).
 */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const app = Fastify({ logger: false })
  await app.register(proxy, { upstream: options.authUrl, prefix: '/auth/v1', rewritePrefix: '' })
  const headers = {
    'cache-control': 'no-store',
    'content-security-policy': SITE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  }
  const page = sitePage(options.inboxUrl)
  app.get('/', (_request, reply) =>
    reply.headers(headers).type('text/html; charset=utf-8').send(page),
  )
  app.get('/site.js', (_request, reply) =>
    reply.headers(headers).type('text/javascript; charset=utf-8').send(SITE_SCRIPT),
  )
  const passkeys = passkeysPage(options.inboxUrl)
  app.get('/passkeys', (_request, reply) =>
    reply.headers(headers).type('text/html; charset=utf-8').send(passkeys),
  )
  app.get('/passkeys.js', (_request, reply) =>
    reply.headers(headers).type('text/javascript; charset=utf-8').send(PASSKEYS_SCRIPT),
  )
  // Bundled once, at the first request (the other pages never need it).
  let bundle: Promise<string> | undefined
  app.get('/auth-js.js', async (_request, reply) => {
    bundle ??= bundleAuthJs()
    return reply
      .headers(headers)
      .type('text/javascript; charset=utf-8')
      .send(await bundle)
  })
  await app.listen({ host: options.host, port: options.port })
  return {
    url: `http://${options.host}:${String(options.port)}`,
    close: () => app.close(),
  }
}
