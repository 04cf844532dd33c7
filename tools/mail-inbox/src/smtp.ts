/**
 * The inbox's SMTP side: an `smtp-server` on loopback that accepts every mail (any login, no
 * TLS: it only listens on the local machine), parses it with `mailparser` and keeps it.
 *
 * @module
 */
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { simpleParser, type AddressObject } from 'mailparser'
import { SMTPServer } from 'smtp-server'
import type { MailHeader, MailStore, NewMail } from './store.js'

/** Options of {@link startSmtpCatcher}. */
export interface SmtpCatcherOptions {
  /** Where mails go. */
  readonly store: MailStore
  /** @default '127.0.0.1' */
  readonly host?: string
  /** @default 0 (a free port) */
  readonly port?: number
  /** Largest mail accepted, in bytes; a larger one is refused with `552`. @default 5 MiB */
  readonly maxMessageBytes?: number
}

/** A running SMTP catcher. */
export interface SmtpCatcher {
  readonly host: string
  readonly port: number
  /** Stops accepting connections and closes the open ones. */
  close(): Promise<void>
}

function addresses(field: AddressObject | AddressObject[] | undefined): string[] {
  const list = Array.isArray(field) ? field : field ? [field] : []
  return list.flatMap((group) => group.value.flatMap((a) => (a.address ? [a.address] : [])))
}

/** The `href`s of an HTML body, entities in them decoded as a browser would. */
function linksOf(html: string): string[] {
  return [...html.matchAll(/<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)')/gi)].map((m) =>
    (m[1] ?? m[2] ?? '')
      .replace(/&amp;/g, '&')
      .replace(/&#34;|&quot;/g, '"')
      .replace(/&#39;/g, "'"),
  )
}

/** The header lines as received, each unfolded (RFC 5322 §2.2.3) into name and value. */
function headerLinesOf(lines: readonly { key: string; line: string }[]): MailHeader[] {
  return lines.map(({ line }) => {
    const colon = line.indexOf(':')
    const name = colon < 0 ? line : line.slice(0, colon)
    const value = colon < 0 ? '' : line.slice(colon + 1)
    return { name: name.trim(), value: value.replace(/\r?\n[ \t]+/g, ' ').trim() }
  })
}

/**
 * Parses a raw message into what the inbox keeps.
 *
 * @param raw The message as received (RFC 5322).
 * @param now When it arrived.
 */
export async function parseMail(raw: Buffer, now: Date): Promise<NewMail> {
  const parsed = await simpleParser(raw, { skipImageLinks: true })
  const html = typeof parsed.html === 'string' ? parsed.html : ''
  const headers = headerLinesOf(parsed.headerLines)
  const language = headers.find((h) => h.name.toLowerCase() === 'content-language')?.value ?? ''
  return {
    from: parsed.from?.text ?? '',
    to: addresses(parsed.to),
    subject: parsed.subject ?? '',
    language,
    receivedAt: now.toISOString(),
    html,
    text: parsed.text ?? '',
    links: linksOf(html),
    headers,
    sizeBytes: raw.length,
    source: raw.toString('utf8'),
  }
}

/**
 * Starts the SMTP catcher.
 *
 * @throws {Error} When the port cannot be listened on.
 */
export async function startSmtpCatcher(options: SmtpCatcherOptions): Promise<SmtpCatcher> {
  const host = options.host ?? '127.0.0.1'
  const maxBytes = options.maxMessageBytes ?? 5 * 1024 * 1024
  const server = new SMTPServer({
    banner: 'Gatehouse mail inbox (development only)',
    size: maxBytes,
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username ?? 'anonymous' })
    },
    onData(stream, _session, callback) {
      const chunks: Buffer[] = []
      let size = 0
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size <= maxBytes) chunks.push(chunk)
      })
      stream.on('end', () => {
        if (stream.sizeExceeded) {
          const error = Object.assign(new Error(`message over ${String(maxBytes)} bytes`), {
            responseCode: 552,
          })
          callback(error)
          return
        }
        parseMail(Buffer.concat(chunks), new Date())
          .then((mail) => {
            options.store.add(mail)
            callback()
          })
          .catch((error: unknown) => {
            callback(error instanceof Error ? error : new Error(String(error)))
          })
      })
    },
  })
  server.on('error', () => {
    // A client's broken connection is its own problem; the catcher keeps running.
  })
  server.listen(options.port ?? 0, host)
  await Promise.race([
    once(server.server, 'listening'),
    once(server.server, 'error').then(([error]) => Promise.reject(error as Error)),
  ])
  const { port } = server.server.address() as AddressInfo
  return {
    host,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve()
        })
      }),
  }
}
