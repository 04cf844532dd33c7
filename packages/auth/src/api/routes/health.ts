import { NotFoundError } from '../../errors.js'
import { OAUTH_SCOPES } from '../../services/oauth-server.js'
import { VERSION } from '../../version.js'
import type { RouteGroup } from './group.js'

/** The standard claims upstream lists in its discovery document. */
const CLAIMS = [
  'sub',
  'aud',
  'iss',
  'exp',
  'iat',
  'auth_time',
  'nonce',
  'email',
  'email_verified',
  'phone_number',
  'phone_number_verified',
  'name',
  'picture',
  'preferred_username',
  'updated_at',
]

/**
 * `GET /health` (upstream's body: the package's version, name, description), `GET
 * /.well-known/jwks.json` (public signing keys) and `GET /.well-known/openid-configuration` (OpenID
 * Connect Discovery 1.0 §3, upstream's fields), both with `Cache-Control: public, max-age=600`.
 *
 * The discovery document's `issuer` is `JWT_ISSUER`, or `API_EXTERNAL_URL` when that is empty
 * (upstream then answers an empty issuer and relative endpoints); its
 * `id_token_signing_alg_values_supported` lists the algorithms of the configured keys (upstream
 * lists RS256, HS256 and ES256 whatever its keys). The endpoints under `/oauth/` are upstream's
 * OAuth server's, listed as upstream lists them; `registration_endpoint` is there while
 * `OAUTH_SERVER_ALLOW_DYNAMIC_REGISTRATION` is on. `GET /.well-known/oauth-authorization-server`
 * (RFC 8414) answers the same document while `OAUTH_SERVER_ENABLED` is on.
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
  const issuer = ctx.settings.jwt.issuer || ctx.settings.apiExternalUrl
  const base = issuer.replace(/\/+$/, '')
  const discovery = {
    issuer,
    authorization_endpoint: `${base}/oauth/authorize`,
    token_endpoint: `${base}/oauth/token`,
    jwks_uri: `${base}/.well-known/jwks.json`,
    userinfo_endpoint: `${base}/oauth/userinfo`,
    ...(ctx.settings.oauthServer.enabled && ctx.settings.oauthServer.allowDynamicRegistration
      ? { registration_endpoint: `${base}/oauth/clients/register` }
      : {}),
    scopes_supported: OAUTH_SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: ctx.keys.algorithms(),
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    claims_supported: CLAIMS,
    // Upstream lists `plain` too; the OAuth server here takes S256 only (see SECURITY.md).
    code_challenge_methods_supported: ['S256'],
    authorization_response_iss_parameter_supported: true,
  }
  app.get('/.well-known/openid-configuration', (_request, reply) =>
    reply.header('cache-control', 'public, max-age=600').send(discovery),
  )
  app.get('/.well-known/oauth-authorization-server', (_request, reply) => {
    if (!ctx.settings.oauthServer.enabled) {
      throw new NotFoundError('feature_disabled', 'OAuth server is disabled')
    }
    return reply.header('cache-control', 'public, max-age=600').send(discovery)
  })
}
