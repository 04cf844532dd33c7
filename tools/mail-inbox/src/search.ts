/**
 * The inbox's search: words (or `"quoted phrases"`) that must all be found, case-insensitive,
 * in a mail's sender, recipients, subject or text; `from:`, `to:` and `subject:` narrow a word to
 * one field (`to:ann subject:"reset your password"`), as in Mailpit.
 *
 * @module
 */

/** The fields a search reads. */
export interface Searchable {
  readonly from: string
  readonly to: readonly string[]
  readonly subject: string
  readonly text: string
}

type Field = 'from' | 'to' | 'subject'

/** One condition of a query. */
export interface SearchTerm {
  /** The field, or `undefined` for any. */
  readonly field: Field | undefined
  /** Lower-cased. */
  readonly word: string
}

const TERM = /(?:(from|to|subject):)?(?:"([^"]*)"?|(\S+))/gi

/** Splits a query into its terms (empty words are dropped). */
export function parseQuery(query: string): SearchTerm[] {
  return [...query.matchAll(TERM)].flatMap((m) => {
    const word = (m[2] ?? m[3] ?? '').toLowerCase()
    const field = m[1]?.toLowerCase() as Field | undefined
    return word === '' ? [] : [{ field, word }]
  })
}

function fieldText(mail: Searchable, field: Field | undefined): string {
  switch (field) {
    case 'from':
      return mail.from
    case 'to':
      return mail.to.join(' ')
    case 'subject':
      return mail.subject
    case undefined:
      return `${mail.from}\n${mail.to.join(' ')}\n${mail.subject}\n${mail.text}`
  }
}

/** Whether `mail` has every term of `query` (an empty query matches every mail). */
export function matchesQuery(mail: Searchable, query: string): boolean {
  return parseQuery(query).every(({ field, word }) =>
    fieldText(mail, field).toLowerCase().includes(word),
  )
}
