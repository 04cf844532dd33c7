import { once } from 'node:events'
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { argError } from '../test/support/expect.js'
import { Client } from './client.js'
import type { ClientOptions } from './client-options.js'
import { DEFAULT_MAX_RESPONSE_BYTES } from './connection.js'

/** Responses that closed before their body was all sent: the client stopped reading. */
let cutOff = 0

function endless(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' })
  const chunk = Buffer.alloc(64 * 1024, 0x20)
  const pump = (): void => {
    while (!res.destroyed && res.write(chunk));
    if (!res.destroyed) res.once('drain', pump)
  }
  res.on('close', () => {
    if (!res.writableFinished) cutOff++
  })
  pump()
}

let server: Server
let site = ''

beforeAll(async () => {
  // A real HTTP server: bodies of a given size (with or without Content-Length), an oversized
  // declared length, and an endless body.
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const size = Number(url.searchParams.get('size') ?? '0')
    switch (url.pathname) {
      case '/sized':
      case '/oauth/token': {
        const body = `{"access_token":"${'a'.repeat(Math.max(0, size - 19))}"}`
        const headers: Record<string, string> = { 'content-type': 'application/json' }
        if (url.searchParams.get('chunked') === null) {
          headers['content-length'] = String(Buffer.byteLength(body))
        }
        res.writeHead(200, headers)
        res.end(body)
        return
      }
      case '/declared':
        // Declares 2 MiB and then sends a little: refused from the header alone.
        res.writeHead(200, { 'content-length': String(2 * 1024 * 1024) })
        res.write('{')
        res.on('close', () => {
          if (!res.writableFinished) cutOff++
        })
        return
      default:
        endless(res)
    }
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  site = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})

const transports: { name: string; options: Partial<ClientOptions> }[] = [
  { name: 'undici', options: {} },
  { name: 'fetch', options: { fetch } },
]

describe.each(transports)('connectionOpts.maxResponseBytes over $name', ({ options }) => {
  const client = (maxResponseBytes?: number, extra: Partial<ClientOptions> = {}): Client =>
    new Client('id', 'secret', {
      site,
      ...options,
      ...extra,
      connectionOpts: maxResponseBytes === undefined ? {} : { maxResponseBytes },
    } as ClientOptions & { raiseErrors?: true })

  it('reads a body of exactly the limit, with or without Content-Length', async () => {
    const c = client(1000)
    try {
      expect((await c.request('get', '/sized?size=1000')).body).toHaveLength(1000)
      expect((await c.request('get', '/sized?size=1000&chunked')).body).toHaveLength(1000)
    } finally {
      await c.close()
    }
  })

  it('refuses one byte more, declared or streamed, with response_too_large', async () => {
    const c = client(1000)
    try {
      for (const path of ['/sized?size=1001', '/sized?size=1001&chunked']) {
        await expect(c.request('get', path)).rejects.toMatchObject({
          name: 'OAuth2Error',
          code: 'response_too_large',
          description:
            'the response body is larger than 1000 bytes (connectionOpts.maxResponseBytes)',
        })
      }
    } finally {
      await c.close()
    }
  })

  it('refuses a larger Content-Length before reading, and cuts an endless body off', async () => {
    const c = client()
    const before = cutOff
    try {
      await expect(c.request('get', '/declared')).rejects.toMatchObject({
        code: 'response_too_large',
      })
      await expect(c.request('get', '/endless')).rejects.toMatchObject({
        code: 'response_too_large',
        description: `the response body is larger than ${String(DEFAULT_MAX_RESPONSE_BYTES)} bytes (connectionOpts.maxResponseBytes)`,
      })
      // Both connections were closed by the client, not read to their end.
      await expect.poll(() => cutOff - before).toBe(2)
    } finally {
      await c.close()
    }
  })

  it('fails a token request with an oversized body whatever raiseErrors says', async () => {
    for (const raiseErrors of [true, false]) {
      const c = client(1000, { raiseErrors, tokenUrl: '/oauth/token?size=1001&chunked' })
      try {
        await expect(c.clientCredentials.getToken()).rejects.toMatchObject({
          code: 'response_too_large',
        })
      } finally {
        await c.close()
      }
    }
  })
})

describe('connectionOpts.maxResponseBytes', () => {
  it('defaults to 1 MiB', async () => {
    const c = new Client('id', 'secret', { site })
    try {
      const size = DEFAULT_MAX_RESPONSE_BYTES
      expect((await c.request('get', `/sized?size=${String(size)}`)).body).toHaveLength(size)
      await expect(
        c.request('get', `/sized?size=${String(size + 1)}&chunked`),
      ).rejects.toMatchObject({ code: 'response_too_large' })
    } finally {
      await c.close()
    }
  })

  it('checks a fetch without a body stream after reading its text', async () => {
    const c = new Client('id', 'secret', {
      site,
      connectionOpts: { maxResponseBytes: 10 },
      fetch: () =>
        Promise.resolve({
          status: 200,
          headers: new Headers({ 'content-type': 'text/plain' }),
          text: () => Promise.resolve('é'.repeat(6)),
        }),
    })
    await expect(c.request('get', '/x')).rejects.toMatchObject({ code: 'response_too_large' })
  })

  it('takes a positive integer or Infinity', async () => {
    for (const bad of [0, -1, 1.5, Number.NaN, '100']) {
      expect(
        () =>
          new Client('id', 'secret', {
            site,
            connectionOpts: { maxResponseBytes: bad as number },
          }),
      ).toThrow(argError('ERR_INVALID_ARG_TYPE', '"options.connectionOpts.maxResponseBytes"'))
    }
    const c = new Client('id', 'secret', { site, connectionOpts: { maxResponseBytes: Infinity } })
    try {
      expect((await c.request('get', '/sized?size=2000000&chunked')).body).toHaveLength(2000000)
    } finally {
      await c.close()
    }
  })
})
