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

/** The GraphQL query of Snapchat's `/v1/me`. */
const ME_QUERY = '{me { externalId displayName bitmoji { avatar id } email } }'

/**
 * Snapchat: `accounts.snapchat.com/accounts/oauth2/auth` and `/token`; the user from
 * `kit.snapchat.com/v1/me?query=…` (`data.me`: `externalId`, `displayName`, `bitmoji.avatar`,
 * `email`). Snapchat does not say whether it verified an email: it counts as verified, as
 * upstream, but links to an existing account only with `EXTERNAL_SNAPCHAT_TRUST_EMAIL`. Scopes:
 * the three `user.*` scope URLs. PKCE (S256, Login Kit's recommended flow).
 *
 * @see https://developers.snap.com/snap-kit/login-kit/overview
 */
export function snapchat(ctx: ProviderContext): OAuthProvider {
  const auth = chooseHost(ctx.config.url, 'accounts.snapchat.com')
  const api = chooseHost(ctx.config.url, 'kit.snapchat.com')
  return new OAuth2Provider({
    name: 'snapchat',
    client: oauth2Client(ctx, {
      authorizeUrl: `${auth}/accounts/oauth2/auth`,
      tokenUrl: `${auth}/accounts/oauth2/token`,
    }),
    scopes: [
      'https://auth.snapchat.com/oauth2/api/user.external_id',
      'https://auth.snapchat.com/oauth2/api/user.display_name',
      'https://auth.snapchat.com/oauth2/api/user.bitmoji.avatar',
    ],
    pkce: true,
    async readUser(user) {
      const body = await user.object(`${api}/v1/me`, { params: { query: ME_QUERY } })
      const me = record(record(body.data ?? {}).me, 'has no data.me')
      const id = idOf(me, 'externalId')
      const name = text(me, 'displayName')
      const avatar = text(record(me.bitmoji ?? {}), 'avatar')
      return {
        id,
        emails: assumedEmailOf(ctx, text(me, 'email')),
        claims: profileClaims({ iss: api, id, name, avatar }),
      }
    },
  })
}
