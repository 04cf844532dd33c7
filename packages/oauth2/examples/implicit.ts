/* eslint-disable no-console -- examples print what they get */
// Implicit grant (OAuth 2.0 only): the token comes back in the redirect's fragment.
import { AccessToken, Client } from '@gatehouse/oauth2'

const client = new Client('spa-client', null, { site: 'https://provider.example.com' })
const url = client.implicit.authorizeUrl({
  redirect_uri: 'https://spa.example.com/cb',
  state: 's1',
})
console.log(url) // …?client_id=spa-client&redirect_uri=…&response_type=token&state=s1

// Back in the browser, `location.hash` holds the token response.
const fragment = '#access_token=2YotnFZFEjr1zCsicMWpAA&token_type=bearer&expires_in=3600&state=s1'
const token = AccessToken.fromKvform(client, fragment)
console.log(token.token, token.expiresIn, token.params.state)
