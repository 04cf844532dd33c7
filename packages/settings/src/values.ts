/**
 * Booleans, lists and maps in environment variables, spelled as upstream's Go servers read them
 * (`strconv.ParseBool`, envconfig's maps).
 *
 * @module
 */
import { ValueError } from './errors.js'

const TRUE: ReadonlySet<string> = new Set(['1', 't', 'T', 'TRUE', 'true', 'True'])
const FALSE: ReadonlySet<string> = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False'])

/**
 * Parses a boolean as Go's `strconv.ParseBool` does: `1`, `t`, `T`, `TRUE`, `true`, `True` and
 * `0`, `f`, `F`, `FALSE`, `false`, `False`; nothing else (not `yes`, `on`, nor `tRuE`).
 *
 * @param text The variable's value.
 * @throws {@link ValueError} `ERR_INVALID_BOOLEAN`, with Go's message
 *   `strconv.ParseBool: parsing "yes": invalid syntax`.
 * @see https://pkg.go.dev/strconv#ParseBool
 */
export function parseBool(text: string): boolean {
  if (TRUE.has(text)) return true
  if (FALSE.has(text)) return false
  throw new ValueError(
    `strconv.ParseBool: parsing ${JSON.stringify(text)}: invalid syntax`,
    'ERR_INVALID_BOOLEAN',
  )
}

/**
 * Splits a list: items separated by `separator`, blanks around each item trimmed, empty items
 * dropped (`a, b,,c` is `['a', 'b', 'c']`; the empty text is the empty list).
 *
 * @param text The variable's value.
 * @param separator Between items. @default ','
 */
export function parseList(text: string, separator = ','): string[] {
  return text
    .split(separator)
    .map((item) => item.trim())
    .filter((item) => item !== '')
}

/**
 * Parses a map in envconfig's syntax, `k1:v1,k2:v2` (as ratelimit's `EXTRA_TAGS`): pairs separated
 * by commas, each key separated from its value by the first colon; nothing is trimmed, a later
 * key wins, and the empty text is the empty map.
 *
 * @param text The variable's value.
 * @returns A map with a `null` prototype.
 * @throws {@link ValueError} `ERR_INVALID_MAP` when an item has no colon or an empty key.
 */
export function parseMap(text: string): Record<string, string> {
  const map: Record<string, string> = Object.create(null) as Record<string, string>
  if (text === '') return map
  for (const item of text.split(',')) {
    const colon = item.indexOf(':')
    if (colon <= 0) {
      throw new ValueError(`invalid map item: ${JSON.stringify(item)}`, 'ERR_INVALID_MAP')
    }
    map[item.slice(0, colon)] = item.slice(colon + 1)
  }
  return map
}
