import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { argError } from '../test/support/expect.js'
import { FakeServer } from '../test/support/fake-server.js'
import { Client } from './client.js'
import { ConnectionBuilder, transportError } from './connection.js'
import { ConnectionError, TimeoutError } from './error.js'

describe('ConnectionBuilder', () => {
  it('rejects bad encodings, middleware and adapters', () => {
    const builder = new ConnectionBuilder()
    expect(() => builder.request('xml' as never)).toThrow(
      argError('ERR_INVALID_ARG_VALUE', '"encoding"'),
    )
    expect(() => builder.use('x' as never)).toThrow(
      argError('ERR_INVALID_ARG_TYPE', '"middleware"'),
    )
    expect(() => builder.adapter(5 as never)).toThrow(argError('ERR_INVALID_ARG_TYPE', '"fetch"'))
  })
})

describe('transportError', () => {
  it('maps fetch and undici failures', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      code: 'ECONNREFUSED',
    })
    const viaFetch = transportError(new TypeError('fetch failed', { cause: refused }))
    expect(viaFetch).toBeInstanceOf(ConnectionError)
    expect(viaFetch.message).toBe('connect ECONNREFUSED 127.0.0.1:1')
    const headers = Object.assign(new Error('Headers Timeout Error'), {
      code: 'UND_ERR_HEADERS_TIMEOUT',
    })
    expect(transportError(headers)).toBeInstanceOf(TimeoutError)
    expect(transportError(new DOMException('aborted', 'TimeoutError'))).toBeInstanceOf(TimeoutError)
    expect(transportError('weird')).toBeInstanceOf(ConnectionError)
  })
})

describe('transports', () => {
  let server: FakeServer
  let proxy: Server
  let proxied: string[]

  beforeEach(async () => {
    server = await FakeServer.start()
    proxied = []
    // A minimal HTTP CONNECT proxy that records the tunnels it opens.
    proxy = createServer((_req, res) => res.writeHead(405).end())
    proxy.on('connect', (req, socket) => {
      proxied.push(req.url ?? '')
      const [host = '', port = ''] = (req.url ?? '').split(':')
      const upstream = connect(Number(port), host, () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n')
        upstream.pipe(socket)
        socket.pipe(upstream)
      })
      upstream.on('error', () => socket.destroy())
      socket.on('error', () => upstream.destroy())
    })
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  })

  afterEach(async () => {
    proxy.closeAllConnections()
    await new Promise<void>((resolve) => {
      proxy.close(() => {
        resolve()
      })
    })
    await server.close()
    server.assertDone()
  })

  it('sends through connectionOpts.proxy', async () => {
    server.on('GET', '/via-proxy', { body: { ok: 1 } })
    const { port } = proxy.address() as AddressInfo
    const client = new Client('id', 's', {
      site: server.url,
      connectionOpts: { proxy: `http://127.0.0.1:${String(port)}` },
    })
    try {
      expect((await client.request('get', '/via-proxy')).status).toBe(200)
      expect(proxied).toEqual([server.url.replace('http://', '')])
    } finally {
      await client.close()
    }
  })

  it('uses the builder adapter instead of undici', async () => {
    server.on('POST', '/oauth/token', { body: { access_token: 'a' } })
    const seen: string[] = []
    const client = new Client('id', 's', { site: server.url }, (connection) => {
      connection.adapter(async (url, init) => {
        seen.push(`${init.method} ${url} ${init.redirect}`)
        return fetch(url, init)
      })
    })
    expect((await client.clientCredentials.getToken()).token).toBe('a')
    expect(seen).toEqual([`POST ${server.url}/oauth/token manual`])
  })

  it('returns redirects to the client instead of following them inside fetch', async () => {
    server.on('GET', '/a', { status: 302, headers: { location: '/b' } })
    server.on('GET', '/b', { body: 'b', headers: { 'content-type': 'text/plain' } })
    const client = new Client('id', 's', { site: server.url, fetch })
    expect((await client.request('get', '/a')).body).toBe('b')
    expect(server.requests.map((r) => r.path)).toEqual(['/a', '/b'])
  })
})
