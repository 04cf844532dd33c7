/**
 * A `*` pattern of a descriptor key: `*` matches zero or more characters and may appear anywhere,
 * several times (each `*` matches an independent segment, in order).
 */
export interface WildcardPattern {
  /** Literal text before the first `*`. */
  readonly first: string
  /** Literal segments between stars, in order. */
  readonly middle: readonly string[]
  /** Literal text after the last `*`. */
  readonly last: string
  /** Length of the literal text. */
  readonly minLength: number
}

/** Splits a pattern such as `key_foo*bar*` on `*`. */
export function compileWildcard(pattern: string): WildcardPattern {
  const parts = pattern.split('*')
  const first = parts.shift() ?? ''
  const last = parts.pop() ?? ''
  return {
    first,
    middle: parts,
    last,
    minLength: first.length + last.length + parts.join('').length,
  }
}

/**
 * Whether `text` matches: starts with the first part, ends with the last, and contains the middle
 * parts in order without overlapping.
 */
export function matchWildcard(pattern: WildcardPattern, text: string): boolean {
  const { first, middle, last } = pattern
  if (text.length < pattern.minLength) return false
  if (!text.startsWith(first) || !text.endsWith(last)) return false
  let pos = first.length
  const end = text.length - last.length
  for (const part of middle) {
    const found = text.indexOf(part, pos)
    if (found < 0 || found + part.length > end) return false
    pos = found + part.length
  }
  return true
}
