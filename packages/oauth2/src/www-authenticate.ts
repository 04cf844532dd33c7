/**
 * A reader of the `WWW-Authenticate` response header (RFC 9110 §11.6.1): what a resource server
 * says about the token it refused (RFC 6750 §3, RFC 9449 §7.1).
 *
 * @module
 */

/** One challenge of a `WWW-Authenticate` header. @internal */
export interface Challenge {
  /** The auth scheme, lowercase (`bearer`, `dpop`, `basic`, ...). */
  readonly scheme: string
  /** The auth parameters, lowercase names, quoted strings unquoted (`error`, `realm`, ...). */
  readonly params: Readonly<Record<string, string>>
  /** The token68 form of the credentials, when the challenge has one instead of parameters. */
  readonly token68?: string | undefined
}

const TOKEN = /[!#$%&'*+\-.^_`|~0-9A-Za-z]+/y
const TOKEN68 = /[A-Za-z0-9\-._~+/]+=*/y
const QUOTED = /"((?:[^"\\]|\\.)*)"/y
const SPACES = /[ \t]*/y
const SEPARATORS = /[ \t,]*/y

/** Matches `re` (sticky) at `at`; returns the match and where it ends. */
function at(re: RegExp, text: string, index: number): RegExpExecArray | undefined {
  re.lastIndex = index
  return re.exec(text) ?? undefined
}

function skip(re: RegExp, text: string, index: number): number {
  return at(re, text, index)?.[0].length === undefined ? index : re.lastIndex
}

/** Whether `index` ends an element of the list: the end of the header or a comma. */
function endsElement(text: string, index: number): boolean {
  return index >= text.length || text[index] === ','
}

/** `name = value` at `index` (value a token or quoted string), up to the end of the element. */
function param(
  text: string,
  index: number,
): { name: string; value: string; end: number } | undefined {
  const name = at(TOKEN, text, index)
  if (name === undefined) return undefined
  let i = skip(SPACES, text, TOKEN.lastIndex)
  if (text[i] !== '=') return undefined
  i = skip(SPACES, text, i + 1)
  let value: string
  const quoted = at(QUOTED, text, i)
  if (quoted !== undefined) {
    value = (quoted[1] ?? '').replace(/\\(.)/g, '$1')
    i = QUOTED.lastIndex
  } else {
    const token = at(TOKEN, text, i)
    if (token === undefined) return undefined
    value = token[0]
    i = TOKEN.lastIndex
  }
  i = skip(SPACES, text, i)
  return endsElement(text, i) ? { name: name[0].toLowerCase(), value, end: i } : undefined
}

/**
 * Parses a `WWW-Authenticate` header into its challenges. Reading stops at the first malformed
 * part; the challenges before it are returned (a hostile header costs one linear pass).
 *
 * @param header The header value (several headers joined with `, `, as responses hold them).
 * @returns The challenges, in order.
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-11.6.1
 * @internal
 */
export function parseWwwAuthenticate(header: string): Challenge[] {
  const challenges: Challenge[] = []
  let i = 0
  for (;;) {
    i = skip(SEPARATORS, header, i)
    const scheme = at(TOKEN, header, i)
    if (scheme === undefined) return challenges
    const afterScheme = TOKEN.lastIndex
    const params: Record<string, string> = {}
    i = skip(SPACES, header, afterScheme)
    if (endsElement(header, i)) {
      challenges.push({ scheme: scheme[0].toLowerCase(), params })
      continue
    }
    if (i === afterScheme) return challenges
    let first = param(header, i)
    if (first === undefined) {
      const token68 = at(TOKEN68, header, i)
      if (token68 === undefined) return challenges
      const end = skip(SPACES, header, TOKEN68.lastIndex)
      if (!endsElement(header, end)) return challenges
      challenges.push({ scheme: scheme[0].toLowerCase(), params, token68: token68[0] })
      i = end
      continue
    }
    // Parameters until an element that is not `name=value`: the next challenge's scheme.
    while (first !== undefined) {
      params[first.name] ??= first.value
      i = skip(SEPARATORS, header, first.end)
      first = param(header, i)
    }
    challenges.push({ scheme: scheme[0].toLowerCase(), params })
  }
}

/**
 * Whether `header` holds a challenge of one of `schemes` (lowercase) whose `error` is `error`
 * (RFC 6750 §3.1 `invalid_token`, RFC 9449 §9 `use_dpop_nonce`).
 *
 * @internal
 */
export function challengeError(
  header: string | undefined,
  schemes: readonly string[],
  error: string,
): boolean {
  if (header === undefined || !header.includes(error)) return false
  return parseWwwAuthenticate(header).some(
    (c) => schemes.includes(c.scheme) && c.params.error === error,
  )
}
