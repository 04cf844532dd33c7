/* eslint-disable no-console -- examples print what they get */
// Token exchange (RFC 8693): a gateway trades the caller's token for one to call another service.
import { AccessToken, Client, TOKEN_TYPES } from '@gatehouse/oauth2'

const gateway = await Client.discover('https://auth.example.com', 'gateway', 'gateway-secret')

// Impersonation: the token the caller sent is the subject.
const incoming = 'eyJ…-the-bearer-token-of-the-request'
const forBilling = await gateway.tokenExchange.getToken({
  subjectToken: incoming,
  subjectTokenType: TOKEN_TYPES.access_token,
  audience: 'billing',
  scope: 'invoices:read',
})
console.log(forBilling.params.issued_token_type) // urn:ietf:params:oauth:token-type:access_token
await forBilling.get('https://billing.example.com/invoices')

// Delegation: the gateway acts for the user with its own token as actor. AccessTokens are sent
// with the access_token type; extra parameters and headers go in the second argument.
const own = await gateway.clientCredentials.getToken({ scope: 'delegate' })
const user = new AccessToken(gateway, incoming)
const delegated = await gateway.tokenExchange.getToken(
  {
    subjectToken: user,
    actorToken: own,
    requestedTokenType: TOKEN_TYPES.jwt,
    resource: 'https://ledger.example.com/api',
  },
  { headers: { 'X-Request-Id': 'r-1' } },
)
console.log(delegated.token, delegated.params.token_type) // token_type may be N_A for non-access tokens
