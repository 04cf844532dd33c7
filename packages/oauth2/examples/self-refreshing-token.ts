/* eslint-disable no-console -- examples print what they get */
// A token that keeps itself fresh: fetch() refreshes before expiry and once on a 401.
import { AccessToken, Client } from '@gatehouse/oauth2'

const client = await Client.discover('https://auth.example.com', 'web-app', 'web-secret')
declare const db: {
  load(userId: string): Promise<Record<string, unknown>>
  save(userId: string, hash: object): Promise<void>
}

const token = AccessToken.fromHash(client, {
  ...(await db.load('user-1')), // { access_token, refresh_token, expires_at, token_type, ... }
  expiresLatency: 60, // refresh a minute before expiry
  // Awaited before the waiting requests go on: the new refresh token is stored before it is used.
  onRefresh: (fresh: AccessToken) => db.save('user-1', fresh.toHash()),
})

// fetch(url, init): the verb in init.method (GET by default), this library's Response back.
const me = await token.fetch('https://api.example.com/me')
console.log(me.parsed)

// However many requests run at once, one refresh_token grant runs for all of them.
const pages = await Promise.all(
  [1, 2, 3].map((page) =>
    token.fetch('https://api.example.com/items', { params: { page: String(page) } }),
  ),
)
console.log(pages.map((page) => page.status))

// The same on the request helpers, and for DPoP-bound tokens (the refresh carries a proof).
await token.post('https://api.example.com/items', { body: { name: 'n' }, autoRefresh: true })
