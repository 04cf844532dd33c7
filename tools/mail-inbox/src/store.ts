/**
 * The mails the inbox keeps: the last few, newest first, in memory and (when given a
 * {@link MailFolder}) on disk, with change events for the page's live updates.
 *
 * @module
 */
import type { MailFolder } from './folder.js'
import { matchesQuery } from './search.js'

/** One header line of a mail, unfolded: `{ name: 'Subject', value: 'Hello' }`. */
export interface MailHeader {
  readonly name: string
  readonly value: string
}

/** One received mail, as the inbox shows it. */
export interface ReceivedMail {
  /** Sequence number of the mail in this inbox, from 1. */
  readonly id: number
  /** The `From` header as written (`"Name" <address>`). */
  readonly from: string
  /** The `To` addresses. */
  readonly to: readonly string[]
  readonly subject: string
  /**
   * The language it was written in: its `Content-Language` header (RFC 3282), `''` when it has
   * none.
   */
  readonly language: string
  /** When it arrived, as an ISO 8601 timestamp. */
  readonly receivedAt: string
  /** The HTML body, `''` when the mail has none. */
  readonly html: string
  /** The plain-text body, `''` when the mail has none. */
  readonly text: string
  /** The links of the HTML body (`href` values), in order. */
  readonly links: readonly string[]
  /** The header lines, in order, as received. */
  readonly headers: readonly MailHeader[]
  /** Size of the message as received (RFC 5322 source), in bytes. */
  readonly sizeBytes: number
}

/** A mail as it arrives: everything but its id, plus its source. */
export type NewMail = Omit<ReceivedMail, 'id'> & {
  /** The message as received (RFC 5322), for the source view. */
  readonly source: string
}

/** A {@link ReceivedMail} without its bodies: a line of the list. */
export type MailSummary = Omit<ReceivedMail, 'html' | 'text' | 'links' | 'headers'> & {
  /** The start of the text body, whitespace collapsed (at most 120 characters). */
  readonly preview: string
}

/** A change of the kept mails, as the page's live updates report it. */
export type MailEvent =
  | { readonly type: 'added'; readonly mail: MailSummary }
  | { readonly type: 'deleted'; readonly id: number }
  | { readonly type: 'cleared' }

const PREVIEW_CHARS = 120

/** What the store keeps of one mail. */
interface Kept {
  readonly mail: ReceivedMail
  readonly source: string
}

function summary({ mail }: Kept): MailSummary {
  const { id, from, to, subject, language, receivedAt, sizeBytes } = mail
  const preview = mail.text.replace(/\s+/g, ' ').trim().slice(0, PREVIEW_CHARS)
  return { id, from, to, subject, language, receivedAt, sizeBytes, preview }
}

/**
 * The last {@link MailStore.limit} mails, newest first; older ones are dropped as new ones
 * arrive, so memory (and the folder) stays bounded however many mails are sent.
 */
export class MailStore {
  readonly limit: number
  readonly #kept: Kept[] = []
  readonly #folder: MailFolder | undefined
  #nextId = 1
  readonly #listeners = new Set<(event: MailEvent, mail?: ReceivedMail) => void>()

  /**
   * @param limit How many mails to keep (at least 1). @default 100
   * @param folder Where mails are kept across restarts; the ones it holds are loaded now (the
   *   newest `limit`, older ones deleted). @default none: in memory only
   * @throws {RangeError} When `limit` is not a positive integer.
   */
  constructor(limit = 100, folder?: MailFolder) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(`limit must be a positive integer, got ${String(limit)}`)
    }
    this.limit = limit
    this.#folder = folder
    if (folder) {
      const loaded = folder.load() // oldest first
      for (const { mail } of loaded.slice(0, -limit)) folder.remove(mail.id)
      for (const kept of loaded.slice(-limit)) this.#kept.unshift(kept)
      this.#nextId = (loaded.at(-1)?.mail.id ?? 0) + 1
    }
  }

  /** How many mails are kept. */
  get size(): number {
    return this.#kept.length
  }

  /**
   * Adds a mail, gives it its id and writes it to the folder; drops the oldest beyond the
   * limit.
   *
   * @throws {Error} When the folder cannot be written (the mail is not kept).
   */
  add(mail: NewMail): ReceivedMail {
    const { source, ...fields } = mail
    const kept = { mail: { ...fields, id: this.#nextId++ }, source }
    this.#folder?.save(kept.mail, source)
    this.#kept.unshift(kept)
    for (const dropped of this.#kept.splice(this.limit)) this.#folder?.remove(dropped.mail.id)
    this.#emit({ type: 'added', mail: summary(kept) }, kept.mail)
    return kept.mail
  }

  /**
   * The kept mails' summaries, newest first.
   *
   * @param query Only the mails it matches (words in any field; `from:`, `to:`, `subject:`
   *   narrow a word to one field). @default every mail
   */
  list(query = ''): MailSummary[] {
    return this.#kept.filter(({ mail }) => matchesQuery(mail, query)).map(summary)
  }

  /** The mail with `id`, if it is still kept. */
  get(id: number): ReceivedMail | undefined {
    return this.#find(id)?.mail
  }

  /** The source (RFC 5322) of the mail with `id`, if it is still kept. */
  source(id: number): string | undefined {
    return this.#find(id)?.source
  }

  /** Forgets the mail with `id`; `false` when it is not kept. */
  delete(id: number): boolean {
    const index = this.#kept.findIndex((kept) => kept.mail.id === id)
    if (index < 0) return false
    this.#kept.splice(index, 1)
    this.#folder?.remove(id)
    this.#emit({ type: 'deleted', id })
    return true
  }

  /** Forgets every mail (ids keep counting). */
  clear(): void {
    for (const { mail } of this.#kept.splice(0)) this.#folder?.remove(mail.id)
    this.#emit({ type: 'cleared' })
  }

  /**
   * Calls `listener` on every change from now on.
   *
   * @returns A function that stops the calls.
   */
  subscribe(listener: (event: MailEvent) => void): () => void {
    const wrapped = (event: MailEvent): void => {
      listener(event)
    }
    this.#listeners.add(wrapped)
    return () => this.#listeners.delete(wrapped)
  }

  /**
   * Resolves with the next mail that arrives for `to` (case-insensitive), or one already kept.
   *
   * @param to The recipient's address.
   * @param signal Rejects the wait when aborted (a test's timeout).
   */
  waitFor(to: string, signal?: AbortSignal): Promise<ReceivedMail> {
    const wanted = to.toLowerCase()
    const matches = (mail: ReceivedMail): boolean =>
      mail.to.some((address) => address.toLowerCase() === wanted)
    const kept = this.#kept.find(({ mail }) => matches(mail))
    if (kept) return Promise.resolve(kept.mail)
    return new Promise((resolve, reject) => {
      const listener = (_event: MailEvent, mail?: ReceivedMail): void => {
        if (mail === undefined || !matches(mail)) return
        this.#listeners.delete(listener)
        resolve(mail)
      }
      this.#listeners.add(listener)
      signal?.addEventListener(
        'abort',
        () => {
          this.#listeners.delete(listener)
          reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'))
        },
        { once: true },
      )
    })
  }

  #find(id: number): Kept | undefined {
    return this.#kept.find((kept) => kept.mail.id === id)
  }

  #emit(event: MailEvent, mail?: ReceivedMail): void {
    for (const listener of [...this.#listeners]) listener(event, mail)
  }
}
