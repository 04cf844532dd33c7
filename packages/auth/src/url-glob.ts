/**
 * `URI_ALLOW_LIST` globs, with the semantics upstream gets from `gobwas/glob` compiled with the
 * separators `.` and `/`: `*` matches within one host label or path segment, `**` matches
 * anything, `?` one character other than a separator, `[abc]` / `[a-z]` / `[!abc]` one character
 * of (or not of) a set, `{a,b}` one of the alternatives, and `\` makes the next character
 * literal. The whole URL must match.
 *
 * Written here rather than taken from a glob library: the well-kept ones (picomatch, micromatch,
 * minimatch) only know `/` as a separator (and add path rules: dot-files, `**` only as a whole
 * segment), and wildcard-match/outmatch accept one separator string, not a set of two characters.
 * None can say "`*` stops at `.` or `/`".
 *
 * @see https://github.com/gobwas/glob
 * @module
 */

/** A malformed glob (an unclosed `[` or `{`, an empty `[]`, a trailing `\`). */
export class GlobSyntaxError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'GlobSyntaxError'
  }
}

/** One character other than the separators `.` and `/` (what `*` and `?` match). */
const NOT_SEPARATOR = '[^./]'

const escapeRegExp = (ch: string): string => ch.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')

class GlobParser {
  #pos = 0
  readonly #glob: string

  constructor(glob: string) {
    this.#glob = glob
  }

  /** The regular expression source of the glob, from the current position. */
  parse(inAlternative: boolean): string {
    let out = ''
    const glob = this.#glob
    while (this.#pos < glob.length) {
      const ch = glob[this.#pos] ?? ''
      if (inAlternative && (ch === ',' || ch === '}')) return out
      this.#pos++
      if (ch === '*') {
        if (glob[this.#pos] === '*') {
          while (glob[this.#pos] === '*') this.#pos++
          out += '[\\s\\S]*'
        } else {
          out += `${NOT_SEPARATOR}*`
        }
      } else if (ch === '?') {
        out += NOT_SEPARATOR
      } else if (ch === '[') {
        out += this.#characterClass()
      } else if (ch === '{') {
        out += this.#alternatives()
      } else if (ch === '\\') {
        const next = glob[this.#pos]
        if (next === undefined)
          throw new GlobSyntaxError(`"${glob}": a trailing \\ escapes nothing`)
        this.#pos++
        out += escapeRegExp(next)
      } else {
        out += escapeRegExp(ch)
      }
    }
    if (inAlternative) throw new GlobSyntaxError(`"${glob}": { is not closed by }`)
    return out
  }

  #characterClass(): string {
    const glob = this.#glob
    const end = glob.indexOf(']', this.#pos)
    if (end === -1) throw new GlobSyntaxError(`"${glob}": [ is not closed by ]`)
    let body = glob.slice(this.#pos, end)
    this.#pos = end + 1
    const negated = body.startsWith('!')
    if (negated) body = body.slice(1)
    if (body === '') throw new GlobSyntaxError(`"${glob}": [] names no character`)
    let set = ''
    for (let i = 0; i < body.length; i++) {
      const from = body[i] ?? ''
      if (body[i + 1] === '-' && i + 2 < body.length) {
        const to = body[i + 2] ?? ''
        if (to < from) throw new GlobSyntaxError(`"${glob}": the range ${from}-${to} is reversed`)
        set += `${escapeRegExp(from)}-${escapeRegExp(to)}`
        i += 2
      } else {
        set += escapeRegExp(from)
      }
    }
    return `[${negated ? '^' : ''}${set}]`
  }

  #alternatives(): string {
    const options: string[] = []
    for (;;) {
      options.push(this.parse(true))
      const ch = this.#glob[this.#pos]
      this.#pos++
      if (ch === '}') return `(?:${options.join('|')})`
      // ch is ',': another alternative follows (parse(true) stops only at ',' or '}').
    }
  }
}

/**
 * Compiles a `URI_ALLOW_LIST` glob to an anchored regular expression (see the module's notes
 * for the syntax).
 *
 * @param glob For example `https://*.example.com/**`.
 * @throws {@link GlobSyntaxError} When the glob is malformed.
 */
export function compileGlob(glob: string): RegExp {
  return new RegExp(`^${new GlobParser(glob).parse(false)}$`)
}
