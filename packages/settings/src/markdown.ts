/**
 * Settings tables in Markdown, from a field table, and the marked regions of a Markdown file
 * (a README) that hold them: the description of each setting is written once, on its field, and
 * both `--help` and the README are made from it.
 *
 * @module
 */

/** One row of a settings table: its names, its default as documented, its description. */
export interface MarkdownRow {
  /** The name, then the aliases (`REDIS_URL`, `KVSTORE_URL`). */
  readonly names: readonly string[]
  /** The Default cell, as Markdown (`` `8080` ``, `(empty)`, `required`, or a sentence). */
  readonly default: string
  /** The Meaning cell, as Markdown. */
  readonly meaning: string
}

/** Escapes what would end a table cell: `|` and line breaks. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ')
}

/**
 * A settings table, `| Variable | Default | Meaning |`, aligned as Prettier aligns Markdown tables
 * (so that a formatted README keeps it as rendered).
 *
 * @param rows The rows, in order.
 */
export function markdownTable(rows: readonly MarkdownRow[]): string {
  const lines = [
    ['Variable', 'Default', 'Meaning'],
    ...rows.map((row) => [
      row.names.map((name) => `\`${name}\``).join(' / '),
      cell(row.default),
      cell(row.meaning),
    ]),
  ]
  const widths = [0, 1, 2].map((i) => Math.max(3, ...lines.map((line) => (line[i] ?? '').length)))
  const format = (line: readonly string[]): string =>
    `| ${line.map((text, i) => text.padEnd(widths[i] ?? 0)).join(' | ')} |`
  const [header = [], ...body] = lines
  return [
    format(header),
    format(widths.map((width) => '-'.repeat(width))),
    ...body.map(format),
  ].join('\n')
}

/** The comments that open and close a region: `<!-- settings:redis:start -->`. */
function markers(section: string): { start: string; end: string } {
  return { start: `<!-- settings:${section}:start -->`, end: `<!-- settings:${section}:end -->` }
}

/**
 * The sections of the marked regions in a Markdown text, in order
 * (`<!-- settings:<section>:start -->` … `<!-- settings:<section>:end -->`).
 *
 * @param markdown The file's text.
 */
export function markedSections(markdown: string): string[] {
  return [...markdown.matchAll(/<!-- settings:([\w.-]+):start -->/g)].map((m) => m[1] ?? '')
}

/**
 * Replaces the content of one marked region of a Markdown text (`<!-- settings:<section>:start
 * -->`, a blank line, the content, a blank line, `<!-- settings:<section>:end -->`); the rest of
 * the text is kept as it is. Equal to `markdown` when the region is up to date.
 *
 * @param markdown The file's text.
 * @param section The region's name.
 * @param content The new content (a table), without surrounding blank lines.
 * @throws {TypeError} When the region's markers are missing, doubled or out of order.
 */
export function replaceMarkedRegion(markdown: string, section: string, content: string): string {
  const { start, end } = markers(section)
  const from = markdown.indexOf(start)
  const to = markdown.indexOf(end)
  if (
    from === -1 ||
    to < from ||
    markdown.indexOf(start, from + 1) !== -1 ||
    markdown.indexOf(end, to + 1) !== -1
  ) {
    throw new TypeError(`the Markdown text needs one region ${start} … ${end}, in this order`)
  }
  return `${markdown.slice(0, from)}${start}\n\n${content.trim()}\n\n${markdown.slice(to)}`
}
