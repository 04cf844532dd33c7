/* eslint-disable no-console -- examples print what they get */
// Pushed authorization requests (RFC 9126): the authorization parameters go server to server.
import { Client, pkce } from '@gatehouse/oauth2'

// Discovery wires pushed_authorization_request_endpoint, and requirePar when the server has
// require_pushed_authorization_requests: authorizeUrl() then throws par_required.
const client = await Client.discover('https://auth.example.com', 'web-app', 'web-secret', {
  redirect_uri: 'https://app.example.com/callback',
  requirePkce: true,
  requirePar: true, // also refuse plain authorization URLs when the server does not require PAR
})

const { code_verifier, code_challenge, code_challenge_method } = pkce()
const state = crypto.randomUUID()
// POSTed with client authentication (and a DPoP proof with the dpop option); the answer is a
// short-lived request_uri. Redirect to the URL at once.
const url = await client.authCode.pushAuthorizationRequest({
  scope: 'openid profile',
  state,
  code_challenge,
  code_challenge_method,
})
console.log('redirect to', url) // https://auth.example.com/authorize?client_id=web-app&request_uri=urn%3A…

// The callback is the usual one.
const token = await client.authCode.getToken('code-from-callback', { code_verifier })
console.log(token.expiresAt)
