import {
  OAuth2Provider,
  chooseHost,
  profileClaims,
  idOf,
  oauth2Client,
  record,
  records,
  text,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'

/**
 * Bitbucket: `bitbucket.org/site/oauth2/authorize` and `/access_token`; the user from
 * `api.bitbucket.org/2.0/user` and its addresses from `/user/emails` (`values[]` with
 * `is_primary`, `is_confirmed`). Scopes `account email`. No PKCE (not documented for
 * Bitbucket Cloud).
 *
 * @see https://developer.atlassian.com/cloud/bitbucket/oauth-2/
 */
export function bitbucket(ctx: ProviderContext): OAuthProvider {
  const host = chooseHost(ctx.config.url, 'bitbucket.org')
  const api = `${chooseHost(ctx.config.url, 'api.bitbucket.org')}/2.0`
  return new OAuth2Provider({
    name: 'bitbucket',
    client: oauth2Client(ctx, {
      authorizeUrl: `${host}/site/oauth2/authorize`,
      tokenUrl: `${host}/site/oauth2/access_token`,
    }),
    scopes: ['account', 'email'],
    async readUser(user) {
      const profile = record(await user.object(`${api}/user`))
      const page = await user.object(`${api}/user/emails`)
      const id = idOf(profile, 'uuid')
      const name = text(profile, 'display_name')
      const links = record(profile.links ?? {})
      const avatar = record(links.avatar ?? {})
      return {
        id,
        emails: records(page.values, 'emails have no values array')
          .filter((e) => text(e, 'email') !== '')
          .map((e) => ({
            email: text(e, 'email'),
            verified: e.is_confirmed === true,
            primary: e.is_primary === true,
          })),
        claims: profileClaims({ iss: host, id, name, avatar: text(avatar, 'href') }),
      }
    },
  })
}
