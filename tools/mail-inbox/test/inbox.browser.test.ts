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

const send = (mail: { to: string; subject: string; html?: string; text?: string }) =>
  nodemailer
    .createTransport({ host: '127.0.0.1', port: inbox.smtp.port, secure: false })
    .sendMail({ from: '"Gatehouse" <no-reply@example.com>', ...mail })

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

  it('updates live, searches, shows text, headers and source, and deletes one and all', async () => {
    inbox.store.clear()
    const page = await browser.newPage()
    try {
      await page.goto(inbox.web.url)
      const count = page.locator('#count')
      await expect(count.textContent()).resolves.toBe('0 mails')
      await expect(page.getByText('No mail yet').count()).resolves.toBe(1)

      // Live: the rows and the count appear without a reload.
      await send({
        to: 'ann@example.com',
        subject: 'Reset your password',
        html: `<p>Reset: <a href="${siteUrl}/reset">Reset password</a></p>`,
        text: `Reset: ${siteUrl}/reset`,
      })
      await send({ to: 'bob@example.com', subject: 'Confirm <signup>', text: 'Hello Bob' })
      const rows = page.locator('#list tbody tr')
      await rows.filter({ hasText: 'Confirm <signup>' }).waitFor()
      await expect(rows.count()).resolves.toBe(2)
      await expect(count.textContent()).resolves.toBe('2 mails')
      expect(await page.title()).toBe('Mail inbox (2)')

      // Search as you type; the address keeps the search.
      await page.getByRole('searchbox', { name: 'Search mails' }).fill('to:ann')
      await page.waitForURL(/\?q=to%3Aann$/)
      await rows.filter({ hasText: 'Confirm <signup>' }).waitFor({ state: 'detached' })
      await expect(rows.allTextContents()).resolves.toEqual([
        expect.stringContaining('Reset your password'),
      ])
      await page.reload()
      await expect(rows.count()).resolves.toBe(1)

      // The views of one mail.
      await page.getByRole('link', { name: 'Reset your password' }).click()
      await page.waitForURL(/\/mails\/\d+$/)
      const views = page.getByRole('navigation', { name: 'Views' })
      await expect(views.getByRole('link').allTextContents()).resolves.toEqual([
        'HTML',
        'Text',
        'Headers',
        'Source',
      ])
      await expect(
        page.frameLocator('iframe[title="Mail body"]').getByRole('link').textContent(),
      ).resolves.toBe('Reset password')
      await views.getByRole('link', { name: 'Text' }).click()
      await expect(
        page.getByLabel('Text body').getByRole('link').getAttribute('href'),
      ).resolves.toBe(`${siteUrl}/reset`)
      await views.getByRole('link', { name: 'Headers' }).click()
      const subjectRow = page.getByRole('row', { name: /^Subject/ })
      await expect(subjectRow.textContent()).resolves.toBe('SubjectReset your password')
      await views.getByRole('link', { name: 'Source' }).click()
      await expect(page.getByLabel('Source').textContent()).resolves.toMatch(
        /^Subject: Reset your password$/m,
      )

      // Delete this one: back on the list, with the other mail only.
      await page.getByRole('button', { name: 'Delete' }).click()
      await page.waitForURL(inbox.web.url)
      await expect(rows.allTextContents()).resolves.toEqual([
        expect.stringContaining('Confirm <signup>'),
      ])
      await expect(count.textContent()).resolves.toBe('1 mail')

      // Delete all.
      await page.getByRole('button', { name: 'Delete all' }).click()
      await page.getByText('No mail yet').waitFor()
      await expect(count.textContent()).resolves.toBe('0 mails')
      expect(inbox.store.size).toBe(0)
    } finally {
      await page.close()
    }
  })
})
