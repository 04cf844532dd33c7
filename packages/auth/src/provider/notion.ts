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

/** The API version Notion's user endpoint is called with (upstream's). */
export const NOTION_VERSION = '2021-08-16'

/**
 * Notion: `api.notion.com/v1/oauth/authorize` (`owner=user`) and `/v1/oauth/token` (HTTP Basic);
 * the user from `/v1/users/me` with `Notion-Version: 2021-08-16`: the bot's owner user (`id`,
 * `name`, `avatar_url`, `person.email`). Notion does not say whether it verified the email: it
 * counts as verified, as upstream, but links to an existing account only with
 * `EXTERNAL_NOTION_TRUST_EMAIL`. No scopes; no PKCE (not documented).
 *
 * @see https://developers.notion.com/docs/authorization
 */
export function notion(ctx: ProviderContext): OAuthProvider {
  const api = `${chooseHost(ctx.config.url, 'api.notion.com')}/v1`
  return new OAuth2Provider({
    name: 'notion',
    client: oauth2Client(ctx, {
      authorizeUrl: `${api}/oauth/authorize`,
      tokenUrl: `${api}/oauth/token`,
      authScheme: 'basic_auth',
    }),
    scopes: [],
    authorizeParams: { owner: 'user' },
    async readUser(user) {
      const me = await user.object(`${api}/users/me`, {
        headers: { 'Notion-Version': NOTION_VERSION },
      })
      const owner = record(record(record(me.bot ?? {}).owner ?? {}).user, 'has no bot.owner.user')
      const id = idOf(owner, 'id')
      const name = text(owner, 'name')
      return {
        id,
        emails: assumedEmailOf(ctx, text(record(owner.person ?? {}), 'email')),
        claims: profileClaims({ iss: api, id, name, avatar: text(owner, 'avatar_url') }),
      }
    },
  })
}
