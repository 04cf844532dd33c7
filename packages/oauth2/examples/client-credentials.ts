/* eslint-disable no-console -- examples print what they get */
// Client Credentials grant (RFC 6749 §4.4) with a resource indicator (RFC 8707).
import { Client } from '@gatehouse/oauth2'

const env = process.env
const api = env.OAUTH2_API_URL ?? 'https://api.example.com'
const client = new Client(
  env.OAUTH2_CLIENT_ID ?? 'service-id',
  env.OAUTH2_CLIENT_SECRET ?? 'service-secret',
  {
    site: env.OAUTH2_SITE ?? 'https://auth.example.com',
    tokenUrl: env.OAUTH2_TOKEN_URL ?? '/oauth/token',
    authScheme: 'request_body', // client_secret_post; the default is 'basic_auth'
    connectionOpts: { timeout: 5_000, headers: { 'User-Agent': 'my-service/1.0' } },
  },
)

const token = await client.clientCredentials.getToken({ scope: 'api', resource: api })
console.log(token.expiresAt, token.params.scope)
const things = await token.get(`${api}/things`)
console.log(things.parsed)
