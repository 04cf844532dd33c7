/**
 * SAML 2.0 single sign-on: `POST /sso`, `GET /sso/saml/metadata`, `POST /sso/saml/acs`, and the
 * admin API of identity providers, `GET|POST /admin/sso/providers` and `GET|PUT|DELETE
 * /admin/sso/providers/{idp_id}`. All answer `404 saml_provider_disabled` while `SAML_ENABLED`
 * is off.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/sso.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/samlacs.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/ssoadmin.go
 * @module
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import type { AppContext, RouteContext } from '../../context.js'
import { finishSamlAcs, samlMetadata, startSso, type SsoOutcome } from '../../services/sso.js'
import {
  createSsoProvider,
  deleteSsoProviderAsAdmin,
  getSsoProvider,
  listProviders,
  updateSsoProviderAsAdmin,
  type SsoProviderParams,
} from '../../services/sso-admin.js'
import { loadSpKeys, type SpKeys } from '../../services/shared/saml.js'
import { toAuthError } from '../http/errors/error-handler.js'
import { wireErrorOf } from '../http/errors/wire.js'
import { rateLimit, requireAdmin, requireSamlEnabled, verifyCaptcha } from '../http/hooks.js'
import { requestRedirectTo } from '../http/redirect-to.js'
import { requestContext } from '../http/request-context.js'
import {
  Body,
  BoolField,
  ObjectField,
  OptionalParam,
  Param,
  Params,
  PointerStringField,
  Query,
  StringField,
  StringListField,
} from '../http/schema.js'
import { serializeSsoProvider } from '../http/serializers.js'
import { oauthErrorName, withParams } from './external.js'
import type { RouteGroup } from './group.js'

const SsoBody = Body({
  provider_id: StringField(),
  domain: StringField(),
  redirect_to: StringField(),
  skip_http_redirect: BoolField(),
  code_challenge: StringField(),
  code_challenge_method: StringField(),
})

const MetadataQuery = Query({ download: OptionalParam() })

const AcsBody = Body({ SAMLResponse: StringField(), RelayState: StringField() })

const ProviderBody = Body({
  type: StringField(),
  metadata_url: StringField(),
  metadata_xml: StringField(),
  domains: StringListField(),
  attribute_mapping: ObjectField(),
  name_id_format: StringField(),
  resource_id: PointerStringField(),
  disabled: BoolField(),
})

const ListQuery = Query({ resource_id: OptionalParam(), resource_id_prefix: OptionalParam() })

const ProviderParams = Params({ idp_id: Param() })

function providerParams(body: Static<typeof ProviderBody>): SsoProviderParams {
  return {
    type: body.type,
    metadataUrl: body.metadata_url,
    metadataXml: body.metadata_xml,
    domains: body.domains,
    attributeMapping: body.attribute_mapping,
    nameIdFormat: body.name_id_format,
    resourceId: body.resource_id,
    disabled: body.disabled,
  }
}

/** The service provider's keys, loaded once per app on first use. */
function spKeysOnce(ctx: RouteContext): () => Promise<SpKeys> {
  let keys: Promise<SpKeys> | undefined
  return () =>
    (keys ??= loadSpKeys(ctx.settings).catch((error: unknown) => {
      keys = undefined
      throw error
    }))
}

/** Where a finished sign-in goes: the session in the fragment, or `?code=` (PKCE). */
function successLocation(outcome: SsoOutcome): string {
  if (outcome.kind === 'code') {
    return withParams(outcome.redirectTo, { code: outcome.authCode }, 'query')
  }
  const { session } = outcome
  return withParams(
    outcome.redirectTo,
    {
      access_token: session.accessToken,
      expires_at: String(session.expiresAt),
      expires_in: String(session.expiresIn),
      refresh_token: session.refreshToken,
      token_type: 'bearer',
    },
    'fragment',
  )
}

/**
 * `POST /sso/saml/acs`: every refusal is a 303 to `SITE_URL` with `error`, `error_code` and
 * `error_description` in the query (upstream), never a 500 page.
 */
