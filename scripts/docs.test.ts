/**
 * The documentation says what the code does: in every Markdown file of the repository, each
 * relative link (and its `#anchor`) resolves, each `npm run <script>` exists, each
 * `npx gatehouse-…` command line parses (each executable's own parser), each setting named in a settings table or set for a
 * server in a command exists in that server's field table (and each field is documented), and
 * the usage block of the auth README is the executable's.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { parseArgs as parseAuthArgs, USAGE as AUTH_USAGE } from '../packages/auth/src/cli.js'
import { settingsTable as authTable } from '../packages/auth/src/conf/settings.js'
import { parseServiceArgs } from '#internal/ratelimit/cli.js'
import { parseClientArgs } from '#internal/ratelimit/client/args.js'
import { settingsTable as rateLimitTable } from '#internal/ratelimit/settings/settings.js'
import { renderSettingsDoc, SETTINGS_DOCS } from './settings-docs.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** Every Markdown file git knows (the repository's docs; nothing under node_modules). */
const MARKDOWN = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
  cwd: root,
  encoding: 'utf8',
})
  .split('\n')
  .filter((path) => path.endsWith('.md') && existsSync(join(root, path)))

interface Doc {
  readonly path: string
  /** Lines outside fenced code blocks, inline code removed (for links). */
  readonly prose: string
  /** The headings, as written. */
  readonly headings: readonly string[]
  /** Fenced code blocks with their info string. */
  readonly blocks: readonly { readonly lang: string; readonly text: string }[]
  /** Inline code spans of the prose. */
  readonly inline: readonly string[]
  readonly text: string
}

function readDoc(path: string): Doc {
  const text = readFileSync(join(root, path), 'utf8')
  const blocks: { lang: string; text: string }[] = []
  const prose: string[] = []
  let block: { lang: string; lines: string[]; fence: string } | undefined
  for (const line of text.split('\n')) {
    const fence = /^\s*(`{3,}|~{3,})\s*([\w-]*)/.exec(line)
    if (block === undefined && fence !== null) {
      block = { lang: fence[2] ?? '', lines: [], fence: fence[1] ?? '```' }
    } else if (block !== undefined && line.trim().startsWith(block.fence)) {
      blocks.push({ lang: block.lang, text: block.lines.join('\n') })
      block = undefined
    } else if (block !== undefined) block.lines.push(line)
    else prose.push(line)
  }
  const joined = prose.join('\n')
  const inline = [...joined.matchAll(/(`+)([^`]+?)\1/g)].map((match) => match[2] ?? '')
  const headings = prose.flatMap((line) => /^#{1,6}\s+(.+)$/.exec(line)?.[1] ?? [])
  return { path, text, blocks, inline, headings, prose: joined.replace(/(`+)[^`]+?\1/g, '') }
}

const DOCS = MARKDOWN.map(readDoc)

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>()
  const counts = new Map<string, number>()
  const doc = DOCS.find((d) => d.path === path) ?? readDoc(path)
  for (const heading of doc.headings) {
    const base = slug(heading)
    const seen = counts.get(base) ?? 0
    anchors.add(seen === 0 ? base : `${base}-${String(seen)}`)
    counts.set(base, seen + 1)
  }
  return anchors
}

/** The logical lines of a shell block: continuations joined, comments dropped. */
function shellCommands(text: string): string[] {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
    .filter((line) => line !== '')
}

