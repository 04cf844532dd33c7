/**
 * Mails kept on disk, so that they outlive a restart (`npm start` keeps them in
 * `.data/mail-inbox/`): one `<id>.json` file per mail, written to a temporary file and renamed,
 * so that a crash never leaves half a mail. Files are readable by their owner only (mails hold
 * sign-in links).
 *
 * @module
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { MailHeader, ReceivedMail } from './store.js'

/** A mail as the folder keeps it. */
export interface FolderEntry {
  readonly mail: ReceivedMail
  readonly source: string
}

const FILE = /^([0-9]{1,15})\.json$/

const isString = (value: unknown): value is string => typeof value === 'string'
const isStrings = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every(isString)
const isHeaders = (value: unknown): value is MailHeader[] =>
  Array.isArray(value) &&
  value.every(
    (h) =>
      typeof h === 'object' &&
      h !== null &&
      isString((h as MailHeader).name) &&
      isString((h as MailHeader).value),
  )

/** The entry a file holds, or `undefined` when it is not one this folder wrote. */
function parseEntry(text: string, id: number): FolderEntry | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { mail, source } = value as { mail?: Partial<Record<keyof ReceivedMail, unknown>> } & {
    source?: unknown
  }
  if (
    mail === undefined ||
    mail.id !== id ||
    !isString(source) ||
    !isString(mail.from) ||
    !isStrings(mail.to) ||
    !isString(mail.subject) ||
    !isString(mail.receivedAt) ||
    !isString(mail.html) ||
    !isString(mail.text) ||
    !isStrings(mail.links) ||
    !isHeaders(mail.headers) ||
    typeof mail.sizeBytes !== 'number'
  ) {
    return undefined
  }
  // Kept by an inbox older than the language: it has none.
  const language = isString(mail.language) ? mail.language : ''
  return { mail: { ...(mail as ReceivedMail), language }, source }
}

/** A directory of mails; see the module's notes. */
export class MailFolder {
  readonly dir: string

  /**
   * @param dir The directory; created (owner-only) when missing.
   * @throws {Error} When it cannot be created.
   */
  constructor(dir: string) {
    this.dir = dir
    mkdirSync(dir, { recursive: true, mode: 0o700 })
  }

  /**
   * Every mail in the folder, oldest first. Files that are not mails this folder wrote
   * (unreadable, cut short, edited) are left alone and skipped.
   */
  load(): FolderEntry[] {
    const entries: FolderEntry[] = []
    for (const name of readdirSync(this.dir)) {
      const id = FILE.exec(name)?.[1]
      if (id === undefined) continue
      let text: string
      try {
        text = readFileSync(join(this.dir, name), 'utf8')
      } catch {
        continue
      }
      const entry = parseEntry(text, Number(id))
      if (entry) entries.push(entry)
    }
    return entries.sort((a, b) => a.mail.id - b.mail.id)
  }

  /**
   * Writes a mail.
   *
   * @throws {Error} When the file cannot be written.
   */
  save(mail: ReceivedMail, source: string): void {
    const file = join(this.dir, `${String(mail.id)}.json`)
    const temporary = `${file}.${String(process.pid)}.tmp`
    writeFileSync(temporary, JSON.stringify({ mail, source }), { mode: 0o600 })
    renameSync(temporary, file)
  }

  /** Deletes a mail's file (nothing when it is gone already). */
  remove(id: number): void {
    rmSync(join(this.dir, `${String(id)}.json`), { force: true })
  }
}
