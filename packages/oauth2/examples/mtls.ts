/* eslint-disable no-console -- examples print what they get */
// Client authentication with tls_client_auth (RFC 8705): only client_id goes in the body; the
// client certificate authenticates. Uses the default undici transport (Node only).
import { readFileSync } from 'node:fs'
import { Client } from '@gatehouse/oauth2'

const client = new Client('client-id', undefined, {
  site: 'https://mtls.auth.example.com',
  authScheme: 'tls_client_auth',
  connectionOpts: {
    tls: {
      cert: readFileSync('client.crt', 'utf8'),
      key: readFileSync('client.key', 'utf8'),
      ca: readFileSync('ca.crt', 'utf8'),
    },
  },
})
try {
  const token = await client.clientCredentials.getToken()
  console.log(token.token)
} finally {
  await client.close() // releases the client's own connection pool
}
