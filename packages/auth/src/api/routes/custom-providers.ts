import { Type, type Static, type TOptional, type TUnsafe } from 'typebox'
import { NotFoundError } from '../../errors.js'
import {
  createProvider,
  getProvider,
  listProviders,
  removeProvider,
  serializeCustomProvider,
  updateProvider,
  type CustomProviderParams,
} from '../../services/custom-providers.js'
import { requireAdmin } from '../http/hooks.js'
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
} from '../http/schema.js'
import type { RouteGroup } from './group.js'

/** A body field holding a list of strings; `null` or absent reads as `undefined`. */
function StringListField(): TOptional<TUnsafe<string[] | undefined>> {
  return Type.Optional(
    Type.Unsafe<string[] | undefined>({ type: ['array', 'null'], items: { type: 'string' } }),
  )
}

const ProviderBody = Body({
  provider_type: StringField(),
  identifier: StringField(),
  name: StringField(),
  client_id: StringField(),
  client_secret: StringField(),
  acceptable_client_ids: StringListField(),
  scopes: StringListField(),
  pkce_enabled: BoolField(),
  attribute_mapping: ObjectField(),
  custom_claims_allowlist: StringListField(),
  authorization_params: ObjectField(),
  enabled: BoolField(),
  email_optional: BoolField(),
  allowed_email_domains: StringListField(),
  issuer: StringField(),
  discovery_url: PointerStringField(),
  skip_nonce_check: BoolField(),
  authorization_url: StringField(),
  token_url: StringField(),
  userinfo_url: StringField(),
  jwks_uri: PointerStringField(),
})

const IdentifierParams = Params({ identifier: Param() })

const ListQuery = Query({ type: OptionalParam() })

/** A list field as upstream decodes it: `null` is absent. */
function list(value: string[] | null | undefined): string[] | undefined {
  return value ?? undefined
}

function paramsOf(body: Static<typeof ProviderBody>): CustomProviderParams {
  return {
    providerType: body.provider_type,
    identifier: body.identifier,
    name: body.name,
    clientId: body.client_id,
    clientSecret: body.client_secret,
    acceptableClientIds: list(body.acceptable_client_ids),
    scopes: list(body.scopes),
    pkceEnabled: body.pkce_enabled,
    attributeMapping: body.attribute_mapping,
    customClaimsAllowlist: list(body.custom_claims_allowlist),
    authorizationParams: body.authorization_params,
    enabled: body.enabled,
    emailOptional: body.email_optional,
    allowedEmailDomains: list(body.allowed_email_domains),
    issuer: body.issuer,
    discoveryUrl: body.discovery_url,
    skipNonceCheck: body.skip_nonce_check,
    authorizationUrl: body.authorization_url,
    tokenUrl: body.token_url,
    userinfoUrl: body.userinfo_url,
    jwksUri: body.jwks_uri,
  }
}

/**
 * Custom OAuth/OIDC providers (auth-js `admin.customProviders.*`): `GET`/`POST
 * /admin/custom-providers`, `GET`/`PUT`/`DELETE /admin/custom-providers/{identifier}`, for admin
 * tokens, while `CUSTOM_OAUTH_ENABLED` is on (else 404 `feature_disabled`).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/custom_oauth_admin.go
 */
export const customProviderRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireAdmin(ctx))
  app.addHook('preValidation', () => {
    if (!ctx.settings.customOauth.enabled) {
      return Promise.reject(
        new NotFoundError('feature_disabled', 'Custom OAuth providers are disabled'),
      )
    }
    return Promise.resolve()
  })

  app.get('/admin/custom-providers', { schema: { querystring: ListQuery } }, async (request) => ({
    providers: (await listProviders(request.ctx, request.query.type ?? '')).map(
      serializeCustomProvider,
    ),
  }))

  app.post(
    '/admin/custom-providers',
    { schema: { body: ProviderBody } },
    async (request, reply) => {
      const provider = await createProvider(request.ctx, paramsOf(request.body))
      return reply.status(201).send(serializeCustomProvider(provider))
    },
  )

  app.get(
    '/admin/custom-providers/:identifier',
    { schema: { params: IdentifierParams } },
    async (request) =>
      serializeCustomProvider(await getProvider(request.ctx, request.params.identifier)),
  )

  app.put(
    '/admin/custom-providers/:identifier',
    { schema: { params: IdentifierParams, body: ProviderBody } },
    async (request) =>
      serializeCustomProvider(
        await updateProvider(request.ctx, request.params.identifier, paramsOf(request.body)),
      ),
  )

  app.delete(
    '/admin/custom-providers/:identifier',
    { schema: { params: IdentifierParams } },
    async (request, reply) => {
      await removeProvider(request.ctx, request.params.identifier)
      return reply.status(204).send()
    },
  )
}
