/* eslint-disable no-console -- examples print what they get */
// The MCP chain: from a protected resource's URL (an MCP server) to a token bound to it, in one
// call. A command line: open the printed URL, sign in, then paste the URL you were sent back to.
import { createInterface } from 'node:readline/promises'
import { Client, type ClientRegistration } from '@gatehouse/oauth2'

const env = process.env
const registrations = new Map<string, ClientRegistration>() // keep it in a database
const document = env.OAUTH2_CLIENT_METADATA_URL // a client ID metadata document, if you host one
const flow = await Client.forResource(env.MCP_SERVER_URL ?? 'https://mcp.example.com/mcp', {
  redirectUri: env.OAUTH2_REDIRECT_URI ?? 'http://127.0.0.1:8123/callback',
  clientMetadata: { client_name: 'My MCP client' }, // for dynamic registration
  ...(document === undefined ? {} : { clientIdMetadataDocument: document }),
  dpop: true, // sender-constrained: the token is useless without this process's key
  registrations,
})
console.log('client', flow.client.id)
console.log('open', flow.authorizeUrl)

const prompt = createInterface({ input: process.stdin, output: process.stdout })
const callback = await prompt.question('the URL you were sent back to: ')
prompt.close()
const token = await flow.complete(callback) // iss, state, code checked; bound to the resource

// fetch('') is the resource itself; any URL outside it is refused before anything is sent.
const tools = await token.fetch('', {
  method: 'POST',
  headers: { 'Content-Type': 'application/json' },
  body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
})
console.log(tools.status, token.params.token_type)
console.log(tools.parsed)
