/**
 * The OAuth server's client registry on the wire: admin `GET`/`POST /admin/oauth/clients`,
 * `GET`/`PUT`/`DELETE /admin/oauth/clients/<client_id>` and `POST
 * /admin/oauth/clients/<client_id>/regenerate_secret` (for tokens whose role is in
 * `JWT_ADMIN_ROLES`), and RFC 7591's `POST /oauth/clients/register` (anyone, when
 * `OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION`, limited by `RATE_LIMIT_OAUTH_DYNAMIC_CLIENT_REGISTER`).
 * All answer `404 feature_disabled` while `OAUTH_SERVER_ENABLED` is off. A client's secret is in
 * the answer that creates it and nowhere else.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/oauthserver/handlers.go
 * @module
 */
import type { FastifyRequest, preValidationHookHandler } from 'fastify'
import type { RouteContext } from '../../context.js'
import { BadRequestError, NotFoundError } from '../../errors.js'
import type { OAuthClient } from '../../models/oauth-client.js'
import {
  allOAuthClients,
  getOAuthClient,
  registerDynamicClient,
  registerOAuthClient,
  regenerateClientSecret,
  removeOAuthClient,
  updateOAuthClientFields,
  type ClientWithSecret,
  type OAuthClientParams,
} from '../../services/oauth-clients.js'
import { rateLimit, requireAdmin } from '../http/hooks.js'
import type { RouteGroup } from './group.js'

/**
 * A guard that answers `404 feature_disabled` "OAuth server is disabled" while
 * `OAUTH_SERVER_ENABLED` is off (upstream `requireOAuthServerEnabled`).
 */
export function requireOAuthServer(ctx: RouteContext): preValidationHookHandler {
  return (_request, _reply, done) => {
    done(
      ctx.settings.oauthServer.enabled
        ? undefined
        : new NotFoundError('feature_disabled', 'OAuth server is disabled'),
    )
  }
}

/**
 * A client as upstream answers it (`OAuthServerClientResponse`); empty strings are left out. With
 * its secret comes `client_secret_expires_at: 0` (never), which RFC 7591 §3.2.1 requires.
 */
export function serializeOAuthClient({ client, clientSecret }: ClientWithSecret) {
  const optional = (name: string, value: string | null) => (value ? { [name]: value } : {})
  return {
    client_id: client.id,
    // RFC 7591 §3.2.1: a secret comes with when it expires (0: never).
    ...(clientSecret === undefined
      ? {}
      : { client_secret: clientSecret, client_secret_expires_at: 0 }),
    client_type: client.clientType,
    redirect_uris: client.redirectUris,
    token_endpoint_auth_method: client.tokenEndpointAuthMethod,
    grant_types: client.grantTypes,
    response_types: ['code'],
    ...optional('client_name', client.clientName),
    ...optional('client_uri', client.clientUri),
    ...optional('logo_uri', client.logoUri),
    registration_type: client.registrationType,
    created_at: client.createdAt.toISOString(),
    updated_at: client.updatedAt.toISOString(),
  }
}

const BAD_BODY = 'Invalid JSON body'

/**
 * The client fields of a JSON body, each checked for its JSON type (a wrong type is upstream's
 * `400 bad_json` "Invalid JSON body", with the field named); unknown fields are ignored.
 */
export function clientParams(body: unknown): OAuthClientParams {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new BadRequestError('bad_json', `${BAD_BODY}: expected a JSON object`)
  }
  const fields = body as Record<string, unknown>
  const text = (name: string): string | undefined => {
    const value = fields[name]
    if (value === undefined || value === null) return undefined
    if (typeof value !== 'string') {
      throw new BadRequestError('bad_json', `${BAD_BODY}: ${name} must be a string`)
    }
    return value
  }
  const list = (name: string): string[] | undefined => {
    const value = fields[name]
    if (value === undefined || value === null) return undefined
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
      throw new BadRequestError('bad_json', `${BAD_BODY}: ${name} must be an array of strings`)
    }
    return value
  }
  return {
    redirectUris: list('redirect_uris'),
    grantTypes: list('grant_types'),
    clientName: text('client_name'),
    clientUri: text('client_uri'),
    logoUri: text('logo_uri'),
    clientType: text('client_type'),
    tokenEndpointAuthMethod: text('token_endpoint_auth_method'),
  }
}

const clientIdOf = (request: FastifyRequest) => (request.params as { client_id: string }).client_id

const withoutSecret = (client: OAuthClient) => serializeOAuthClient({ client })

/** Admin client management (`/admin/oauth/clients…`). */
export const oauthAdminClientRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireAdmin(ctx))
  app.addHook('preValidation', requireOAuthServer(ctx))

  app.get('/admin/oauth/clients', async (request) => ({
    clients: (await allOAuthClients(request.ctx)).map(withoutSecret),
  }))

  app.post('/admin/oauth/clients', async (request, reply) => {
    const created = await registerOAuthClient(request.ctx, clientParams(request.body), 'manual')
    return reply.code(201).send(serializeOAuthClient(created))
  })

  app.get('/admin/oauth/clients/:client_id', async (request) =>
    withoutSecret(await getOAuthClient(request.ctx, clientIdOf(request))),
  )

  app.put('/admin/oauth/clients/:client_id', async (request) =>
    withoutSecret(
      await updateOAuthClientFields(request.ctx, clientIdOf(request), clientParams(request.body)),
    ),
  )

  app.delete('/admin/oauth/clients/:client_id', async (request, reply) => {
    await removeOAuthClient(request.ctx, clientIdOf(request))
    return reply.code(204).send()
  })

  app.post('/admin/oauth/clients/:client_id/regenerate_secret', async (request) =>
    serializeOAuthClient(await regenerateClientSecret(request.ctx, clientIdOf(request))),
  )
}

/** RFC 7591 dynamic client registration (`POST /oauth/clients/register`). */
export const oauthRegistrationRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireOAuthServer(ctx))
  app.post(
    '/oauth/clients/register',
    { preHandler: rateLimit(ctx, 'oauth_client_register') },
    async (request, reply) => {
      const created = await registerDynamicClient(request.ctx, clientParams(request.body))
      return reply.code(201).send(serializeOAuthClient(created))
    },
  )
}
