import type { IncomingMessage, ServerResponse } from 'node:http'
import { startHttpServer, type TestHttpServer } from '@gatehouse/testing'
import { Webhook } from 'standardwebhooks'
import { afterEach, describe, expect, it } from 'vitest'
import { systemClock } from '../clock.js'
import { HookAnswerError } from '../errors.js'
import { cryptoRandom } from '../random.js'
import { callHttpHook, HTTP_HOOK_LIMITS, type HttpHookLimits } from './http.js'

const KEY = 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'
const OLD_KEY = 'A'.repeat(44)

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void

let server: TestHttpServer | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** A hook endpoint answering with `handler`; returns its URL and the requests it got. */
async function endpoint(handler: Handler) {
  const seen: { headers: IncomingMessage['headers']; body: string }[] = []
  server = await startHttpServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      seen.push({ headers: req.headers, body })
      handler(req, body, res)
    })
  })
  return { url: `${server.url}/hook`, seen }
}

function call(url: string, limits: Partial<HttpHookLimits> = {}) {
  return callHttpHook(url, [OLD_KEY, KEY], JSON.stringify({ user_id: 'u' }), {
    fetch,
    clock: systemClock,
    random: cryptoRandom,
    limits: { ...HTTP_HOOK_LIMITS, backoffMs: 10, ...limits },
  })
}

const json = (res: ServerResponse, status: number, body: unknown, headers = {}) =>
  res
    .writeHead(status, { 'content-type': 'application/json', ...headers })
    .end(JSON.stringify(body))

describe('callHttpHook', () => {
  it('signs per Standard Webhooks with every secret and returns the JSON answer', async () => {
    const { url, seen } = await endpoint((_req, _body, res) =>
      json(res, 200, { decision: 'continue' }),
    )
    await expect(call(url)).resolves.toEqual({ decision: 'continue' })
    const [request] = seen
    if (!request) throw new Error('no request')
    const headers = request.headers as Record<string, string>
    expect(new Webhook(KEY).verify(request.body, headers)).toEqual({ user_id: 'u' })
    expect(new Webhook(OLD_KEY).verify(request.body, headers)).toEqual({ user_id: 'u' })
    expect(headers['webhook-signature']?.split(', ')).toHaveLength(2)
    expect(() => new Webhook('B'.repeat(44)).verify(request.body, headers)).toThrow()
  })

  it('treats 204 as no output', async () => {
    const { url } = await endpoint((_req, _body, res) => res.writeHead(204).end())
    await expect(call(url)).resolves.toBeUndefined()
  })

  it("turns an error object into the hook's status and message", async () => {
    const { url } = await endpoint((_req, _body, res) =>
      json(res, 200, { error: { http_code: 403, message: 'Not on my watch' } }),
    )
    const error = await call(url).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(HookAnswerError)
    expect(error).toMatchObject({ status: 403, code: 'unknown', message: 'Not on my watch' })
  })

  it('refuses an answer that is not application/json', async () => {
    const { url } = await endpoint((_req, _body, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'),
    )
    await expect(call(url)).rejects.toMatchObject({
      code: 'hook_payload_invalid_content_type',
      message: 'Invalid JSON response. Received content-type: text/html',
    })
  })

  it('refuses an answer over the size limit', async () => {
    const { url } = await endpoint((_req, _body, res) => json(res, 200, { pad: 'x'.repeat(300) }))
    await expect(call(url, { maxResponseBytes: 100 })).rejects.toMatchObject({
      code: 'hook_payload_over_size_limit',
      message: 'Payload size exceeded size limit of 100 bytes',
    })
  })

  it('tries again after a 429 with Retry-After, at most three times', async () => {
    let calls = 0
    const { url, seen } = await endpoint((_req, _body, res) => {
      calls++
      if (calls < 3) json(res, 429, {}, { 'retry-after': '1' })
      else json(res, 200, { ok: true })
    })
    await expect(call(url)).resolves.toEqual({ ok: true })
    expect(seen).toHaveLength(3)
    expect(new Set(seen.map((r) => r.headers['webhook-id'])).size).toBe(3)
  })

  it('gives up after three 503s, and at once without Retry-After', async () => {
    const busy = await endpoint((_req, _body, res) => json(res, 503, {}, { 'retry-after': '1' }))
    await expect(call(busy.url)).rejects.toMatchObject({
      code: 'unexpected_failure',
      message: 'Service currently unavailable due to hook',
    })
    expect(busy.seen).toHaveLength(3)
    await server?.close()
    const down = await endpoint((_req, _body, res) => json(res, 503, {}))
    await expect(call(down.url)).rejects.toMatchObject({ code: 'unexpected_failure' })
    expect(down.seen).toHaveLength(1)
  })

  it('answers hook_timeout when the endpoint does not answer in time', async () => {
    const { url } = await endpoint(() => undefined)
    const started = Date.now()
    await expect(call(url, { timeoutMs: 200 })).rejects.toMatchObject({
      code: 'hook_timeout',
      message: 'Failed to reach hook within maximum time of 0.200000 seconds',
    })
    expect(Date.now() - started).toBeLessThan(2000)
  })

  it('answers hook_timeout_after_retry when nothing listens', async () => {
    const { url } = await endpoint(() => undefined)
    await server?.close()
    server = undefined
    await expect(call(url)).rejects.toMatchObject({
      code: 'hook_timeout_after_retry',
      message: 'Failed to reach hook after maximum retries',
    })
  })

  it('maps other statuses to upstream messages and never follows redirects', async () => {
    const statuses = [400, 401, 302, 500]
    let i = 0
    const { url } = await endpoint((_req, _body, res) =>
      res.writeHead(statuses[i++] ?? 500, { location: 'https://example.com/' }).end(),
    )
    const messages = []
    for (const _ of statuses)
      messages.push(await call(url).catch((e: unknown) => (e as Error).message))
    expect(messages).toEqual([
      'Invalid payload sent to hook',
      'Hook requires authorization token',
      'Unexpected status code returned from hook: 302',
      'Unexpected status code returned from hook: 500',
    ])
  })
})
