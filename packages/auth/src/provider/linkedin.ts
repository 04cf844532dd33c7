import {
  MalformedProfileError,
  OAuth2Provider,
  chooseHost,
  profileClaims,
  assumedEmailOf,
  idOf,
  oauth2Client,
  record,
  records,
  text,
  type ProviderContext,
} from './base.js'
import type { OAuthProvider } from './oauth-provider.js'

/** A LinkedIn localized field (`{localized: {en_US: …}, preferredLocale: {language, country}}`). */
function localized(value: unknown): string {
  const field = record(value ?? {})
  const locale = record(field.preferredLocale ?? {})
  const names = record(field.localized ?? {})
  const preferred = text(names, `${text(locale, 'language')}_${text(locale, 'country')}`)
  return preferred !== ''
    ? preferred
    : (Object.values(names).find((v): v is string => typeof v === 'string') ?? '')
}

/**
 * LinkedIn: `api.linkedin.com/oauth/v2/authorization` and `/accessToken`; the user from
 * `/v2/me` (localized names, the display image's first identifier) and the address from
 * `/v2/emailAddress?q=members`. LinkedIn does not say whether it verified the address: it counts
 * as verified, as upstream, but links to an existing account only with
 * `EXTERNAL_LINKEDIN_TRUST_EMAIL`. Scopes `r_emailaddress r_liteprofile`. No PKCE (LinkedIn offers
 * it to approved native apps only).
 *
 * @see https://learn.microsoft.com/en-us/linkedin/shared/authentication/authorization-code-flow
 */
export function linkedin(ctx: ProviderContext): OAuthProvider {
  const host = chooseHost(ctx.config.url, 'api.linkedin.com')
  return new OAuth2Provider({
    name: 'linkedin',
    client: oauth2Client(ctx, {
      authorizeUrl: `${host}/oauth/v2/authorization`,
      tokenUrl: `${host}/oauth/v2/accessToken`,
    }),
    scopes: ['r_emailaddress', 'r_liteprofile'],
    async readUser(user) {
      const profile = record(
        await user.object(`${host}/v2/me`, {
          params: {
            projection: '(id,firstName,lastName,profilePicture(displayImage~:playableStreams))',
          },
        }),
      )
      const emails = record(
        await user.object(`${host}/v2/emailAddress`, {
          params: { q: 'members', projection: '(elements*(handle~))' },
        }),
      )
      const id = idOf(profile, 'id')
      const handle = record(
        records(emails.elements, 'emails have no elements array')[0]?.['handle~'] ?? {},
      )
      const email = text(handle, 'emailAddress')
      if (email === '') throw new MalformedProfileError('has no emailAddress')
      const picture = record(record(profile.profilePicture ?? {})['displayImage~'] ?? {})
      const image = records(picture.elements ?? [])[0]
      const avatar = text(records(image?.identifiers ?? [])[0], 'identifier')
      const name = `${localized(profile.firstName)} ${localized(profile.lastName)}`.trim()
      return {
        id,
        emails: assumedEmailOf(ctx, email),
        claims: profileClaims({ iss: host, id, name, avatar }),
      }
    },
  })
}
