/**
 * The newcomer's journey of `npm start`: sign up, open the local mail inbox, click the
 * confirmation link, land signed in on SITE_URL. Real PostgreSQL, the real SMTP catcher and
 * Debian's Chromium.
 */
import {
  createTestSchema,
  FakeClock,
  getFreePort,
  launchChromium,
  startHttpServer,
  type TestDatabase,
  type TestHttpServer,
} from '@gatehouse/testing'
import { startMailInbox, type MailInbox } from '@gatehouse/mail-inbox'
import { createAuthApp, loadSettings, type AuthApp } from '@gatehouse/auth'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { testEnv } from '../helpers.js'

let inbox: MailInbox
let browser: Browser
let site: TestHttpServer
let siteUrl: string
let database: TestDatabase
let app: AuthApp
let apiUrl: string

beforeAll(async () => {
  inbox = await startMailInbox()
  // SITE_URL: a page that shows what it was opened with.
  site = await startHttpServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end(`<!doctype html><title>My app</title><h1>Welcome ${req.url ?? ''}</h1>`)
  })
  siteUrl = `${site.url}/`
  database = await createTestSchema('auth_inbox_signup')
  const port = await getFreePort()
  apiUrl = `http://127.0.0.1:${String(port)}`
  app = await createAuthApp(
    loadSettings(
      testEnv(database.url, {
        AUTHSVC_SITE_URL: siteUrl,
        AUTHSVC_API_EXTERNAL_URL: apiUrl,
        AUTHSVC_MAILER_AUTOCONFIRM: 'false',
        AUTHSVC_SMTP_HOST: '127.0.0.1',
        AUTHSVC_SMTP_PORT: String(inbox.smtp.port),
        AUTHSVC_SMTP_ADMIN_EMAIL: 'no-reply@example.com',
        AUTHSVC_SMTP_SENDER_NAME: 'Gatehouse',
      }),
    ),
    { clock: new FakeClock(Date.now()) },
  )
  await app.server.listen({ host: '127.0.0.1', port })
  browser = await launchChromium()
})
afterAll(async () => {
  await browser.close()
  await app.close()
  await database.drop()
  await inbox.close()
  await site.close()
})

describe('sign-up through the local mail inbox, in Chromium', () => {
  it('signs up, opens the inbox, clicks the confirmation link and lands signed in on SITE_URL', async () => {
    const signup = await fetch(`${apiUrl}/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'newcomer@example.com', password: 'password123' }),
    })
    expect(signup.status).toBe(200)
    expect(((await signup.json()) as { access_token?: string }).access_token).toBeUndefined()

    const page = await browser.newPage()
    try {
      await page.goto(inbox.web.url)
      const row = page.getByRole('row', { name: /newcomer@example\.com/ })
      await row.getByRole('link', { name: 'Confirm your email address' }).click()
      await page
        .frameLocator('iframe[title="Mail body"]')
        .getByRole('link', { name: 'Confirm your email address' })
        .click()
      await page.waitForURL((url) => url.href.startsWith(siteUrl) && url.hash !== '')

      const landed = new URL(page.url())
      expect(`${landed.origin}/`).toBe(siteUrl)
      const fragment = new URLSearchParams(landed.hash.slice(1))
      expect(fragment.get('type')).toBe('signup')
      expect(fragment.get('token_type')).toBe('bearer')
      expect(fragment.get('refresh_token')).toBeTruthy()
      const user = await fetch(`${apiUrl}/user`, {
        headers: { authorization: `Bearer ${fragment.get('access_token') ?? ''}` },
      })
      expect(user.status).toBe(200)
      const body = (await user.json()) as { email: string; email_confirmed_at?: string }
      expect(body.email).toBe('newcomer@example.com')
      expect(body.email_confirmed_at).toBeTruthy()
    } finally {
      await page.close()
    }
  })
})
