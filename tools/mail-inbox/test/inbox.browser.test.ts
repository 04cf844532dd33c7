import nodemailer from 'nodemailer'
import { launchChromium, startHttpServer, type TestHttpServer } from '@gatehouse/testing'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startMailInbox, type MailInbox } from '../src/index.js'

let inbox: MailInbox
let browser: Browser
let site: TestHttpServer
let siteUrl: string

beforeAll(async () => {
  inbox = await startMailInbox()
  site = await startHttpServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end(`<!doctype html><title>Site</title><h1>Landed on ${req.url ?? ''}</h1>`)
  })
  siteUrl = site.url
  browser = await launchChromium()
})
afterAll(async () => {
  await browser.close()
  await inbox.close()
  await site.close()
})

describe('mail inbox page in Chromium', () => {
  it('lists the mail, renders it without running its scripts, and its link opens the target', async () => {
    await nodemailer
      .createTransport({ host: '127.0.0.1', port: inbox.smtp.port, secure: false })
      .sendMail({
        from: '"Gatehouse" <no-reply@example.com>',
        to: 'ann@example.com',
        subject: 'Confirm your email address',
        html:
          `<h2>Confirm</h2><p><a href="${siteUrl}/welcome?x=1&amp;y=2">Confirm your email address</a></p>` +
          '<script>document.body.insertAdjacentHTML("beforeend", "<p id=pwned>pwned</p>")</script>',
      })
    const page = await browser.newPage()
    try {
      await page.goto(inbox.web.url)
      const row = page.getByRole('row', { name: /Confirm your email address/ })
      await expect(row.textContent()).resolves.toContain('ann@example.com')
      await row.getByRole('link', { name: 'Confirm your email address' }).click()
      await page.waitForURL(/\/mails\/\d+$/)
      const frame = page.frameLocator('iframe[title="Mail body"]')
      await expect(frame.getByRole('heading', { name: 'Confirm' }).textContent()).resolves.toBe(
        'Confirm',
      )
      expect(await page.title()).toBe('Confirm your email address')
      expect(await frame.locator('#pwned').count()).toBe(0)
      await frame.getByRole('link', { name: 'Confirm your email address' }).click()
      await page.waitForURL(`${siteUrl}/welcome?x=1&y=2`)
      await expect(page.getByRole('heading').textContent()).resolves.toBe(
        'Landed on /welcome?x=1&y=2',
      )
    } finally {
      await page.close()
    }
  })
})