async function acs(
  ctx: AppContext,
  keys: () => Promise<SpKeys>,
  request: FastifyRequest<{ Body: Static<typeof AcsBody> }>,
  reply: FastifyReply,
): Promise<FastifyReply> {
  try {
    const outcome = await finishSamlAcs(
      ctx,
      await keys(),
      { SAMLResponse: request.body.SAMLResponse, RelayState: request.body.RelayState },
      requestContext(request, ctx.settings),
      request.log,
    )
    return await reply.code(302).header('location', successLocation(outcome)).send()
  } catch (error) {
    const authError = toAuthError(error)
    const { status } = wireErrorOf(authError)
    if (status >= 500) {
      request.log.error(
        { err: authError.cause ?? authError, error_code: authError.code },
        authError.message,
      )
    } else {
      request.log.info(
        { error_code: authError.code, reason: authError.message },
        'SAML sign-in refused',
      )
    }
    const location = withParams(
      ctx.settings.siteUrl,
      {
        error: oauthErrorName(authError, status),
        error_code: authError.code,
        error_description: authError.message,
      },
      'query',
    )
    return reply.code(303).header('location', location).send()
  }
}

/** `POST /sso`, `GET /sso/saml/metadata`, `POST /sso/saml/acs`. */
export const ssoRoutes: RouteGroup = (app, ctx) => {
  const keys = spKeysOnce(ctx)
  app.addHook('preValidation', requireSamlEnabled(ctx))

  app.post(
    '/sso',
    { schema: { body: SsoBody }, preHandler: [verifyCaptcha(ctx), rateLimit(ctx, 'sso')] },
    async (request, reply) => {
      const { body } = request
      const url = await startSso(request.ctx, await keys(), {
        providerId: body.provider_id,
        domain: body.domain,
        redirectTo: requestRedirectTo(request, ctx.settings),
        codeChallenge: body.code_challenge,
        codeChallengeMethod: body.code_challenge_method,
      })
      if (body.skip_http_redirect === true) return reply.code(200).send({ url })
      return reply.code(303).header('location', url).send()
    },
  )

  app.get(
    '/sso/saml/metadata',
    { schema: { querystring: MetadataQuery } },
    async (request, reply) => {
      const xml = await samlMetadata(request.ctx, await keys())
      reply
        .header('content-type', 'application/xml')
        .header(
          'cache-control',
          ctx.settings.saml.privateKeyNext === '' ? 'public, max-age=600' : 'public, max-age=60',
        )
      if (request.query.download === 'true') {
        reply.header('content-disposition', 'attachment; filename="metadata.xml"')
      }
      return reply.send(xml)
    },
  )

  app.post(
    '/sso/saml/acs',
    { schema: { body: AcsBody }, preHandler: rateLimit(ctx, 'saml_assertion') },
    (request, reply) => acs(request.ctx, keys, request, reply),
  )
}

/** `/admin/sso/providers` and `/admin/sso/providers/{idp_id}` (by UUID or `resource_<id>`). */
export const ssoAdminRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireAdmin(ctx))
  app.addHook('preValidation', requireSamlEnabled(ctx))

  app.get('/admin/sso/providers', { schema: { querystring: ListQuery } }, async (request) => {
    const providers = await listProviders(request.ctx, {
      resourceId: request.query.resource_id,
      resourceIdPrefix: request.query.resource_id_prefix,
    })
    return { items: providers.map((p) => serializeSsoProvider(p, false)) }
  })

  app.post('/admin/sso/providers', { schema: { body: ProviderBody } }, async (request, reply) => {
    const provider = await createSsoProvider(request.ctx, providerParams(request.body))
    return reply.code(201).send(serializeSsoProvider(provider))
  })

  app.get('/admin/sso/providers/:idp_id', { schema: { params: ProviderParams } }, async (request) =>
    serializeSsoProvider(await getSsoProvider(request.ctx, request.params.idp_id)),
  )

  app.put(
    '/admin/sso/providers/:idp_id',
    { schema: { params: ProviderParams, body: ProviderBody } },
    async (request) => {
      const provider = await getSsoProvider(request.ctx, request.params.idp_id)
      return serializeSsoProvider(
        await updateSsoProviderAsAdmin(request.ctx, provider, providerParams(request.body)),
      )
    },
  )

  app.delete(
    '/admin/sso/providers/:idp_id',
    { schema: { params: ProviderParams } },
    async (request) => {
      const provider = await getSsoProvider(request.ctx, request.params.idp_id)
      return serializeSsoProvider(await deleteSsoProviderAsAdmin(request.ctx, provider))
    },
  )
}
