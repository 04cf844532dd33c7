/* eslint-disable no-console -- examples print what they get */
// Resource Owner Password Credentials grant (OAuth 2.0 only; omitted from OAuth 2.1), then a
// refresh. Runs against a Gatehouse auth server (its token endpoint is /token); see the README.
import { Client } from '@gatehouse/oauth2'

const env = process.env
const client = new Client('app', 'app-secret', {
  site: env.OAUTH2_SITE ?? 'https://legacy.example.com',
  tokenUrl: env.OAUTH2_TOKEN_URL ?? '/oauth/token',
})
const token = await client.password.getToken(
  env.OAUTH2_USERNAME ?? 'ann',
  env.OAUTH2_PASSWORD ?? 'correct horse',
  { scope: 'profile' },
)
console.log('signed in:', token.token !== '', 'refresh token:', token.refreshToken !== undefined)

// The refresh_token grant: a new access token (and, with rotation, a new refresh token).
const refreshed = await token.refresh()
console.log('new refresh token:', refreshed.refreshToken !== token.refreshToken)
console.log('expires at', refreshed.expiresAt)
