import { launchChromium, startHttpServer, type TestHttpServer } from '@gatehouse/testing'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RecordingMailer, startTestServer, type TestServer } from '../helpers.js'

/**
 * Scanner-proof links (issue 28 item 6, beyond upstream): with `MAILER_LINK_CONFIRMATION_PAGE`,
 * opening a mailed link (a mail scanner's `GET`, a preview's `HEAD`) consumes nothing; the page's
 * button does, and redirects exactly as the link did. Without it, `HEAD` consumes nothing either.
 */

const SITE = 'http://localhost:3000'

/** The path and query of a mailed link. */
const pathOf = (url: string) => {
  const u = new URL(url)
  return `${u.pathname}${u.search}`
}

/** The fragment of a redirect as an object. */
const fragmentOf = (location: string) =>
  Object.fromEntries(new URLSearchParams(new URL(location).hash.slice(1)))

/** A server with the setting as given, a recording mailer, and what the tests ask of them. */
function linkServer(label: string, env: Record<string, string>) {
  const mailer = new RecordingMailer()
  const fixture = {
    mailer,
    server: undefined as unknown as TestServer,
    /** Signs `email` up and returns its confirmation mail. */
    async signUp(email: string) {
      const res = await fixture.server.request('POST', '/signup', {
        body: { email, password: 'password123' },
      })
      expect(res.statusCode).toBe(200)
      return mailer.waitFor(email, 'confirmation')
    },
    /** Whether `email`'s confirmation link is still unused. */
    async pending(email: string): Promise<boolean> {
      const { db } = fixture.server.app
      const { rows } = await db.query<{ confirmation_token: string }>(
        `SELECT confirmation_token FROM ${db.t.users} WHERE email = $1`,
        [email],
      )
      return rows[0]?.confirmation_token !== ''
    },
  }
  beforeAll(async () => {
    fixture.server = await startTestServer(
      label,
      { AUTHSVC_MAILER_AUTOCONFIRM: 'false', ...env },
      undefined,
      { deps: { mailer } },
    )
  })
  afterAll(async () => {
    await fixture.server.close()
  })
  return fixture
}

describe('MAILER_LINK_CONFIRMATION_PAGE=true', () => {
  const fx = linkServer('link_confirmation_page', { AUTHSVC_MAILER_LINK_CONFIRMATION_PAGE: 'true' })

  it('a HEAD request never consumes the link', async () => {
    const email = 'head-page@example.com'
    const mail = await fx.signUp(email)
    const head = await fx.server.app.server.inject({
      method: 'HEAD',
      url: pathOf(mail.confirmationUrl),
    })
    expect(head.statusCode).toBe(200)
    expect(await fx.pending(email)).toBe(true)
  })

  it('GET answers the page (twice, consuming nothing); its button follows the link once', async () => {
    const email = 'scanned@example.com'
    const mail = await fx.signUp(email)
    for (let i = 0; i < 2; i++) {
      const res = await fx.server.request('GET', pathOf(mail.confirmationUrl))
      expect(res.statusCode).toBe(200)
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(res.headers['cache-control']).toBe('no-store')
      expect(res.headers['referrer-policy']).toBe('no-referrer')
      expect(res.headers['content-security-policy']).toBe(
        "default-src 'none'; frame-ancestors 'none'",
      )
      expect(res.body).toContain('<input type="hidden" name="confirm" value="link">')
      expect(res.body).not.toContain('<script')
    }
    expect(await fx.pending(email)).toBe(true)
    const click = () =>
      fx.server.app.server.inject({
        method: 'POST',
        url: pathOf(mail.confirmationUrl),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'confirm=link',
      })
    const followed = await click()
    expect(followed.statusCode).toBe(303)
    const location = followed.headers.location as string
    expect(location.startsWith(`${SITE}/#`)).toBe(true)
    expect(fragmentOf(location)).toMatchObject({ token_type: 'bearer', type: 'signup' })
    expect(await fx.pending(email)).toBe(false)
    expect(fragmentOf((await click()).headers.location as string)).toMatchObject({
      error_code: 'otp_expired',
    })
  })

  it('the code in the same mail stays valid while the page is opened', async () => {
    const email = 'typed@example.com'
    const mail = await fx.signUp(email)
    expect((await fx.server.request('GET', pathOf(mail.confirmationUrl))).statusCode).toBe(200)
    const typed = await fx.server.request('POST', '/verify', {
      body: { type: 'signup', email, token: mail.token },
    })
    expect(typed.statusCode).toBe(200)
    expect(typed.json()).toMatchObject({ user: { email } })
  })

  it('carries hostile query values into the form encoded, never as markup', async () => {
    const hostile = encodeURIComponent('"><script>alert(1)</script>')
    const res = await fx.server.request(
      'GET',
      `/verify?type=signup&token=abc&redirect_to=${hostile}`,
    )
    expect(res.statusCode).toBe(200)
    expect(res.body).not.toContain('<script')
    expect(res.body).toContain('redirect_to=%22%3E%3Cscript%3Ealert%281%29%3C%2Fscript%3E')
  })

  it('a malformed link is refused before any page', async () => {
    const res = await fx.server.request('GET', '/verify?type=signup')
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ error_code: 'validation_failed' })
  })
})

