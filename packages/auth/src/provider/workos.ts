import {
  OAuth2Provider,
  chooseHost,
  profileClaims,
  assumedEmailOf,
  idOf,
  oauth2Client,
  record,
  text,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'

/**
 * WorkOS SSO: `api.workos.com/sso/authorize` (with the `connection`, `organization` or
 * `provider` the client forwards) and `/sso/token`, whose response carries the `profile` (`id`,
 * `email`, `first_name`, `last_name`, `connection_id`, `organization_id`). The email is what the
 * organization's identity provider asserts, which WorkOS does not verify: it counts as verified,
 * as upstream, but links to an existing account only with `EXTERNAL_WORKOS_TRUST_EMAIL`. No
 * scopes. PKCE (S256).
 *
 * @see https://workos.com/docs/reference/sso/get-authorization-url
 */
export function workos(ctx: ProviderContext): OAuthProvider {
  const host = chooseHost(ctx.config.url, 'api.workos.com')
  return new OAuth2Provider({
    name: 'workos',
    client: oauth2Client(ctx, {
      authorizeUrl: `${host}/sso/authorize`,
      tokenUrl: `${host}/sso/token`,
    }),
    scopes: [],
    pkce: true,
    // eslint-disable-next-line @typescript-eslint/require-await -- the profile is in the token response
    async readUser(_user, tokens) {
      const profile = record(tokens.params.profile, 'is missing from the token response')
      const id = idOf(profile, 'id')
      const name = `${text(profile, 'first_name')} ${text(profile, 'last_name')}`.trim()
      return {
        id,
        emails: assumedEmailOf(ctx, text(profile, 'email')),
        claims: profileClaims({
          iss: host,
          id,
          name,
          custom: {
            connection_id: text(profile, 'connection_id'),
            connection_type: text(profile, 'connection_type'),
            organization_id: text(profile, 'organization_id'),
            idp_id: text(profile, 'idp_id'),
          },
        }),
      }
    },
  })
}