/** Shell words of one command (quotes removed; no expansion). */
function words(command: string): string[] {
  return [...command.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map(
    (match) => match[1] ?? match[2] ?? match[3] ?? '',
  )
}

/** Each simple command of a line (split at `&&`, `||`, `|`, `;`, `&`), as words. */
function simpleCommands(line: string): string[][] {
  return line
    .split(/&&|\|\||[|;&]/)
    .map((part) => words(part.trim()))
    .filter((part) => part.length > 0)
}

/** Every command line the docs show: shell blocks' lines and inline code that is a command. */
const COMMANDS = DOCS.flatMap((doc) => [
  ...doc.blocks
    .filter((block) => ['sh', 'bash', 'shell', 'console', ''].includes(block.lang))
    .flatMap((block) => shellCommands(block.text))
    .map((command) => ({ path: doc.path, command })),
  ...doc.inline
    .filter((code) => /^(npx|npm|node|[A-Z_]+=)/.test(code))
    .map((command) => ({ path: doc.path, command })),
])

/** The arguments after `npx <bin>` in a simple command (before a redirection), or none. */
function argumentsOf(command: string[], bin: string): string[] | undefined {
  const at = command.findIndex((word, i) => word === bin && command[i - 1] === 'npx')
  if (at === -1) return undefined
  const rest = command.slice(at + 1)
  const redirect = rest.findIndex((word) => /^[0-9]?>/.test(word))
  return redirect === -1 ? rest : rest.slice(0, redirect)
}

/** `NAME=value` words before the command word (and after `export`). */
function assignments(command: string[]): string[] {
  const names: string[] = []
  for (const word of command[0] === 'export' ? command.slice(1) : command) {
    const match = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(word)
    if (match === null) break
    names.push(match[1] ?? '')
  }
  return names
}

/** Each field of a field table, as its names (the name, then its aliases). */
function fieldsOf(table: unknown): string[][] {
  return [...(table as { defaults(): Map<string, string> }).defaults().keys()].map((key) =>
    key.split(' | '),
  )
}
const AUTH_FIELDS = fieldsOf(authTable)
const RATELIMIT_FIELDS = fieldsOf(rateLimitTable)
const AUTH_NAMES = new Set(AUTH_FIELDS.flat())
const RATELIMIT_NAMES = new Set(RATELIMIT_FIELDS.flat())

/** A name with placeholders (`<LOCALE>`) as a pattern of the names it stands for. */
const placeholderPattern = (name: string): RegExp =>
  new RegExp(`^${name.replace(/<[A-Z]+>/g, '[A-Z0-9_<>]+')}$`)

/** Families of the auth table (`MAILER_SUBJECTS_INVITE_<LOCALE>`), as patterns of their members. */
const AUTH_FAMILIES = [...AUTH_NAMES].filter((n) => n.includes('<')).map(placeholderPattern)

/** Whether `name` is an auth setting: a field's name, or a member of a family. */
const isAuthSetting = (name: string): boolean =>
  AUTH_NAMES.has(name) || AUTH_FAMILIES.some((family) => family.test(name))

/**
 * The names in the first cell of a settings table's row: `A`, `A` / `B`, `A`, `_SUFFIX` (the
 * first name's stem with another ending), `EXTERNAL_<PROVIDER>_ENABLED` (a family).
 */
function rowNames(
  cell: string,
  known: ReadonlySet<string>,
): { name: string; found: boolean; resolved: string[] }[] {
  const tokens = [...cell.matchAll(/`([A-Z_<>][A-Z0-9_<>]*)`/g)].map((match) => match[1] ?? '')
  const first = tokens[0] ?? ''
  return tokens.map((token) => {
    if (token.includes('<')) {
      const pattern = placeholderPattern(token)
      const resolved = [...known].filter((name) => pattern.test(name))
      return { name: token, found: resolved.length > 0, resolved }
    }
    if (token.startsWith('_')) {
      const stems = [...first.matchAll(/_/g)].map((match) => first.slice(0, match.index))
      const resolved = stems.map((stem) => stem + token).filter((name) => known.has(name))
      return { name: token, found: resolved.length > 0, resolved }
    }
    return { name: token, found: known.has(token), resolved: known.has(token) ? [token] : [] }
  })
}

/** The first cells of the rows of every table whose header is `Name` or `Variable`. */
function settingsCells(path: string): string[] {
  const cells: string[] = []
  let inTable = false
  for (const line of readFileSync(join(root, path), 'utf8').split('\n')) {
    if (!line.startsWith('|')) {
      inTable = false
      continue
    }
    const first = line.split('|')[1]?.trim() ?? ''
    if (/^(Name|Variable)$/.test(first)) inTable = true
    else if (inTable && !/^-+$/.test(first)) cells.push(first)
  }
  return cells
}

/** Settings read outside the field table, by design (documented families). */
const DYNAMIC_SETTINGS = [/^DOG_STATSD_MOGRIFIER_<NAME>_/]

describe('documentation', () => {
  it('is found: every README, CONTRIBUTING and SECURITY file', () => {
    expect(MARKDOWN).toContain('README.md')
    expect(MARKDOWN).toContain('CONTRIBUTING.md')
    expect(MARKDOWN).toContain('SECURITY.md')
    expect(MARKDOWN).toContain('packages/auth/README.md')
  })

  it('links only to files and headings that exist', () => {
    const broken: string[] = []
    for (const doc of DOCS) {
      for (const [, target = ''] of doc.prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // https:, mailto:, …
        const [file = '', anchor] = target.split('#')
        const path = file === '' ? doc.path : join(dirname(doc.path), decodeURI(file))
        const absolute = join(root, path)
        if (!existsSync(absolute)) {
          broken.push(`${doc.path}: ${target} (no such file)`)
          continue
        }
        if (anchor !== undefined && anchor !== '') {
          const target_ = statSync(absolute).isDirectory() ? join(path, 'README.md') : path
          if (
            target_.endsWith('.md') &&
            !anchorsOf(relative(root, join(root, target_))).has(anchor)
          ) {
            broken.push(`${doc.path}: ${target} (no such heading)`)
          }
        }
      }
    }
    expect(broken).toEqual([])
  })

  it('names only files and directories that exist', () => {
    // Paths in code spans are written relative to the doc, the repository, a package (or its
    // src/), or the directory the surrounding text names: a tracked file ending so is enough.
    const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .map((file) => `/${file}`)
    const bases = [
      '',
      ...['packages', 'tools'].flatMap((dir) =>
        execFileSync('git', ['ls-files', '--', `${dir}/*/package.json`], {
          cwd: root,
          encoding: 'utf8',
        })
          .split('\n')
          .filter((line) => line !== '')
          .flatMap((manifest) => [dirname(manifest), join(dirname(manifest), 'src')]),
      ),
    ]
    // Made at run time, or examples of names rather than files.
    const notFiles = [/^\.data\//, /^(config\.)?basic\.yaml$/, /^\.\.\/shared\//]
    const missing: string[] = []
    for (const doc of DOCS.filter((d) => !/CHANGELOG|RESULTS/.test(d.path))) {
      for (const code of doc.inline) {
        const path =
          /^[\w.@-][\w./@-]*\.(ts|js|json|yaml|yml|sql|proto|md|svg)$/.test(code) ||
          /^[\w.-]+\/[\w./-]*\/$/.test(code)
        if (!path || notFiles.some((pattern) => pattern.test(code))) continue
        const candidates = [join(dirname(doc.path), code), ...bases.map((base) => join(base, code))]
        const found =
          candidates.some((candidate) => existsSync(join(root, candidate))) ||
          tracked.some((file) => file.includes(`/${code}`))
        if (!found) {
          missing.push(`${doc.path}: ${code}`)
        }
      }
    }
    expect(missing).toEqual([])
  })

  it('names only npm scripts that exist', () => {
    const scriptsOf = (dir: string) =>
      (
        JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as {
          scripts?: Record<string, string>
        }
      ).scripts ?? {}
    const missing: string[] = []
    for (const { path, command } of COMMANDS) {
      for (const words_ of simpleCommands(command)) {
        if (words_[0] !== 'npm') continue
        const script =
          words_[1] === 'run'
            ? words_[2]
            : ['test', 'start'].includes(words_[1] ?? '')
              ? words_[1]
              : undefined
        if (script === undefined) continue
        const w = words_.findIndex((word) => word === '-w' || word === '--workspace')
        const dir = w === -1 ? '.' : (words_[w + 1] ?? '')
        if (!(script in scriptsOf(dir))) missing.push(`${path}: ${command}`)
      }
    }
    expect(missing).toEqual([])
  })

  it('shows gatehouse-auth, gatehouse-ratelimit and gatehouse-ratelimit-client command lines that parse', () => {
    const parsers: readonly (readonly [string, (argv: string[]) => unknown])[] = [
      ['gatehouse-auth', parseAuthArgs],
      ['gatehouse-ratelimit', parseServiceArgs],
      ['gatehouse-ratelimit-client', parseClientArgs],
    ]
    const refused: string[] = []
    let checked = 0
    for (const { path, command } of COMMANDS) {
      for (const words_ of simpleCommands(command)) {
        for (const [bin, parse] of parsers) {
          const args = argumentsOf(words_, bin)
          if (args === undefined) continue
          checked++
          try {
            parse(args)
          } catch (error) {
            refused.push(`${path}: ${command}: ${(error as Error).message}`)
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(5)
    expect(refused).toEqual([])
  })

  it('shows paths that exist in node, tsx and vitest command lines', () => {
    const missing: string[] = []
    for (const { path, command } of COMMANDS) {
      for (const words_ of simpleCommands(command)) {
        const runner =
          words_[0] === 'node' ||
          words_[0] === 'tsx' ||
          (words_[0] === 'npx' &&
            (words_[1] === 'tsx' || (words_[1] === 'vitest' && words_[2] === 'run')))
        if (!runner) continue
        for (const word of words_.slice(1)) {
          if (!/^(packages|tools|scripts|examples|bench)\/[\w./-]*$/.test(word)) continue
          if (!existsSync(join(root, word))) missing.push(`${path}: ${word}`)
        }
      }
    }
    expect(missing).toEqual([])
  })

  it('sets only settings that exist, for the server the command runs', () => {
    const unknown: string[] = []
    for (const { path, command } of COMMANDS) {
      for (const words_ of simpleCommands(command)) {
        for (const name of assignments(words_)) {
          const prefixed = /^(AUTHSVC|GOTRUE)_(.+)$/.exec(name)
          if (prefixed !== null) {
            if (!isAuthSetting(prefixed[2] ?? '')) unknown.push(`${path}: ${name}`)
          } else if (argumentsOf(words_, 'gatehouse-ratelimit') !== undefined) {
            if (!RATELIMIT_NAMES.has(name)) unknown.push(`${path}: ${name} (gatehouse-ratelimit)`)
          } else if (argumentsOf(words_, 'gatehouse-auth') !== undefined) {
            if (!isAuthSetting(name)) unknown.push(`${path}: ${name} (gatehouse-auth)`)
          }
        }
      }
    }
    expect(unknown).toEqual([])
  })

  it.each([
    ['packages/auth/README.md', AUTH_FIELDS],
    ['packages/ratelimit/README.md', RATELIMIT_FIELDS],
  ] as const)('%s documents exactly the settings of its field table', (path, fields) => {
    const known = new Set(fields.flat())
    const documented = settingsCells(path).flatMap((cell) => rowNames(cell, known))
    expect(documented.length).toBeGreaterThan(50)
    const notInTable = documented
      .filter(({ name, found }) => !found && !DYNAMIC_SETTINGS.some((p) => p.test(name)))
      .map(({ name }) => name)
    expect(notInTable).toEqual([])
    // Every field of the table has a row (under one of its names).
    const rows = new Set(documented.flatMap(({ resolved }) => resolved))
    const undocumented = fields
      .filter((names) => !names.some((name) => rows.has(name)))
      .map((names) => names.join(' | '))
    expect(undocumented).toEqual([])
  })

  it.each(SETTINGS_DOCS.map((doc) => [doc.readme, doc] as const))(
    '%s holds the settings tables its field table renders (npm run docs:settings)',
    (path, doc) => {
      const text = readFileSync(join(root, path), 'utf8')
      expect(renderSettingsDoc(doc, text)).toBe(text)
    },
  )

  it("shows gatehouse-auth's usage as the executable prints it", () => {
    const readme = readFileSync(join(root, 'packages/auth/README.md'), 'utf8')
    const block = /```text\n(Usage: gatehouse-auth[\s\S]*?)```/.exec(readme)?.[1] ?? ''
    expect(block).not.toBe('')
    const usage = AUTH_USAGE.split('\n')
    const notPrinted = block
      .split('\n')
      .filter((line) => line.trim() !== '' && !usage.includes(line))
    expect(notPrinted).toEqual([])
  })

  it('shows each example file as it is, where a README quotes one', () => {
    const quoted: string[] = []
    const different: string[] = []
    for (const doc of DOCS) {
      const pattern = /```ts\n((?:(?!```)[\s\S])*?)```\n\n\(\[`(examples\/[\w/-]+\.ts)`\]/g
      for (const [, code = '', file = ''] of doc.text.matchAll(pattern)) {
        quoted.push(file)
        const source = readFileSync(join(root, dirname(doc.path), file), 'utf8')
        // The file's lint header is left out of the README.
        if (source.replace(/^\/\* eslint-disable[^\n]*\n/, '') !== code) {
          different.push(`${doc.path}: ${file}`)
        }
      }
    }
    expect(quoted.length).toBeGreaterThan(10)
    expect(different).toEqual([])
  })

  it('gives each published package an install line in its README', () => {
    for (const name of ['oauth2', 'auth', 'ratelimit', 'settings', 'telemetry']) {
      const readme = readFileSync(join(root, 'packages', name, 'README.md'), 'utf8')
      expect(readme, name).toContain(`npm install @gatehouse/${name}\n`)
    }
  })

  it('lists every package and tool in the root README layout', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    const layout = /## Repository layout\n\n```\n([\s\S]*?)```/.exec(readme)?.[1] ?? ''
    for (const dir of ['packages', 'tools']) {
      for (const entry of execFileSync('git', ['ls-files', '--', `${dir}/*/package.json`], {
        cwd: root,
        encoding: 'utf8',
      })
        .split('\n')
        .filter((line) => line !== '')) {
        expect(layout, entry).toContain(dirname(entry))
      }
    }
  })
})
