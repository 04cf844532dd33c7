/* eslint-disable no-console -- examples print what they get */
// Client authentication with private_key_jwt (RFC 7523 §2.2): the library builds the assertion
// (iss = sub = client_id, aud = token endpoint, jti, 60-second exp) for every token request.
import { Client } from '@gatehouse/oauth2'

const client = new Client('client-id', undefined, {
  site: 'https://auth.example.com',
  authScheme: 'private_key_jwt',
  privateKey: {
    key: { kty: 'EC', crv: 'P-256', x: '…', y: '…', d: '…' }, // a private JWK, PEM or KeyObject
    algorithm: 'ES256',
    kid: 'client-key-1',
  },
})
const token = await client.clientCredentials.getToken({ scope: 'api' })
console.log(token.expiresIn)
