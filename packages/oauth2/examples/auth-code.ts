/* eslint-disable no-console -- examples print what they get */
// Authorization Code grant without discovery (the gem's classic setup), with PKCE.
import { Client, pkce } from '@gatehouse/oauth2'

const client = new Client('client-id', 'client-secret', {
  site: 'https://provider.example.com',
  authorizeUrl: '/oauth/authorize', // leading "/": from the host root
  tokenUrl: '/oauth/token',
  redirect_uri: 'https://app.example.com/oauth2/callback',
})

const { code_verifier, code_challenge, code_challenge_method } = pkce()
const url = client.authCode.authorizeUrl({
  scope: 'read write',
  state: 'opaque',
  code_challenge,
  code_challenge_method,
})
// => https://provider.example.com/oauth/authorize?client_id=client-id&code_challenge=…&redirect_uri=…&response_type=code&scope=read%20write&state=opaque
console.log(url)

const token = await client.authCode.getToken('code-from-callback', {
  code_verifier,
  headers: { 'X-Request-Id': 'abc' }, // extra headers for the token request
})
const response = await token.get('/api/resource', { params: { query_foo: 'bar' } })
console.log(response.status, response.parsed)
