/* eslint-disable no-console -- examples print what they get */
// OpenID Connect sign-in: discovery, authorization code + PKCE + nonce, ID token, UserInfo.
import { Client, pkce } from '@gatehouse/oauth2'

const client = await Client.discover('https://accounts.example.com', 'my-client-id', 'my-secret', {
  redirect_uri: 'https://app.example.com/callback',
  requirePkce: true, // OAuth 2.1: refuse authorization URLs without a S256 challenge
})

// 1. Redirect the browser; keep verifier, state and nonce in the user's session.
const { code_verifier, code_challenge, code_challenge_method } = pkce()
const state = crypto.randomUUID()
const nonce = crypto.randomUUID()
const url = client.authCode.authorizeUrl({
  scope: 'openid email offline_access',
  state,
  nonce,
  code_challenge,
  code_challenge_method,
})
console.log('redirect to', url)

// 2. In the callback: check state, exchange the code, validate the ID token, read UserInfo.
const callback = new URL('https://app.example.com/callback?code=abc&state=xyz')
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
