/**
 * `@gatehouse/mail-inbox`: a mail catcher for development and tests (like the Supabase CLI's
 * Inbucket/Mailpit): an SMTP server on loopback that keeps the last mails, and a web page that
 * lists them live, searches them and shows each as HTML, text, headers or source. `npm start`
 * wires it to the auth server and keeps its mails in `.data/mail-inbox/`. Not for production: it
 * accepts any login without TLS.
 *
 * @packageDocumentation
 */
import { MailFolder } from './folder.js'
import { startSmtpCatcher, type SmtpCatcher } from './smtp.js'
import { MailStore } from './store.js'
import { startInboxWeb, type InboxWeb } from './web.js'

export { MailFolder, type FolderEntry } from './folder.js'
export { matchesQuery, parseQuery, type Searchable, type SearchTerm } from './search.js'
export {
  MailStore,
  type MailEvent,
  type MailHeader,
  type MailSummary,
  type NewMail,
  type ReceivedMail,
} from './store.js'
export { escapeHtml, MAIL_VIEWS, type MailView } from './pages.js'
export { parseMail, startSmtpCatcher, type SmtpCatcher, type SmtpCatcherOptions } from './smtp.js'
export { allowedHosts, startInboxWeb, type InboxWeb, type InboxWebOptions } from './web.js'

/** Options of {@link startMailInbox}. */
export interface MailInboxOptions {
  /** Address both servers listen on. @default '127.0.0.1' */
  readonly host?: string
  /** SMTP port. @default 0 (a free port) */
  readonly smtpPort?: number
  /** Web page port. @default 0 (a free port) */
  readonly webPort?: number
  /** How many mails are kept (older ones are dropped). @default 100 */
  readonly limit?: number
  /**
   * A directory that keeps the mails across restarts (created owner-only when missing; the
   * mails in it are shown at once). @default none: mails are kept in memory only
   */
  readonly dataDir?: string
}

/** A running inbox: its SMTP server, its page and its mails. */
export interface MailInbox {
  readonly store: MailStore
  readonly smtp: SmtpCatcher
  readonly web: InboxWeb
  /** Stops both servers. */
  close(): Promise<void>
}

/**
 * Starts the SMTP catcher and the inbox page over one {@link MailStore}.
 *
 * @throws {Error} When a port cannot be listened on (what was started is stopped), or the data
 *   directory cannot be created or read.
 */
export async function startMailInbox(options: MailInboxOptions = {}): Promise<MailInbox> {
  const folder = options.dataDir === undefined ? undefined : new MailFolder(options.dataDir)
  const store = new MailStore(options.limit ?? 100, folder)
  const host = options.host ?? '127.0.0.1'
  const smtp = await startSmtpCatcher({ store, host, port: options.smtpPort ?? 0 })
  let web: InboxWeb
  try {
    web = await startInboxWeb({ store, host, port: options.webPort ?? 0 })
  } catch (error) {
    await smtp.close()
    throw error
  }
  return {
    store,
    smtp,
    web,
    close: async () => {
      await Promise.all([smtp.close(), web.close()])
    },
  }
}
