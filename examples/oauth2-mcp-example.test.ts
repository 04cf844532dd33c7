/**
 * `packages/oauth2/examples/mcp-client.ts`, run as the package README says, against a protected
 * resource and an `oidc-provider` (dynamic registration, client ID metadata documents, PAR, DPoP,
 * resource indicators): once registering the client, once with a client ID metadata document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { authorize, REDIRECT_URI } from '../packages/oauth2/test/support/oidc-provider.js'
import {
  startResourceChain,
  type ResourceChain,
} from '../packages/oauth2/test/support/resource-chain.js'
import { runExample } from './support/run-example.js'

let chain: ResourceChain

beforeAll(async () => {
  chain = await startResourceChain()
})

afterAll(async () => {
  await chain.stop()
})

/** Plays the user at the printed URL; answers the prompt with the callback URL. */
function signIn() {
  let callback: string | undefined
  return async (line: string) => {
    const url = /^open (\S+)$/.exec(line)?.[1]
    if (url !== undefined) {
      callback = `${REDIRECT_URI}?${(await authorize(url)).toString()}`
      return undefined
    }
    return line.startsWith('the URL you were sent back to') ? callback : undefined
  }
}

describe('the MCP client example, run against a local resource and authorization server', () => {
  it.each([
    ['registering itself', {}, /^client [\w-]+$/m],
    ['with a client ID metadata document', { doc: true }, /^client http:\/\/.*\/client\.json$/m],
  ])('mcp-client.ts reaches the resource with a DPoP-bound token, %s', async (_name, how, id) => {
    const before = chain.rs.accepted.length
    const run = await runExample('packages/oauth2/examples/mcp-client.ts', {
      env: {
        MCP_SERVER_URL: chain.rs.resource,
        OAUTH2_REDIRECT_URI: REDIRECT_URI,
        ...('doc' in how ? { OAUTH2_CLIENT_METADATA_URL: chain.rs.clientDocument } : {}),
      },
      answer: signIn(),
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(id)
    expect(run.stdout).toMatch(/ 200 DPoP$/m)
    expect(run.stdout).toContain("scheme: 'DPoP'")
    expect(chain.rs.accepted.length).toBe(before + 1)
  })
})
