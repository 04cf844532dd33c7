import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  Client,
  discoverResource,
  OAuth2Error,
  type ClientRegistration,
  type HttpRequest,
} from '@gatehouse/oauth2'
import { authorize, REDIRECT_URI, type TestProvider } from '../support/oidc-provider.js'
import type { ProtectedResource } from '../support/protected-resource.js'
import { startResourceChain } from '../support/resource-chain.js'
import { argError } from '../support/expect.js'

/**
 * Protected resources and the MCP chain (issue 33 item 5): a resource server written here that
 * answers 401 with resource_metadata, and oidc-provider with dynamic registration, client ID
 * metadata documents (through its adapter), PAR, DPoP (nonces required) and resource indicators
 * issuing JWT access tokens for the resource. Consent is given headlessly.
 */
describe('discoverResource and Client.forResource against a resource server and oidc-provider', () => {
  let op: TestProvider
  let rs: ProtectedResource
  let stop: () => Promise<void>
  const registrations: HttpRequest[] = []

  beforeAll(async () => {
    const chain = await startResourceChain((provider) => {
      provider.use(async (ctx, next) => {
        if (ctx.path === '/reg' && ctx.method === 'POST') {
          registrations.push({ method: 'POST', url: ctx.href, headers: {}, body: undefined })
        }
        await next()
      })
    })
    ;({ op, rs } = chain)
    stop = () => chain.stop()
  })

  afterAll(async () => {
    await stop()
  })

  const complete = async (authorizeUrl: string) =>
    `${REDIRECT_URI}?${(await authorize(authorizeUrl)).toString()}`

  it('reads the metadata through the 401 challenge, and at the well-known URL', async () => {
    const metadata = await discoverResource(rs.resource)
    expect(metadata).toMatchObject({
      resource: rs.resource,
      authorization_servers: [op.issuer],
      scopes_supported: ['mcp:tools'],
    })
    // challenge '' holds no resource_metadata: the well-known document, path inserted.
    expect((await discoverResource(rs.resource, { challenge: '' })).resource).toBe(rs.resource)
    // A sub-path of the resource is described by the resource's metadata (same origin, prefix).
    expect((await discoverResource(`${rs.resource}/tools`)).resource).toBe(rs.resource)
  })

  it('refuses metadata that describes another resource', async () => {
    const error = await discoverResource(`${rs.origin}/other`).catch(
      (e: unknown) => e as OAuth2Error,
    )
    expect(error).toBeInstanceOf(OAuth2Error)
    expect(error).toMatchObject({ code: 'invalid_resource_metadata' })
    expect((error as OAuth2Error).description).toContain(`describes resource '${rs.resource}'`)
    await expect(discoverResource('http://example.com/mcp')).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"resourceUrl" must be https'),
    )
    await expect(discoverResource(`${rs.resource}#x`)).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', 'must not have a fragment'),
    )
  })

  it('registers once per server, pushes the request with resource and PKCE, and yields a token bound to the resource', async () => {
    const cache = new Map<string, ClientRegistration>()
    const flow = await Client.forResource(rs.resource, {
      redirectUri: REDIRECT_URI,
      registrations: cache,
      clientMetadata: { client_name: 'chain test' },
    })
    expect(cache.get(op.issuer)?.client_id).toBe(flow.client.id)
    expect(registrations).toHaveLength(1)
    expect(flow.client.options.authScheme).toBe('none')
    expect(flow.resource).toBe(rs.resource)
    const url = new URL(flow.authorizeUrl)
    expect([...url.searchParams.keys()].sort()).toEqual(['client_id', 'request_uri'])
    const token = await flow.complete(await complete(flow.authorizeUrl))
    expect(token.resource).toBe(rs.resource)
    expect(decodeJwt(token.token)).toMatchObject({ aud: rs.resource, scope: 'mcp:tools' })
    const before = rs.accepted.length
    const answer = await token.fetch('', { method: 'POST', body: '{"jsonrpc":"2.0","id":1}' })
    expect(answer.parsed).toMatchObject({ ok: true, path: '/mcp', scheme: 'Bearer' })
    expect((await token.fetch('tools/list')).parsed).toMatchObject({ path: '/mcp/tools/list' })
    await expect(token.fetch('/other')).rejects.toThrow(argError('ERR_INVALID_ARG_VALUE', '"url"'))
    expect(rs.accepted.length).toBe(before + 2)
    await expect(token.fetch(`${rs.origin}/other`)).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"url" is outside the resource the token is for'),
    )
    await expect(token.fetch('https://attacker.example/mcp')).rejects.toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"url" is outside the resource'),
    )

    // The second flow reuses the registration.
    const count = registrations.length
    const again = await Client.forResource(rs.resource, {
      redirectUri: REDIRECT_URI,
      registrations: cache,
    })
    expect(again.client.id).toBe(flow.client.id)
    expect(registrations.length).toBe(count)
  })

  it('uses the client ID metadata document where the server takes it, with DPoP, and refreshes with the resource', async () => {
    const sent: HttpRequest[] = []
    const flow = await Client.forResource(
      rs.resource,
      { redirectUri: REDIRECT_URI, clientIdMetadataDocument: rs.clientDocument, dpop: true },
      (connection) => {
        connection.use(async (request, next) => {
          sent.push({ ...request })
          return next(request)
        })
      },
    )
    expect(flow.client.id).toBe(rs.clientDocument)
    const token = await flow.complete(await complete(flow.authorizeUrl))
    expect(token.dpopBound).toBe(true)
    expect(decodeJwt(token.token)).toMatchObject({
      aud: rs.resource,
      client_id: rs.clientDocument,
      cnf: { jkt: await flow.client.dpopJkt() },
    })
    expect((await token.fetch('')).parsed).toMatchObject({ scheme: 'DPoP' })
    // The resource refuses the token (invalid_token): fetch refreshes once, asking for the resource.
    const old = token.token
    rs.revoke(String(decodeJwt(old).jti))
    expect((await token.fetch('')).parsed).toMatchObject({ scheme: 'DPoP' })
    expect(token.token).not.toBe(old)
    const refresh = sent
      .map((request) => new URLSearchParams(typeof request.body === 'string' ? request.body : ''))
      .find((body) => body.get('grant_type') === 'refresh_token')
    expect(refresh?.get('resource')).toBe(rs.resource)
    expect(decodeJwt(token.token).aud).toBe(rs.resource)
  })

  it('checks its options', async () => {
    await expect(Client.forResource(rs.resource, {} as never)).rejects.toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"options.redirectUri" must be a string'),
    )
    await expect(
      Client.forResource(rs.resource, {
        redirectUri: REDIRECT_URI,
        clientIdMetadataDocument: 'https://app.example',
      }),
    ).rejects.toThrow(argError('ERR_INVALID_ARG_VALUE', 'must be an https URL with a path'))
    await expect(
      Client.forResource(rs.resource, { redirectUri: REDIRECT_URI, registrations: {} as never }),
    ).rejects.toThrow(argError('ERR_INVALID_ARG_TYPE', '"options.registrations" must be'))
  })
})
