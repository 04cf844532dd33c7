import {
  OAuth2Provider,
  profileClaims,
  idOf,
  oauth2Client,
  record,
  records,
  text,
  trimSlash,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider, ProviderEmail } from './oauth-provider.js'

/**
 * GitLab (`EXTERNAL_GITLAB_URL`, default `https://gitlab.com`): `/oauth/authorize`,
 * `/oauth/token`; the user from `/api/v4/user` (its `email` verified when `confirmed_at` is set)
 * and more addresses from `/api/v4/user/emails`. Scope `read_user`. PKCE (S256).
 *
 * @see https://docs.gitlab.com/api/oauth2/
 */
export function gitlab(ctx: ProviderContext): OAuthProvider {
  const base = trimSlash(ctx.config.url === '' ? 'https://gitlab.com' : ctx.config.url)
  return new OAuth2Provider({
    name: 'gitlab',
    client: oauth2Client(ctx, {
      authorizeUrl: `${base}/oauth/authorize`,
      tokenUrl: `${base}/oauth/token`,
    }),
    scopes: ['read_user'],
    pkce: true,
    async readUser(user) {
      const profile = record(await user.object(`${base}/api/v4/user`))
      const more = records(
        await user.json(`${base}/api/v4/user/emails`),
        'emails are not a JSON array',
      )
      const id = idOf(profile, 'id')
      const emails: ProviderEmail[] = []
      const primary = text(profile, 'email')
      if (primary !== '') {
        emails.push({
          email: primary,
          verified: text(profile, 'confirmed_at') !== '',
          primary: true,
        })
      }
      for (const e of more) {
        const email = text(e, 'email')
        if (email === '' || email === primary) continue
        emails.push({ email, verified: text(e, 'confirmed_at') !== '', primary: false })
      }
      const name = text(profile, 'name')
      return {
        id,
        emails,
        claims: profileClaims({
          iss: base,
          id,
          name,
          avatar: text(profile, 'avatar_url'),
          userName: text(profile, 'username'),
        }),
      }
    },
  })
}
