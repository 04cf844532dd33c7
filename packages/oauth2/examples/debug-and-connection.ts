/* eslint-disable no-console -- examples print what they get */
// Debug logging (OAUTH_DEBUG=true), global configuration, and the connection builder.
import { Client, configure } from '@gatehouse/oauth2'

configure({
  filteredDebugKeys: ['x-tenant-key'], // added to the built-in list
  filteredLabel: '[REDACTED]',
  silenceExtraTokensWarning: false,
})

// Any value with debug() and warn() taking a string: console, a pino logger, a function with
// those methods, ...
const logger = console
const client = new Client(
  'id',
  'secret',
  { site: 'https://auth.example.com', logger, fetch: globalThis.fetch },
  (connection) => {
    connection.request('json') // object bodies as JSON instead of a form
    connection.use(async (request, next) => {
      request.headers['x-correlation-id'] = crypto.randomUUID()
      const response = await next(request)
      logger.debug(`oauth2 response ${String(response.status)}`)
      return response
    })
  },
)
// With OAUTH_DEBUG=true every request/response is logged through `logger.debug`, with
// Authorization, Proxy-Authorization, cookies, connectionOpts headers, URL userinfo, tokens,
// secrets, passwords, codes, assertions and code_verifier replaced by the filtered label.
console.log(JSON.stringify(client)) // the secret is shown as [REDACTED]
