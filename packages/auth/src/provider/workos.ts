import {
  OAuth2Provider,
  chooseHost,
  profileClaims,
  emailOf,
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
 * `email` counted as verified, `first_name`, `last_name`, `connection_id`, `organization_id`).
 * No scopes.
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
    // eslint-disable-next-line @typescript-eslint/require-await -- the profile is in the token response
    async readUser(_user, tokens) {
      const profile = record(tokens.params.profile, 'is missing from the token response')
      const id = idOf(profile, 'id')
      const name = `${text(profile, 'first_name')} ${text(profile, 'last_name')}`.trim()
      return {
        id,
        emails: emailOf(text(profile, 'email'), true),
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
