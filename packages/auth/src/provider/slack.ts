import {
  MalformedProfileError,
  OAuth2Provider,
  chooseHost,
  profileClaims,
  assumedEmailOf,
  emailOf,
  flag,
  idOf,
  oauth2Client,
  record,
  text,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'

/**
 * Slack: `slack.com/oauth/authorize`, `slack.com/api/oauth.access` (whose errors come as 200
 * `{"ok":false,"error":…}`); the user from `slack.com/api/openid.connect.userInfo`
 * (`https://slack.com/user_id`, `email` with `email_verified`, `name`, `picture`,
 * `https://slack.com/team_id`). A response without `email_verified` (upstream's legacy Slack
 * provider says none comes) counts the email as verified, as upstream, but it links to an
 * existing account only with `EXTERNAL_SLACK_TRUST_EMAIL`. Scopes `profile email openid`. No
 * PKCE (Slack accepts it only from apps turned into public clients).
 *
 * @see https://api.slack.com/authentication/sign-in-with-slack
 */
export function slack(ctx: ProviderContext): OAuthProvider {
  const host = chooseHost(ctx.config.url, 'slack.com')
  return new OAuth2Provider({
    name: 'slack',
    client: oauth2Client(ctx, {
      authorizeUrl: `${host}/oauth/authorize`,
      tokenUrl: `${host}/api/oauth.access`,
    }),
    scopes: ['profile', 'email', 'openid'],
    async readUser(user) {
      const profile = record(await user.object(`${host}/api/openid.connect.userInfo`))
      if (profile.ok === false)
        throw new MalformedProfileError(`is an error: ${text(profile, 'error')}`)
      const id = idOf(profile, 'https://slack.com/user_id')
      const name = text(profile, 'name')
      const team = text(profile, 'https://slack.com/team_id')
      return {
        id,
        emails:
          'email_verified' in profile
            ? emailOf(text(profile, 'email'), flag(profile, 'email_verified'))
            : assumedEmailOf(ctx, text(profile, 'email')),
        claims: profileClaims({
          iss: host,
          id,
          name,
          avatar: text(profile, 'picture'),
          custom: { 'https://slack.com/team_id': team },
        }),
      }
    },
  })
}
