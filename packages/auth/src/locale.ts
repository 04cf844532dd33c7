/**
 * Languages of mails and SMS (beyond upstream, supabase/auth#80): language tags in their canonical
 * form, the reader's preferences (`user_metadata.locale`, then the request's `Accept-Language`)
 * and the lookup of the best locale a message has (RFC 4647 §3.4).
 *
 * @module
 */

/** Longest `Accept-Language` read, in characters; the rest is ignored. */
export const ACCEPT_LANGUAGE_MAX_CHARS = 512

/** Most languages read from one `Accept-Language`. */
const ACCEPT_LANGUAGE_MAX_RANGES = 16

/** A language tag as people write it: `de`, `pt-BR`, `zh-Hant-TW` (or with `_`). */
const TAG = /^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$/

/**
 * The canonical form of a language tag (`pt_br` and `PT-BR` are `pt-BR`; `zh-hant` is `zh-Hant`),
 * or `undefined` when it is not one (`*`, `german`, `en-`).
 *
 * @param tag A tag, with `-` or `_` between its subtags.
 * @see https://www.rfc-editor.org/rfc/rfc5646 (BCP 47)
 */
export function canonicalLocale(tag: string): string | undefined {
  if (!TAG.test(tag)) return undefined
  try {
    return Intl.getCanonicalLocales(tag.replaceAll('_', '-'))[0]
  } catch {
    return undefined
  }
}

/**
 * The languages of an `Accept-Language` header, most preferred first (by `q`, then in the
 * header's order): canonical tags, without `*`, ranges with `q=0` and malformed entries. At most
 * {@link ACCEPT_LANGUAGE_MAX_CHARS} characters and 16 ranges are read.
 *
 * @param header The header's value; `''` when absent.
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-12.5.4
 */
export function acceptedLanguages(header: string): string[] {
  const ranges: { readonly tag: string; readonly q: number; readonly at: number }[] = []
  const parts = header.slice(0, ACCEPT_LANGUAGE_MAX_CHARS).split(',')
  for (const [at, part] of parts.slice(0, ACCEPT_LANGUAGE_MAX_RANGES).entries()) {
    const [range = '', ...params] = part.split(';').map((p) => p.trim())
    const tag = canonicalLocale(range)
    if (tag === undefined) continue
    const qParam = params.find((p) => /^q=/i.test(p))
    const q =
      qParam === undefined
        ? 1
        : /^q=(0(\.\d{0,3})?|1(\.0{0,3})?)$/i.test(qParam)
          ? Number(qParam.slice(2))
          : 0
    if (q > 0) ranges.push({ tag, q, at })
  }
  ranges.sort((a, b) => b.q - a.q || a.at - b.at)
  return [...new Set(ranges.map((r) => r.tag))]
}

/**
 * A reader's languages, most preferred first: the user's own (`user_metadata.locale`, when it is
 * a language tag), then those of the request's `Accept-Language`.
 *
 * @param userLocale `user_metadata.locale`, any JSON value (only a string tag counts).
 * @param acceptLanguage The request's `Accept-Language`; `''` when absent (a queued mail, a CLI).
 */
export function readerLanguages(userLocale: unknown, acceptLanguage: string): string[] {
  const own = typeof userLocale === 'string' ? canonicalLocale(userLocale) : undefined
  return [...new Set([...(own === undefined ? [] : [own]), ...acceptedLanguages(acceptLanguage)])]
}

/**
 * The best of the `available` locales for a reader (RFC 4647 §3.4 lookup): each preference in
 * turn, as written, then shortened a subtag at a time (`zh-Hant-TW`, `zh-Hant`, `zh`); the first
 * available one wins. `undefined` when none matches: the default texts are used.
 *
 * @param preferences Canonical tags, most preferred first ({@link readerLanguages}).
 * @param available Canonical tags a message has texts in.
 */
export function lookupLocale(
  preferences: readonly string[],
  available: ReadonlySet<string>,
): string | undefined {
  if (available.size === 0) return undefined
  for (const preference of preferences) {
    const subtags = preference.split('-')
    while (subtags.length > 0) {
      const candidate = subtags.join('-')
      if (available.has(candidate)) return candidate
      subtags.pop()
      // A singleton (`-x-`, `-u-`) never ends a lookup candidate.
      if (subtags.at(-1)?.length === 1) subtags.pop()
    }
  }
  return undefined
}
