/**
 * Parses the text of a `.env` file: `NAME=value` lines, `#` comments, an optional `export `
 * prefix, and values in single quotes (literal), double quotes (with `\n`, `\t`, `\"` and `\\`
 * escapes) or unquoted (trailing ` #comment` removed, surrounding blanks trimmed).
 *
 * @param text The file's contents.
 * @returns The variables in file order; a later line wins over an earlier one.
 */
export function parseEnvFile(text: string): Record<string, string> {
  const result: Record<string, string> = {}
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine.trim()
    if (line === '' || line.startsWith('#')) continue
    const match = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)$/.exec(line)
    if (match === null) continue
    const name = match[1] ?? ''
    let value = match[2] ?? ''
    if (value.startsWith("'")) {
      const end = value.indexOf("'", 1)
      value = end === -1 ? value.slice(1) : value.slice(1, end)
    } else if (value.startsWith('"')) {
      let out = ''
      for (let i = 1; i < value.length; i++) {
        const ch = value[i]
        if (ch === '"') break
        if (ch === '\\' && i + 1 < value.length) {
          i++
          const next = value[i]
          out += next === 'n' ? '\n' : next === 't' ? '\t' : next === 'r' ? '\r' : (next ?? '')
        } else {
          out += ch ?? ''
        }
      }
      value = out
    } else {
      value = value.replace(/\s+#.*$/, '').trim()
    }
    result[name] = value
  }
  return result
}
