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
 * Discord: `discord.com/api/oauth2/authorize` and `/token`; the user from `/api/users/@me`
 * (`email` with `verified`; name `username#discriminator`, or `username` for the new unique
 * names whose discriminator is `0`; avatar on `cdn.discordapp.com`). Scopes `email identify`.
 * PKCE (S256, in Discord's authorization server metadata).
 *
 * @see https://discord.com/developers/docs/topics/oauth2
 * @see https://discord.com/.well-known/oauth-authorization-server
 */
export function discord(ctx: ProviderContext): OAuthProvider {
  const api = `${chooseHost(ctx.config.url, 'discord.com')}/api`
  return new OAuth2Provider({
    name: 'discord',
    client: oauth2Client(ctx, {
      authorizeUrl: `${api}/oauth2/authorize`,
      tokenUrl: `${api}/oauth2/token`,
    }),
    scopes: ['email', 'identify'],
    pkce: true,
    async readUser(user) {
      const profile = record(await user.object(`${api}/users/@me`))
      const id = idOf(profile, 'id')
      const username = text(profile, 'username')
      const discriminator = text(profile, 'discriminator')
      const avatar = text(profile, 'avatar')
      const name =
        discriminator === '' || discriminator === '0' ? username : `${username}#${discriminator}`
      const avatarUrl =
        avatar === ''
          ? `https://cdn.discordapp.com/embed/avatars/${String(Number(discriminator || '0') % 5)}.png`
          : `https://cdn.discordapp.com/avatars/${id}/${avatar}.${avatar.startsWith('a_') ? 'gif' : 'png'}`
      return {
        id,
        emails: emailOf(text(profile, 'email'), profile.verified === true),
        claims: profileClaims({
          iss: api,
          id,
          name,
          avatar: avatarUrl,
          custom: { global_name: text(profile, 'global_name') },
        }),
      }
    },
  })
}
