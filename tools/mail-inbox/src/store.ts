/**
 * The mails the inbox keeps: the last few, newest first, in memory.
 *
 * @module
 */

/** One received mail, as the inbox shows it. */
export interface ReceivedMail {
  /** Sequence number of the mail in this inbox, from 1. */
  readonly id: number
  /** The `From` header as written (`"Name" <address>`). */
  readonly from: string
  /** The `To` addresses. */
  readonly to: readonly string[]
  readonly subject: string
  /** When it arrived, as an ISO 8601 timestamp. */
  readonly receivedAt: string
  /** The HTML body, `''` when the mail has none. */
  readonly html: string
  /** The plain-text body, `''` when the mail has none. */
  readonly text: string
  /** The links of the HTML body (`href` values), in order. */
  readonly links: readonly string[]
}

/** A {@link ReceivedMail} without its bodies: a line of the list. */
export type MailSummary = Omit<ReceivedMail, 'html' | 'text' | 'links'>

/**
 * The last {@link MailStore.limit} mails, newest first; older ones are dropped as new ones
 * arrive, so memory stays bounded however many mails are sent.
 */
export class MailStore {
  readonly limit: number
  readonly #mails: ReceivedMail[] = []
  #nextId = 1
  readonly #listeners = new Set<(mail: ReceivedMail) => void>()

  /** @param limit How many mails to keep (at least 1). @default 100 */
  constructor(limit = 100) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RangeError(`limit must be a positive integer, got ${String(limit)}`)
    }
    this.limit = limit
  }

  /** Adds a mail and gives it its id; drops the oldest beyond the limit. */
  add(mail: Omit<ReceivedMail, 'id'>): ReceivedMail {
    const stored = { ...mail, id: this.#nextId++ }
    this.#mails.unshift(stored)
    if (this.#mails.length > this.limit) this.#mails.length = this.limit
    for (const listener of this.#listeners) listener(stored)
    return stored
  }

  /** The kept mails' summaries, newest first. */
  list(): MailSummary[] {
    return this.#mails.map(({ id, from, to, subject, receivedAt }) => ({
      id,
      from,
      to,
      subject,
      receivedAt,
    }))
  }

  /** The mail with `id`, if it is still kept. */
  get(id: number): ReceivedMail | undefined {
    return this.#mails.find((mail) => mail.id === id)
  }

  /** Forgets every mail (ids keep counting). */
  clear(): void {
    this.#mails.length = 0
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
    const kept = this.#mails.find(matches)
    if (kept) return Promise.resolve(kept)
    return new Promise((resolve, reject) => {
      const listener = (mail: ReceivedMail): void => {
        if (!matches(mail)) return
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
}
