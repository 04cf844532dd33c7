import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { systemClock } from '@gatehouse/auth'
import { getFreePort } from '@gatehouse/testing'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js'

/** One journey in a real browser: Debian's Chromium, driven by Playwright. */
describe('sign-in with Keycloak in Chromium', () => {
  let oidc: TestOidcProvider
  let server: TestServer
  let browser: Browser
  let site: Server
  let SITE = ''

  beforeAll(async () => {
    // The site the user lands on: a page saying so.
    site = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Signed in</h1>')
    })
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
    SITE = `http://127.0.0.1:${String((site.address() as AddressInfo).port)}`
    const port = await getFreePort()
    const redirectUri = `http://127.0.0.1:${String(port)}/callback`
    oidc = await startOidcProvider(redirectUri, {
      sub: 'chromium-1',
      email: 'chromium@example.com',
      emailVerified: true,
      name: 'Katherine Johnson',
    })
    server = await startTestServer(
      'external_chromium',
      {
        AUTHSVC_SITE_URL: SITE,
        AUTHSVC_API_EXTERNAL_URL: `http://127.0.0.1:${String(port)}`,
        AUTHSVC_EXTERNAL_KEYCLOAK_ENABLED: 'true',
        AUTHSVC_EXTERNAL_KEYCLOAK_CLIENT_ID: oidc.clients.keycloak.id,
        AUTHSVC_EXTERNAL_KEYCLOAK_SECRET: oidc.clients.keycloak.secret,
        AUTHSVC_EXTERNAL_KEYCLOAK_REDIRECT_URI: redirectUri,
        AUTHSVC_EXTERNAL_KEYCLOAK_URL: oidc.issuer,
      },
      systemClock,
    )
    await server.app.server.listen({ host: '127.0.0.1', port })
    server.url = `http://127.0.0.1:${String(port)}`
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    })
  })

  afterAll(async () => {
    await browser.close()
    await server.close()
    await oidc.stop()
    site.closeAllConnections()
    await new Promise<void>((resolve) => {
      site.close(() => {
        resolve()
      })
    })
  })

  it('follows /authorize → Keycloak login → /callback to the site with a session', async () => {
    const page = await browser.newPage()
    await page.goto(
      `${server.url}/authorize?provider=keycloak&redirect_to=${encodeURIComponent(`${SITE}/done`)}`,
    )
    await page.waitForURL(`${SITE}/done#*`)
    expect(await page.textContent('h1')).toBe('Signed in')
    const fragment = new URLSearchParams(new URL(page.url()).hash.slice(1))
    expect(fragment.get('token_type')).toBe('bearer')
    const res = await server.request('GET', '/user', { token: fragment.get('access_token') ?? '' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({
      email: 'chromium@example.com',
      app_metadata: { provider: 'keycloak', providers: ['keycloak'] },
    })
  })
})
