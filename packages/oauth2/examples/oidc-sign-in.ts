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

// 2. In the callback: check state, exchange the code, validate the ID token, read UserInfo.
const prompt = createInterface({ input: process.stdin, output: process.stdout })
const callback = new URL(await prompt.question('the URL you were sent back to: '))
prompt.close()
if (callback.searchParams.get('state') !== state) throw new Error('state mismatch')
const token = await client.authCode.getToken(callback.searchParams.get('code') ?? '', {
  code_verifier,
})
// The client remembers the nonce it sent with this code_challenge, so idToken() checks it even
// without { nonce }. In another process (the callback on another instance) it cannot know it:
// pass the nonce kept with the state, or idToken() throws; never leave the nonce check out.
const claims = await token.idToken({ nonce, maxAge: 600 })
const profile = await client.userinfo(token, { expectedSubject: claims.sub })
console.log(claims.sub, profile.email)
