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
 * GitHub: `github.com/login/oauth/authorize` and `/access_token`; the user from
 * `api.github.com/user` and its addresses from `/user/emails` (a custom `EXTERNAL_GITHUB_URL`,
 * GitHub Enterprise, serves the API under `<URL>/api/v3`). Scope `user:email`. PKCE (S256 only,
 * supported since July 2025).
 *
 * @see https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps
 * @see https://github.blog/changelog/2025-07-14-pkce-support-for-oauth-and-github-app-authentication
 */
export function github(ctx: ProviderContext): OAuthProvider {
  const host = chooseHost(ctx.config.url, 'github.com')
  const api = ctx.config.url === '' ? 'https://api.github.com' : `${host}/api/v3`
  return new OAuth2Provider({
    name: 'github',
    client: oauth2Client(ctx, {
      authorizeUrl: `${host}/login/oauth/authorize`,
      tokenUrl: `${host}/login/oauth/access_token`,
    }),
    scopes: ['user:email'],
    pkce: true,
    async readUser(user) {
      const profile = record(await user.object(`${api}/user`))
      const emails = records(await user.json(`${api}/user/emails`), 'emails are not a JSON array')
      const id = idOf(profile, 'id')
      const name = text(profile, 'name')
      const login = text(profile, 'login')
      return {
        id,
        emails: emails
          .filter((e) => text(e, 'email') !== '')
          .map((e) => ({
            email: text(e, 'email'),
            verified: e.verified === true,
            primary: e.primary === true,
          })),
        claims: profileClaims({
          iss: api,
          id,
          name,
          avatar: text(profile, 'avatar_url'),
          userName: login,
          preferredUsername: login,
        }),
      }
    },
  })
}
