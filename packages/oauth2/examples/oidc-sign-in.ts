/* eslint-disable no-console -- examples print what they get */
// OpenID Connect sign-in: discovery, authorization code + PKCE + nonce, ID token, UserInfo. A
// command line: open the printed URL, sign in, then paste the URL the browser was sent back to.
import { createInterface } from 'node:readline/promises'
import { Client, pkce } from '@gatehouse/oauth2'

const env = process.env
const client = await Client.discover(
  env.OAUTH2_ISSUER ?? 'https://accounts.example.com',
  env.OAUTH2_CLIENT_ID ?? 'my-client-id',
  env.OAUTH2_CLIENT_SECRET ?? 'my-secret',
  {
    redirect_uri: env.OAUTH2_REDIRECT_URI ?? 'https://app.example.com/callback',
    requirePkce: true, // OAuth 2.1: refuse authorization URLs without a S256 challenge
  },
)

// 1. Redirect the browser; keep verifier, state and nonce in the user's session.
const { code_verifier, code_challenge, code_challenge_method } = pkce()
const state = crypto.randomUUID()
const nonce = crypto.randomUUID()
const url = client.authCode.authorizeUrl({
  scope: 'openid email offline_access',
  prompt: 'consent', // offline_access (a refresh token) needs it
  max_age: '600',
  state,
  nonce,
  code_challenge,
  code_challenge_method,
})
console.log('open', url)

// 2. In the callback: one call checks iss (RFC 9207), state (constant time), an error response and
// the code, exchanges the code with the verifier, and validates the ID token with the nonce.
const prompt = createInterface({ input: process.stdin, output: process.stdout })
const callback = await prompt.question('the URL you were sent back to: ')
prompt.close()
// With response_mode=form_post, pass the POSTed form instead: new URLSearchParams(body).
const token = await client.authCode.getTokenFromCallback(callback, {
  state,
  nonce,
  maxAge: 600,
  codeVerifier: code_verifier,
})
const claims = await token.idToken({ nonce })
const profile = await client.userinfo(token, { expectedSubject: claims.sub })
console.log(claims.sub, profile.email)
