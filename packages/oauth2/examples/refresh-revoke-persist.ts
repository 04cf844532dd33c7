/* eslint-disable no-console -- examples print what they get */
// Persisting a token, refreshing it when expired, revoking it (RFC 7009), introspecting (RFC 7662).
import { AccessToken, Client } from '@gatehouse/oauth2'

const client = new Client('client-id', 'client-secret', { site: 'https://auth.example.com' })
declare const db: { load(): Promise<Record<string, unknown>>; save(hash: object): Promise<void> }

let token = AccessToken.fromHash(client, await db.load()) // e.g. { access_token, refresh_token, expires_at }
const refreshEarly = new AccessToken(client, token.token, { ...token.toHash(), expiresLatency: 30 })
if (refreshEarly.expired()) {
  token = await token.refresh() // keeps the old refresh_token if the server sends none
  await db.save(token.toHash())
}

const info = await client.introspectToken(token.token, 'access_token')
console.log(info.parsed)
await token.revoke() // access token; { token_type_hint: 'refresh_token' } for the refresh token
await client.revokeToken('some-refresh-token', 'refresh_token')
