/* eslint-disable no-console -- examples print what they get */
// JWT Bearer grant (RFC 7523 §2.1): the client signs a claim set and exchanges it for a token.
import { Client } from '@gatehouse/oauth2'

const client = new Client('client-id', 'client-secret', { site: 'https://auth.example.com' })
const now = Math.floor(Date.now() / 1000)
const token = await client.assertion.getToken(
  {
    iss: 'client-id',
    aud: 'https://auth.example.com/oauth/token',
    sub: 'user@example.com',
    exp: now + 300,
  },
  // key: PEM string, JWK, KeyObject, CryptoKey, or secret bytes/string for HS*
  { algorithm: 'RS256', key: process.env.ASSERTION_KEY_PEM ?? '', kid: 'key-1' },
  { scope: 'calendar' },
)
console.log(token.token)
