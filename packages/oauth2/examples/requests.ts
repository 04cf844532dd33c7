/* eslint-disable no-console -- examples print what they get */
// Resource requests: token modes, errors, parsing options, the generic getToken and request.
import {
  AccessToken,
  Client,
  ConnectionError,
  OAuth2Error,
  Response,
  TimeoutError,
} from '@gatehouse/oauth2'

const client = new Client('id', 'secret', { site: 'https://api.example.com/v1/' })

// Token modes: header (default), query, body, per verb with a function or a map.
const header = new AccessToken(client, 'token-value')
const query = new AccessToken(client, 'token-value', { mode: 'query', paramName: 'oauth_token' })
const perVerb = new AccessToken(client, 'token-value', { mode: { get: 'query', post: 'body' } })
const custom = new AccessToken(client, 'token-value', {
  mode: (verb) => (verb === 'delete' ? 'header' : 'query'),
})
await header.post('items', { body: { name: 'n' } }) // form body; JSON with a Content-Type header
await query.get('items', { params: { page: '2' } })
await perVerb.patch('items/1', { body: '{"a":1}', headers: { 'Content-Type': 'application/json' } })
await custom.delete('items/1')

// Errors: OAuth2Error for 4xx/5xx (code/description from the body), transport errors apart.
try {
  await header.get('private')
} catch (error) {
  if (error instanceof OAuth2Error)
    console.log(error.code, error.description, error.response?.status)
  else if (error instanceof TimeoutError || error instanceof ConnectionError)
    console.log('transport', error.message)
  else throw error
}
const lenient = await header.get('maybe-missing', { raiseErrors: false })
if (lenient.error !== undefined) console.log('failed with', lenient.status)

// Parsing: snake_case SnakyHash by default, provider keys with snaky: false, custom parsers.
const raw = await client.request('get', 'profile', { snaky: false })
console.log(raw.parsed, raw.contentType, raw.headers['x-ratelimit-remaining'])
Response.registerParser('csv', ['text/csv'], (body) =>
  body.split('\n').map((line) => line.split(',')),
)
const csv = await client.request('get', 'report.csv', { parse: 'csv' })
console.log(csv.parsed)

// Any grant through getToken, e.g. token exchange (RFC 8693); reserved keys never go on the wire.
const exchanged = await client.getToken(
  {
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
    subject_token: 'incoming-token',
    subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
    headers: { 'X-Tenant': 't1' },
    tokenName: 'access_token',
  },
  { mode: 'header', expiresLatency: 10 },
)
console.log(exchanged.params.issued_token_type)
