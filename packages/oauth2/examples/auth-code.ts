/* eslint-disable no-console -- examples print what they get */
// Authorization Code grant without discovery (the gem's classic setup), with PKCE, in a command
// line: open the printed URL, sign in, then paste the URL the browser was sent back to.
import { createInterface } from 'node:readline/promises'
import { Client, pkce } from '@gatehouse/oauth2'

const env = process.env
const client = new Client(
  env.OAUTH2_CLIENT_ID ?? 'client-id',
  env.OAUTH2_CLIENT_SECRET ?? 'client-secret',
  {
    site: env.OAUTH2_SITE ?? 'https://provider.example.com',
    authorizeUrl: env.OAUTH2_AUTHORIZE_URL ?? '/oauth/authorize', // leading "/": from the host root
    tokenUrl: env.OAUTH2_TOKEN_URL ?? '/oauth/token',
    redirect_uri: env.OAUTH2_REDIRECT_URI ?? 'https://app.example.com/oauth2/callback',
  },
)

const { code_verifier, code_challenge, code_challenge_method } = pkce()
const state = crypto.randomUUID()
const url = client.authCode.authorizeUrl({
  scope: 'api',
  state,
  code_challenge,
  code_challenge_method,
})
// => https://provider.example.com/oauth/authorize?client_id=client-id&code_challenge=…&redirect_uri=…&response_type=code&scope=api&state=…
console.log('open', url)

const prompt = createInterface({ input: process.stdin, output: process.stdout })
const callback = new URL(await prompt.question('the URL you were sent back to: '))
prompt.close()
if (callback.searchParams.get('state') !== state) throw new Error('state mismatch')
const token = await client.authCode.getToken(callback.searchParams.get('code') ?? '', {
  code_verifier,
  headers: { 'X-Request-Id': 'abc' }, // extra headers for the token request
})
const response = await token.get(env.OAUTH2_API_URL ?? 'https://api.example.com/resource', {
  params: { query_foo: 'bar' },
})
console.log(response.status, response.parsed)
