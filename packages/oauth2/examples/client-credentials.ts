/* eslint-disable no-console -- examples print what they get */
// Client Credentials grant (RFC 6749 §4.4) with a resource indicator (RFC 8707).
import { Client } from '@gatehouse/oauth2'

const client = new Client('service-id', 'service-secret', {
  site: 'https://auth.example.com',
  authScheme: 'request_body', // client_secret_post; the default is 'basic_auth'
  connectionOpts: { timeout: 5_000, headers: { 'User-Agent': 'my-service/1.0' } },
})

const token = await client.clientCredentials.getToken({
  scope: 'api',
  resource: 'https://api.example.com',
})
console.log(token.expiresAt, token.params.scope)
const things = await token.get('https://api.example.com/things')
console.log(things.parsed)
