/* eslint-disable no-console -- examples print what they get */
// Persisting a token, refreshing it when expired, introspecting (RFC 7662) and revoking it
// (RFC 7009). The token is kept in a JSON file (OAUTH2_TOKEN_FILE), as a database row would be.
import { readFile, writeFile } from 'node:fs/promises'
import { AccessToken, Client } from '@gatehouse/oauth2'

const env = process.env
const client = new Client(
  env.OAUTH2_CLIENT_ID ?? 'client-id',
  env.OAUTH2_CLIENT_SECRET ?? 'client-secret',
  {
    site: env.OAUTH2_SITE ?? 'https://auth.example.com',
    tokenUrl: env.OAUTH2_TOKEN_URL ?? '/oauth/token',
    revokeUrl: env.OAUTH2_REVOKE_URL ?? '/oauth/revoke',
    introspectUrl: env.OAUTH2_INTROSPECT_URL ?? '/oauth/introspect',
  },
)
const file = env.OAUTH2_TOKEN_FILE ?? 'token.json'
const db = {
  load: async () => JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>,
  save: (hash: object) => writeFile(file, JSON.stringify(hash)),
}

let token = AccessToken.fromHash(client, await db.load()) // e.g. { access_token, refresh_token, expires_at }
const refreshEarly = new AccessToken(client, token.token, { ...token.toHash(), expiresLatency: 30 })
if (refreshEarly.expired()) {
  token = await token.refresh() // keeps the old refresh_token if the server sends none
  await db.save(token.toHash())
  console.log('refreshed and saved')
}

type Introspection = { active: boolean }
const info = await client.introspectToken(token.token, 'access_token')
console.log('active:', (info.parsed as Introspection).active)
await token.revoke() // access token; { token_type_hint: 'refresh_token' } for the refresh token
if (token.refreshToken !== undefined) await client.revokeToken(token.refreshToken, 'refresh_token')
const after = await client.introspectToken(token.token, 'access_token')
console.log('active after revocation:', (after.parsed as Introspection).active)
