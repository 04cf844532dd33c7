/**
 * `.env` files, parsed by Node's own parser (`util.parseEnv`, the one behind `--env-file`).
 *
 * @module
 */
import { existsSync, readFileSync } from 'node:fs'
import { parseEnv } from 'node:util'

/**
 * Parses the text of a `.env` file with `util.parseEnv`: `NAME=value` lines, `#` comments, an
 * optional `export ` prefix, values in single, double (with `\n` escapes, and over several lines)
 * or back quotes, or unquoted (a trailing ` # comment` removed, blanks trimmed). A later line
 * wins; a line that is no assignment is skipped.
 *
 * Node 20 glues a line without `=` to the name of the next assignment (nodejs/node#56775, fixed in
 * later Node versions); such lines are skipped here as later versions skip them.
 *
 * @param text The file's contents.
 * @returns The variables.
 * @see https://nodejs.org/api/util.html#utilparseenvcontent
 */
export function parseEnvFile(text: string): Record<string, string> {
  const parsed = parseEnv(text)
  const glued = Object.keys(parsed).filter((name) => name.includes('\n'))
  if (glued.length === 0) return parsed as Record<string, string>
  // Comment out the lines Node glued to a name, where they stand (right before its assignment),
  // and parse again: those lines are outside any quoted value, or Node would not have glued them.
  const lines = text.split('\n')
  for (const name of glued) {
    const parts = name.split('\n').map((part) => part.trim())
    const last = parts.pop() ?? ''
    for (let i = 0; i + parts.length < lines.length; i++) {
      const matches =
        parts.every((part, j) => lines[i + j]?.trim() === part) &&
        (lines[i + parts.length] ?? '').trimStart().startsWith(last)
      if (!matches) continue
      for (let j = 0; j < parts.length; j++) lines[i + j] = `# ${lines[i + j] ?? ''}`
      break
    }
  }
  return parseEnv(lines.join('\n')) as Record<string, string>
}

/** Options of {@link readEnvFile}. */
export interface ReadEnvFileOptions {
  /** A missing file gives no variables instead of an error (auth's default `./.env`). */
  readonly optional?: boolean
}

/**
 * Reads and parses a `.env` file ({@link parseEnvFile}).
 *
 * @param path The file.
 * @param options Whether the file may be missing.
 * @returns The file's variables (none for a missing optional file).
 * @throws {Error} Node's error when the file cannot be read (`ENOENT`, `EACCES`…).
 * @example
 *
 * ```ts
 * import { readEnvFile } from '@gatehouse/settings'
 *
 * // The environment wins over the file.
 * const env = { ...readEnvFile('.env', { optional: true }), ...process.env }
 * ```
 */
export function readEnvFile(
  path: string,
  options: ReadEnvFileOptions = {},
): Record<string, string> {
  if (options.optional === true && !existsSync(path)) return {}
  return parseEnvFile(readFileSync(path, 'utf8'))
}
