import { request } from 'node:http'
import nodemailer, { type Transporter } from 'nodemailer'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  MailStore,
  startMailInbox,
  type MailInbox,
  type MailSummary,
  type ReceivedMail,
} from '../src/index.js'

let inbox: MailInbox

beforeAll(async () => {
  inbox = await startMailInbox({ limit: 3 })
})
afterAll(async () => {
  await inbox.close()
})
beforeEach(async () => {
  await fetch(new URL('api/mails', inbox.web.url), { method: 'DELETE' })
})

function transport(auth?: { user: string; pass: string }): Transporter {
  return nodemailer.createTransport({
    host: '127.0.0.1',
    port: inbox.smtp.port,
    secure: false,
    auth,
  })
}

async function getJson(path: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(new URL(path, inbox.web.url))
  return { status: response.status, body: await response.json() }
}

async function listMails(): Promise<MailSummary[]> {
  return (await getJson('api/mails')).body as MailSummary[]
}

describe('mail inbox', () => {
  it('receives a mail over SMTP and serves it as JSON: from, to, subject, bodies, links', async () => {
    await transport({ user: 'any', pass: 'thing' }).sendMail({
      from: '"Gatehouse" <no-reply@example.com>',
      to: 'ann@example.com',
      subject: 'Confirm your email address',
      html: '<p><a href="http://127.0.0.1:9999/verify?token=abc&amp;type=signup">Confirm</a></p>',
      text: 'Confirm: http://127.0.0.1:9999/verify?token=abc&type=signup',
    })
    const list = await listMails()
    expect(list).toHaveLength(1)
    const [summary] = list
    expect(summary).toMatchObject({
      from: '"Gatehouse" <no-reply@example.com>',
      to: ['ann@example.com'],
      subject: 'Confirm your email address',
    })
    const mail = (await getJson(`api/mails/${String(summary?.id)}`)) as { body: ReceivedMail }
    expect(mail.body.links).toEqual(['http://127.0.0.1:9999/verify?token=abc&type=signup'])
    expect(mail.body.text).toContain('Confirm: http://127.0.0.1:9999/verify?token=abc&type=signup')
    expect(mail.body.html).toContain(
      '<a href="http://127.0.0.1:9999/verify?token=abc&amp;type=signup">',
    )
  })

  it('lists mails newest first on its page and renders one in a sandboxed frame', async () => {
    const t = transport()
    await t.sendMail({
      from: 'a@example.com',
      to: 'b@example.com',
      subject: 'first <1>',
      html: '<p>one</p>',
    })
    await t.sendMail({
      from: 'a@example.com',
      to: 'b@example.com',
      subject: 'second',
      html: '<p>two</p><script>alert(1)</script><a href="https://example.com/x">x</a>',
    })
    const listPage = await (await fetch(inbox.web.url)).text()
    expect(listPage.indexOf('second')).toBeLessThan(listPage.indexOf('first &lt;1&gt;'))
    const [newest] = await listMails()
    const response = await fetch(new URL(`mails/${String(newest?.id)}`, inbox.web.url))
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'")
    const html = await response.text()
    const frame = /<iframe [^>]*sandbox="([^"]*)" srcdoc="([^"]*)"/.exec(html)
    expect(frame?.[1]).not.toContain('allow-scripts')
    expect(frame?.[1]).toContain('allow-top-navigation-by-user-activation')
    expect(frame?.[2]).toContain('&lt;base target=&quot;_top&quot;&gt;')
    expect(frame?.[2]).toContain('&lt;a href=&quot;https://example.com/x&quot;&gt;')
    expect(html).not.toContain('<script>')
  })

  it('keeps only the last N mails', async () => {
    const t = transport()
    for (let i = 1; i <= 5; i++) {
      await t.sendMail({
        from: 'a@example.com',
        to: 'c@example.com',
        subject: `mail ${String(i)}`,
        text: 'x',
      })
    }
    const list = await listMails()
    expect(list.map((m) => m.subject)).toEqual(['mail 5', 'mail 4', 'mail 3'])
    expect((await getJson(`api/mails/${String((list[2]?.id ?? 0) - 1)}`)).status).toBe(404)
  })

  it('answers 404 for unknown pages and ids', async () => {
    expect((await fetch(new URL('mails/999999', inbox.web.url))).status).toBe(404)
    expect((await fetch(new URL('nothing', inbox.web.url))).status).toBe(404)
    expect((await fetch(new URL('mails/abc', inbox.web.url))).status).toBe(404)
  })
})

/** A GET with a `Host` header as written (fetch would set its own), answering status and body. */
function getWithHost(path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, inbox.web.url), { headers: { host } }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (body += chunk))
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

describe('mail inbox Host check (DNS rebinding)', () => {
  /** @see issue 24, item 9: a rebound name must not read the mails (sign-in links). */
  it('refuses a request whose Host is not a loopback name with the inbox port', async () => {
    await transport().sendMail({
      from: 'a@example.com',
      to: 'victim@example.com',
      subject: 'Your sign-in link',
      text: 'http://127.0.0.1:9999/verify?token=secret',
    })
    const port = String(inbox.web.port)
    for (const host of [
      `attacker.example:${port}`,
      'attacker.example',
      `127.0.0.1:${String(inbox.web.port + 1)}`,
      `localhost.attacker.example:${port}`,
      '127.0.0.1',
    ]) {
      for (const path of ['/', '/api/mails', '/mails/1']) {
        const answer = await getWithHost(path, host)
        expect({ host, path, status: answer.status }).toEqual({ host, path, status: 403 })
        expect(answer.body).not.toContain('victim@example.com')
      }
    }
    for (const host of [
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `LOCALHOST:${port}`,
      `[::1]:${port}`,
    ]) {
      const answer = await getWithHost('/api/mails', host)
      expect({ host, status: answer.status }).toEqual({ host, status: 200 })
      expect(answer.body).toContain('victim@example.com')
    }
  })
})

describe('MailStore', () => {
  it('resolves waitFor with a kept mail or the next one to that address', async () => {
    const store = new MailStore(2)
    const mail = {
      from: 'a',
      to: ['x@example.com'],
      subject: 's',
      receivedAt: '',
      html: '',
      text: '',
      links: [],
    }
    const next = store.waitFor('Y@example.com')
    store.add(mail)
    store.add({ ...mail, to: ['y@example.com'] })
    expect((await next).id).toBe(2)
    expect((await store.waitFor('x@example.com')).id).toBe(1)
    const controller = new AbortController()
    const never = store.waitFor('z@example.com', controller.signal)
    controller.abort(new Error('gave up'))
    await expect(never).rejects.toThrow('gave up')
    expect(() => new MailStore(0)).toThrow('limit must be a positive integer, got 0')
  })
})
