import type { ServerResponse } from 'node:http'
import { FakeClock, startHttpServer, type TestHttpServer } from '@gatehouse/testing'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { DEFAULT_TEMPLATES } from './default-templates.js'
import type { MailKind } from './mailer.js'
import { TemplateSource, type TemplateSourceOptions } from './template-source.js'

/** What the template server answers per path; counts requests. */
type Route = (res: ServerResponse) => void
const routes = new Map<string, Route>()
const hits = new Map<string, number>()
let server: TestHttpServer
let base: string

beforeAll(async () => {
  server = await startHttpServer((req, res) => {
    const path = req.url ?? ''
    hits.set(path, (hits.get(path) ?? 0) + 1)
    const route = routes.get(path)
    if (route) route(res)
    else res.writeHead(404).end('not found')
  })
  base = server.url
})
afterAll(async () => {
  await server.close()
})
beforeEach(() => {
  routes.clear()
  hits.clear()
})

const noUrls = Object.fromEntries(
  Object.keys(DEFAULT_TEMPLATES).map((kind) => [kind, '']),
) as Record<MailKind, string>

function source(
  urls: Partial<Record<MailKind, string>>,
  options: Partial<TemplateSourceOptions> = {},
): { source: TemplateSource; clock: FakeClock; fallbacks: string[] } {
  const clock = new FakeClock()
  const fallbacks: string[] = []
  return {
    clock,
    fallbacks,
    source: new TemplateSource({
      urls: { ...noUrls, ...urls },
      siteUrl: base,
      clock,
      onFallback: (kind, _url, reason) => fallbacks.push(`${kind}: ${reason.message}`),
      ...options,
    }),
  }
}

const html =
  (body: string): Route =>
  (res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end(body)
  }

describe('TemplateSource', () => {
  it('uses the built-in template for a kind without URL, without any request', async () => {
    const { source: s } = source({})
    expect(await s.get('confirmation')).toBe(DEFAULT_TEMPLATES.confirmation)
    expect(hits.size).toBe(0)
  })

  it('fetches a template URL, relative ones against SITE_URL, and caches it for 10 minutes', async () => {
    routes.set('/confirm.html', html('<p>v1 {{ .ConfirmationURL }}</p>'))
    const { source: s, clock } = source({ confirmation: '/confirm.html' })
    expect(await s.get('confirmation')).toBe('<p>v1 {{ .ConfirmationURL }}</p>')
    routes.set('/confirm.html', html('<p>v2</p>'))
    clock.advance(599_999)
    expect(await s.get('confirmation')).toBe('<p>v1 {{ .ConfirmationURL }}</p>')
    expect(hits.get('/confirm.html')).toBe(1)
    clock.advance(1)
    expect(await s.get('confirmation')).toBe('<p>v2</p>')
    expect(hits.get('/confirm.html')).toBe(2)
  })

  it('shares one fetch between concurrent sends', async () => {
    routes.set('/invite.html', html('<p>invite</p>'))
    const { source: s } = source({ invite: `${base}/invite.html` })
    const bodies = await Promise.all([s.get('invite'), s.get('invite'), s.get('invite')])
    expect(bodies).toEqual(['<p>invite</p>', '<p>invite</p>', '<p>invite</p>'])
    expect(hits.get('/invite.html')).toBe(1)
  })

  it('falls back to the built-in template on a 404, and tries again a minute later', async () => {
    const { source: s, clock, fallbacks } = source({ recovery: '/missing.html' })
    expect(await s.get('recovery')).toBe(DEFAULT_TEMPLATES.recovery)
    expect(fallbacks).toEqual(['recovery: template URL answered 404'])
    routes.set('/missing.html', html('<p>now here</p>'))
    clock.advance(59_999)
    expect(await s.get('recovery')).toBe(DEFAULT_TEMPLATES.recovery)
    expect(hits.get('/missing.html')).toBe(1)
    clock.advance(1)
    expect(await s.get('recovery')).toBe('<p>now here</p>')
    expect(hits.get('/missing.html')).toBe(2)
  })

  it('refuses a template over the size cap, announced or streamed', async () => {
    routes.set('/big.html', (res) => {
      res.writeHead(200, { 'content-type': 'text/html', 'content-length': '2048' })
      res.end('x'.repeat(2048))
    })
    routes.set('/chunked.html', (res) => {
      res.writeHead(200, { 'content-type': 'text/html' })
      for (let i = 0; i < 8; i++) res.write('y'.repeat(512))
      res.end()
    })
    const { source: s, fallbacks } = source(
      { magic_link: '/big.html', invite: '/chunked.html' },
      { maxBytes: 1024 },
    )
    expect(await s.get('magic_link')).toBe(DEFAULT_TEMPLATES.magic_link)
    expect(await s.get('invite')).toBe(DEFAULT_TEMPLATES.invite)
    expect(fallbacks).toEqual([
      'magic_link: template is 2048 bytes, over 1024',
      'invite: template is over 1024 bytes',
    ])
  })

  it('gives up on a server that does not answer within the timeout', async () => {
    routes.set('/slow.html', () => {
      // Never answers.
    })
    const { source: s, fallbacks } = source({ email_change: '/slow.html' }, { timeoutMs: 200 })
    expect(await s.get('email_change')).toBe(DEFAULT_TEMPLATES.email_change)
    expect(fallbacks[0]).toMatch(/^email_change: template URL could not be fetched: /)
  })

  it('keeps using the last good copy when a refresh fails', async () => {
    routes.set('/reauth.html', html('<p>{{ .Token }}</p>'))
    const { source: s, clock, fallbacks } = source({ reauthentication: '/reauth.html' })
    expect(await s.get('reauthentication')).toBe('<p>{{ .Token }}</p>')
    routes.delete('/reauth.html')
    clock.advance(600_000)
    expect(await s.get('reauthentication')).toBe('<p>{{ .Token }}</p>')
    expect(fallbacks).toEqual(['reauthentication: template URL answered 404'])
  })

  it('falls back when the URL cannot be parsed or reached', async () => {
    const { source: s, fallbacks } = source({
      invite: 'http://[bad',
      recovery: 'http://127.0.0.1:1/x',
    })
    expect(await s.get('invite')).toBe(DEFAULT_TEMPLATES.invite)
    expect(await s.get('recovery')).toBe(DEFAULT_TEMPLATES.recovery)
    expect(fallbacks).toHaveLength(2)
  })

  /** @see issue 25, item 19: a template that does not parse is refused when it is loaded. */
  it('refuses a template that does not parse, keeping the last good copy or the built-in one', async () => {
    routes.set('/bad.html', html('<p>{{ if .Token }}never closed</p>'))
    const { source: s, clock, fallbacks } = source({ recovery: '/bad.html', invite: '/ok.html' })
    expect(await s.get('recovery')).toBe(DEFAULT_TEMPLATES.recovery)
    expect(fallbacks).toEqual([
      'recovery: template does not parse: line 1, column 4: unexpected end of template: {{ if }} without {{ end }}',
    ])
    routes.set('/ok.html', html('<p>{{ .Token }}</p>'))
    expect(await s.get('invite')).toBe('<p>{{ .Token }}</p>')
    routes.set('/ok.html', html('<p>{{ end }}</p>'))
    clock.advance(600_000)
    expect(await s.get('invite')).toBe('<p>{{ .Token }}</p>')
    expect(fallbacks.at(-1)).toBe(
      'invite: template does not parse: line 1, column 4: unexpected {{ end }}',
    )
  })
})
