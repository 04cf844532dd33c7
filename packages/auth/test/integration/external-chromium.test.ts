import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { systemClock } from '@gatehouse/auth'
import { getFreePort } from '@gatehouse/testing'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'
import { FakeProvider } from '../support/fake-provider.js'
import { startOidcProvider, type TestOidcProvider } from '../support/oidc-provider.js'
import { DESCRIPTIONS } from '../support/provider-descriptions.js'

/** The fake of `name` from the provider descriptions. */
function startFake(name: string, email: string): Promise<FakeProvider> {
  const description = DESCRIPTIONS.find((d) => d.name === name)
  if (description === undefined) throw new Error(`no ${name} description`)
  return FakeProvider.start(description, {
    id: String(4200 + DESCRIPTIONS.indexOf(description)),
    email,
    emailVerified: true,
    name: 'Dorothy Vaughan',
    avatar: 'https://avatars.example/dv.png',
  })
}

/**
 * Journeys in a real browser: Debian's Chromium, driven by Playwright. The binding cookie is
 * `__Host-gatehouse-oauth` (`Secure`) although the servers speak plain HTTP on loopback:
 * Chromium keeps `Secure` cookies from `127.0.0.1` and `localhost`.
 */
describe('sign-in and linking in Chromium', () => {
  let oidc: TestOidcProvider
  let apple: FakeProvider
  let github: FakeProvider
  let server: TestServer
  let browser: Browser
  let site: Server
  let SITE = ''
  let port = 0

  beforeAll(async () => {
    // The site the user lands on: a page saying so.
    site = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Signed in</h1>')
    })
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve))
    SITE = `http://127.0.0.1:${String((site.address() as AddressInfo).port)}`
    port = await getFreePort()
    const redirectUri = `http://127.0.0.1:${String(port)}/callback`
    oidc = await startOidcProvider(redirectUri, {
      sub: 'chromium-1',
      email: 'chromium@example.com',
      emailVerified: true,
      name: 'Katherine Johnson',
    })
    apple = await startFake('apple', 'apple-chromium@example.com')
    github = await startFake('github', 'github-chromium@example.com')
    server = await startTestServer(
      'external_chromium',
      {
        AUTHSVC_SITE_URL: SITE,
        AUTHSVC_API_EXTERNAL_URL: `http://127.0.0.1:${String(port)}`,
        AUTHSVC_SECURITY_MANUAL_LINKING_ENABLED: 'true',
        AUTHSVC_EXTERNAL_KEYCLOAK_ENABLED: 'true',
        AUTHSVC_EXTERNAL_KEYCLOAK_CLIENT_ID: oidc.clients.keycloak.id,
        AUTHSVC_EXTERNAL_KEYCLOAK_SECRET: oidc.clients.keycloak.secret,
        AUTHSVC_EXTERNAL_KEYCLOAK_REDIRECT_URI: redirectUri,
        AUTHSVC_EXTERNAL_KEYCLOAK_URL: oidc.issuer,
        ...github.env(redirectUri),
        // Apple posts its answer from its own site (127.0.0.1) to this server as `localhost`:
        // a cross-site POST.
        ...apple.env(`http://localhost:${String(port)}/callback`),
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
    await apple.stop()
    await github.stop()
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
    // Cookies are per host, not per port: oidc-provider's are there too.
    const cookies = await page.context().cookies(server.url)
    expect(cookies.filter((c) => c.name.includes('gatehouse'))).toEqual([
      expect.objectContaining({
        name: '__Host-gatehouse-oauth',
        path: '/',
        secure: true,
        httpOnly: true,
        sameSite: 'Lax',
      }),
    ])
    await page.close()
  })

  it("completes Apple's cross-site form_post: the Lax cookie comes with the server's own re-post", async () => {
    const page = await browser.newPage()
    const callbacks: string[] = []
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/callback') {
        const resubmitted = new URLSearchParams(request.postData() ?? '').has(
          'gatehouse_resubmitted',
        )
        callbacks.push(`${request.method()}${resubmitted ? ' resubmitted' : ''}`)
      }
    })
    await page.goto(
      `http://localhost:${String(port)}/authorize?provider=apple&redirect_to=${encodeURIComponent(`${SITE}/apple`)}`,
    )
    await page.waitForURL(`${SITE}/apple#*`)
    expect(callbacks).toEqual(['POST', 'POST resubmitted'])
    const fragment = new URLSearchParams(new URL(page.url()).hash.slice(1))
    const res = await server.request('GET', '/user', { token: fragment.get('access_token') ?? '' })
    expect(res.json()).toMatchObject({
      email: 'apple-chromium@example.com',
      user_metadata: { full_name: 'Dorothy Vaughan' },
    })
    await page.close()
  })

  it("links GitHub from the site's page as auth-js does it: the fetch, then the navigation", async () => {
    const email = 'linker-chromium@example.com'
    await server.request('POST', '/admin/users', {
      token: server.serviceKey,
      body: { email, password: 'password123', email_confirm: true },
    })
    const session = await server.request('POST', '/token?grant_type=password', {
      body: { email, password: 'password123' },
    })
    const token = session.json().access_token
    const page = await browser.newPage()
    await page.goto(`${SITE}/settings`)
    // auth-js's linkIdentity: GET /user/identities/authorize with the session, then
    // window.location.assign(url).
    await page.evaluate(
      async ({ api, bearer, back }) => {
        const res = await fetch(
          `${api}/user/identities/authorize?provider=github&redirect_to=${encodeURIComponent(back)}&skip_http_redirect=true`,
          { headers: { authorization: `Bearer ${bearer}` } },
        )
        const { url } = (await res.json()) as { url: string }
        ;(globalThis as unknown as { location: { assign(to: string): void } }).location.assign(url)
      },
      { api: server.url, bearer: token, back: `${SITE}/linked` },
    )
    await page.waitForURL(`${SITE}/linked#*`)
    const fragment = new URLSearchParams(new URL(page.url()).hash.slice(1))
    expect(fragment.get('error_description')).toBeNull()
    const user = await server.request('GET', '/user', {
      token: fragment.get('access_token') ?? '',
    })
    expect(user.json().email).toBe(email)
    expect(
      user
        .json()
        .identities.map((i) => i.provider)
        .sort(),
    ).toEqual(['email', 'github'])
    await page.close()
  })
})
