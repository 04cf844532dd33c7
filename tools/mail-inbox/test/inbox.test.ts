import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
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

async function listMails(query = ''): Promise<MailSummary[]> {
  return (await getJson(`api/mails?q=${encodeURIComponent(query)}`)).body as MailSummary[]
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

  it('shows the language a mail was written in (Content-Language), none when it has none', async () => {
    const t = transport()
    await t.sendMail({
      from: 'a@example.com',
      to: 'lang@example.com',
      subject: 'Bestätigen Sie Ihre Anmeldung',
      html: '<p>Hallo</p>',
      headers: { 'Content-Language': 'de' },
    })
    await t.sendMail({ from: 'a@example.com', to: 'lang@example.com', subject: 'plain', text: 'x' })
    const [plain, german] = await listMails('to:lang@example.com')
    expect([german?.language, plain?.language]).toEqual(['de', ''])
    const listPage = await (await fetch(inbox.web.url)).text()
    expect(listPage).toContain(
      'Bestätigen Sie Ihre Anmeldung</a> <span class="lang" title="Content-Language">de</span>',
    )
    const page = await (await fetch(new URL(`mails/${String(german?.id)}`, inbox.web.url))).text()
    expect(page).toContain('<div>Language: de</div>')
    const plainPage = await (
      await fetch(new URL(`mails/${String(plain?.id)}`, inbox.web.url))
    ).text()
    expect(plainPage).not.toContain('Language:')
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

  it('searches by words and by from:, to:, subject:, through the API and the page', async () => {
    const t = transport()
    await t.sendMail({
      from: 'auth@example.com',
      to: 'ann@example.com',
      subject: 'Reset your password',
      text: 'Follow this link to reset the password for ann',
    })
    await t.sendMail({
      from: 'auth@example.com',
      to: 'bob@example.com',
      subject: 'Confirm your signup',
      text: 'Follow this link to confirm your user',
    })
    const subjects = async (q: string): Promise<string[]> =>
      (await listMails(q)).map((m) => m.subject)
    expect(await subjects('')).toEqual(['Confirm your signup', 'Reset your password'])
    expect(await subjects('FOLLOW link')).toEqual(['Confirm your signup', 'Reset your password'])
    expect(await subjects('to:bob')).toEqual(['Confirm your signup'])
    expect(await subjects('subject:"reset your"')).toEqual(['Reset your password'])
    expect(await subjects('from:bob')).toEqual([])
    expect(await subjects('password ann')).toEqual(['Reset your password'])
    const page = await (await fetch(new URL('?q=to%3Abob', inbox.web.url))).text()
    expect(page).toContain('Confirm your signup')
    expect(page).not.toContain('Reset your password')
    expect(page).toContain('value="to:bob"')
  })

  it("deletes one mail, and serves a mail's headers and source", async () => {
    const t = transport()
    await t.sendMail({ from: 'a@example.com', to: 'd@example.com', subject: 'keep', text: 'k' })
    await t.sendMail({
      from: 'a@example.com',
      to: 'd@example.com',
      subject: 'drop <me>',
      text: 'd',
      headers: { 'X-Test': 'a value' },
    })
    const [drop, keep] = await listMails()
    const mail = (await getJson(`api/mails/${String(drop?.id)}`)).body as ReceivedMail
    expect(mail.headers).toContainEqual({ name: 'X-Test', value: 'a value' })
    expect(mail.headers).toContainEqual({ name: 'Subject', value: 'drop <me>' })
    const source = await fetch(new URL(`api/mails/${String(drop?.id)}/source`, inbox.web.url))
    expect(source.headers.get('content-type')).toBe('message/rfc822')
    const raw = await source.text()
    expect(raw).toMatch(/^Subject: drop <me>$/m)
    expect(Buffer.byteLength(raw)).toBe(mail.sizeBytes)
    const headersPage = await (
      await fetch(new URL(`mails/${String(drop?.id)}?view=headers`, inbox.web.url))
    ).text()
    expect(headersPage).toContain('<th scope="row">X-Test</th><td>a value</td>')
    expect(headersPage).toContain('drop &lt;me&gt;')

    const deleted = await fetch(new URL(`api/mails/${String(drop?.id)}`, inbox.web.url), {
      method: 'DELETE',
    })
    expect(deleted.status).toBe(200)
    expect((await listMails()).map((m) => m.id)).toEqual([keep?.id])
    expect((await getJson(`api/mails/${String(drop?.id)}`)).status).toBe(404)
    const again = await fetch(new URL(`api/mails/${String(drop?.id)}`, inbox.web.url), {
      method: 'DELETE',
    })
    expect(again.status).toBe(404)
  })

  it('refuses a request that another site sends (Origin), so it cannot delete mails', async () => {
    await transport().sendMail({ from: 'a@example.com', to: 'e@example.com', text: 'x' })
    for (const origin of [
      'http://attacker.example',
      'null',
      `https://127.0.0.1:${String(inbox.web.port)}`,
    ]) {
      const response = await fetch(new URL('api/mails', inbox.web.url), {
        method: 'DELETE',
        headers: { origin },
      })
      expect({ origin, status: response.status }).toEqual({ origin, status: 403 })
    }
    expect(await listMails()).toHaveLength(1)
    const own = await fetch(new URL('api/mails', inbox.web.url), {
      method: 'DELETE',
      headers: { origin: `http://localhost:${String(inbox.web.port)}` },
    })
    expect(own.status).toBe(200)
    expect(await listMails()).toHaveLength(0)
  })

  it('streams changes as Server-Sent Events with the count', async () => {
    const controller = new AbortController()
    const response = await fetch(new URL('api/events', inbox.web.url), {
      signal: controller.signal,
    })
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader()
    const events: unknown[] = []
    const next = async (): Promise<unknown> => {
      let buffer = ''
      for (;;) {
        const data = /^data: (.*)$/m.exec(buffer)?.[1]
        if (data !== undefined) return JSON.parse(data)
        const chunk = await reader?.read()
        if (!chunk || chunk.done) throw new Error('stream ended')
        buffer += chunk.value
      }
    }
    try {
      await transport().sendMail({ from: 'a@example.com', to: 'f@example.com', subject: 'hi' })
      events.push(await next())
      await fetch(new URL('api/mails', inbox.web.url), { method: 'DELETE' })
      events.push(await next())
    } finally {
      controller.abort()
    }
    expect(events).toMatchObject([
      { type: 'added', count: 1, mail: { subject: 'hi', to: ['f@example.com'] } },
      { type: 'cleared', count: 0 },
    ])
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

describe('mail inbox with a data directory', () => {
  it('keeps the mails across restarts, owner-only, and only the last N', async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'inbox-')), 'mails')
    try {
      const first = await startMailInbox({ dataDir, limit: 2 })
      const send = (subject: string) =>
        nodemailer
          .createTransport({ host: '127.0.0.1', port: first.smtp.port, secure: false })
          .sendMail({ from: 'a@example.com', to: 'g@example.com', subject, html: '<p>x</p>' })
      await send('one')
      await send('two')
      await send('three')
      await first.close()
      expect(readdirSync(dataDir).sort()).toEqual(['2.json', '3.json'])
      expect(statSync(dataDir).mode & 0o777).toBe(0o700)
      expect(statSync(join(dataDir, '3.json')).mode & 0o777).toBe(0o600)

      const second = await startMailInbox({ dataDir, limit: 2 })
      try {
        expect(second.store.list().map((m) => [m.id, m.subject])).toEqual([
          [3, 'three'],
          [2, 'two'],
        ])
        expect(second.store.get(3)?.html).toContain('<p>x</p>')
        expect(second.store.source(3)).toMatch(/^Subject: three$/m)
        const fourth = second.store.add({
          ...(second.store.get(3) as ReceivedMail),
          subject: 'four',
          source: '',
        })
        expect(fourth.id).toBe(4)
        expect(second.store.delete(3)).toBe(true)
        expect(readdirSync(dataDir).sort()).toEqual(['4.json'])
      } finally {
        await second.close()
      }
    } finally {
      rmSync(dirname(dataDir), { recursive: true, force: true })
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
      language: '',
      receivedAt: '',
      html: '',
      text: '',
      links: [],
      headers: [],
      sizeBytes: 0,
      source: '',
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