describe('MAILER_LINK_CONFIRMATION_PAGE=false', () => {
  const fx = linkServer('link_confirmation_off', { AUTHSVC_MAILER_LINK_CONFIRMATION_PAGE: 'false' })

  it('a HEAD request never consumes the link', async () => {
    const email = 'head-405@example.com'
    const mail = await fx.signUp(email)
    const head = await fx.server.app.server.inject({
      method: 'HEAD',
      url: pathOf(mail.confirmationUrl),
    })
    expect(head.statusCode).toBe(405)
    expect(await fx.pending(email)).toBe(true)
    // Upstream's behaviour otherwise: the GET follows the link at once.
    const res = await fx.server.request('GET', pathOf(mail.confirmationUrl))
    expect(res.statusCode).toBe(303)
    expect(fragmentOf(res.headers.location as string)).toMatchObject({ type: 'signup' })
    expect(await fx.pending(email)).toBe(false)
  })
})

describe('the confirmation page in Chromium', () => {
  const mailer = new RecordingMailer()
  let server: TestServer
  let browser: Browser
  let site: TestHttpServer

  beforeAll(async () => {
    // The app the link leads back to.
    site = await startHttpServer((_request, response) => response.end('the app'))
    server = await startTestServer(
      'link_confirmation_browser',
      {
        AUTHSVC_SITE_URL: site.url,
        AUTHSVC_MAILER_AUTOCONFIRM: 'false',
        AUTHSVC_MAILER_LINK_CONFIRMATION_PAGE: 'true',
      },
      undefined,
      { deps: { mailer } },
    )
    await server.listen()
    browser = await launchChromium()
  })
  afterAll(async () => {
    await browser.close()
    await server.close()
    await site.close()
  })

  it('a preview fetch consumes nothing; a click signs the user in', async () => {
    const email = 'chromium-link@example.com'
    const res = await server.request('POST', '/signup', {
      body: { email, password: 'password123' },
    })
    expect(res.statusCode).toBe(200)
    const mail = await mailer.waitFor(email, 'confirmation')
    const link = `${server.url}${pathOf(mail.confirmationUrl)}`
    // A link preview: the page fetched without a person.
    const preview = await fetch(link)
    expect(preview.status).toBe(200)
    const context = await browser.newContext({ javaScriptEnabled: false })
    const tab = await context.newPage()
    await tab.goto(link)
    expect(tab.url()).toBe(link)
    await Promise.all([
      tab.waitForURL(`${site.url}/**`),
      tab.getByRole('button', { name: 'Continue' }).click(),
    ])
    const fragment = fragmentOf(tab.url())
    expect(fragment).toMatchObject({ token_type: 'bearer', type: 'signup' })
    const user = await server.request('GET', '/user', { token: fragment.access_token })
    expect(user.json()).toMatchObject({ email, email_confirmed_at: expect.any(String) as unknown })
    await context.close()
  })
})
