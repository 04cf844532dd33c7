/**
 * A server's settings table: its fields, in order, with how their names are read. It gives the
 * loader (every problem at once, in table order), the defaults and the `--help` lines.
 *
 * @module
 */
import { SettingsError } from './errors.js'
import { Invalid, invalid, type FamilyRule, type Field, type InvalidOptions } from './fields.js'
import { markdownTable } from './markdown.js'

/** Fields of a table (or of a {@link Group}) by key; a key becomes a key of the values. */
export type Fields = { readonly [key: string]: Field<unknown> | Group<Fields> }

/** Fields that give a nested object of values. Made by {@link group}. */
export interface Group<F extends Fields> {
  /** Tells groups from fields. */
  readonly kind: 'group'
  /** The group's fields. */
  readonly fields: F
}

/**
 * Fields whose values form a nested object (as ratelimit's `redis` settings).
 *
 * @param fields The group's fields.
 */
export function group<const F extends Fields>(fields: F): Group<F> {
  return Object.freeze({ kind: 'group', fields })
}

/** The values a table of fields `F` gives. */
export type Values<F extends Fields> = {
  readonly [K in keyof F]: F[K] extends Field<infer T>
    ? T
    : F[K] extends Group<infer G>
      ? Values<G>
      : never
}

/**
 * The settings a table gives, derived from its fields (so that a server's `Settings` type is
 * never written by hand): `type Settings = SettingsOf<typeof settingsTable>`. The TSDoc of each
 * table entry carries over to the derived property.
 */
export type SettingsOf<T extends { readonly fields: Fields }> = Values<T['fields']>

/** Defaults as text for some fields of `F`: what {@link TableOptions.computedDefaults} answers. */
export type DefaultTexts<F extends Fields> = {
  readonly [K in keyof F]?: F[K] extends Group<infer G> ? DefaultTexts<G> : string
}

/** Environment variables: `process.env`, or a `.env` file overlaid with it. */
export type Env = Readonly<Record<string, string | undefined>>

/** How a table reads its variables. */
export interface TableOptions<F extends Fields, C> {
  /**
   * Tried in order before each field's name: `['AUTHSVC_', 'GOTRUE_']` reads `SITE_URL` as
   * `AUTHSVC_SITE_URL`, else `GOTRUE_SITE_URL`. A field's aliases are read as written, after
   * these.
   *
   * @default [''] (names as written)
   */
  readonly prefixes?: readonly string[]
  /**
   * When two names of one field are set to different values: `'first'` takes the first in
   * reading order (prefixes first); `'error'` reports `A and B are both set, to different values;
   * set one`.
   *
   * @default 'error'
   */
  readonly conflicts?: 'first' | 'error'
  /**
   * Defaults that depend on other settings or on the host, as text. Called once per read with
   * the values of explicitly set variables and constant defaults (a field with a computed default
   * holds its constant default meanwhile); a field that is set keeps its value.
   */
  readonly computedDefaults?: (values: Values<F>, context: C | undefined) => DefaultTexts<F>
}

/** What {@link SettingsTable.read} found: the values, and the problems so far. */
export interface SettingsRead<V> {
  /** Every field's value; meaningful only while {@link SettingsRead.problems} is empty. */
  readonly values: V
  /** The problems found so far, as {@link SettingsError.problems} will list them. */
  readonly problems: readonly string[]
  /**
   * Adds a problem of one field (a cross-field check); it is listed at the field's place in
   * the table, as `NAME: message (got "…")`, naming the variable that was set. Without a set
   * value there is no `(got …)`.
   *
   * @param field The field, from {@link SettingsTable.fields}.
   * @param message The problem, for example `must be 1 with BACKEND_TYPE=memory`.
   * @param options Whether the value is quoted. @default echo: true
   */
  report(field: Field<unknown>, message: string, options?: InvalidOptions): void
  /**
   * Ends the read: throws when any problem was found, else returns `settings` deep-frozen.
   *
   * @param settings The settings built from {@link SettingsRead.values}.
   * @throws {@link SettingsError} Listing every problem, in table order.
   */
  finish<S>(settings: S): Readonly<S>
}

/** Options of {@link SettingsTable.help}. */
export interface HelpOptions {
  /** Width of the names column. @default 40 */
  readonly width?: number
  /** Longest line; a longer description wraps under itself. @default no wrapping */
  readonly columns?: number
}

/** Options of {@link SettingsTable.markdown}. */
export interface MarkdownOptions {
  /**
   * The fields to list, as keys or dotted key paths of fields or groups (`'port'`, `'redis'`,
   * `'sms.twilio'`; a group lists its fields in table order), in this order.
   *
   * @default every field
   */
  readonly keys?: readonly string[]
}

/** A server's settings table; made by {@link defineSettings}. */
export interface SettingsTable<F extends Fields, C> {
  /** The fields, to name one in {@link SettingsRead.report}. */
  readonly fields: F
  /**
   * Reads every field from `env` (pure: reads nothing else), collecting every problem.
   *
   * @param env The variables; an empty value counts as unset.
   * @param context For {@link TableOptions.computedDefaults} (the host's cores…).
   */
  read(env: Env, context?: C): SettingsRead<Values<F>>
  /**
   * Every variable with its default as text (empty when it has none), in table order; the names
   * of one field joined with ` | ` (`REDIS_URL | KVSTORE_URL`).
   *
   * @param context For computed defaults.
   */
  defaults(context?: C): ReadonlyMap<string, string>
  /**
   * The `--help` lines: `  NAME  default`, or `  NAME  help (default)` for a field with help
   * (its first sentence, wrapped under itself; one element per field, lines joined with `\n`);
   * `(none)` for an empty default, `required` for a required field.
   *
   * @param context For computed defaults.
   * @param options Column width.
   */
  help(context?: C, options?: HelpOptions): string[]
  /**
   * A README settings table, `| Variable | Default | Meaning |`: the names (aliases after ` / `),
   * the constant default (`(empty)`, `required`, or the field's
   * {@link FieldOptions.computedDefault}) and the whole {@link FieldOptions.help}. Independent of
   * the host. Put it in a README with {@link replaceMarkedRegion}.
   *
   * @param options Which fields.
   * @throws {TypeError} When a key names no field or group.
   */
  markdown(options?: MarkdownOptions): string
}

interface Entry {
  readonly field: Field<unknown>
  readonly path: readonly string[]
}

interface State {
  readonly index: number
  readonly found?: { readonly name: string; readonly text: string }
}

function flatten(fields: Fields, path: readonly string[], out: Entry[]): Entry[] {
  for (const [key, item] of Object.entries(fields)) {
    if (item.kind === 'group') flatten(item.fields, [...path, key], out)
    else out.push({ field: item, path: [...path, key] })
  }
  return out
}

function lookupPath(root: unknown, path: readonly string[]): unknown {
  let node = root
  for (const key of path) {
    if (typeof node !== 'object' || node === null) return undefined
    node = (node as Record<string, unknown>)[key]
  }
  return node
}

function assign(root: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = root
  for (const key of path.slice(0, -1)) {
    node[key] ??= {}
    node = node[key] as Record<string, unknown>
  }
  node[path.at(-1) ?? ''] = value
}

/**
 * The first sentence of a field's description, as plain text, for `--help`: code spans and links
 * lose their Markdown, a final period goes.
 */
export function helpSummary(description: string): string {
  const plain = description
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`([^`]*)`/g, '$1')
    .replace(/\s+/g, ' ')
    .trim()
  const end = /[.!?](?=\s+[A-Z(]|$)/.exec(plain)
  return end === null ? plain : plain.slice(0, end.index)
}

/** Splits a text into lines of at most `columns` characters at spaces (a longer word stays whole). */
function wrap(text: string, columns: number): string[] {
  const lines: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > columns) {
      lines.push(line)
      line = word
    } else line = line === '' ? word : `${line} ${word}`
  }
  return [...lines, line]
}

/** A field's names for `--help` and {@link SettingsTable.defaults}: `REDIS_URL | KVSTORE_URL`. */
function displayName(field: Field<unknown>): string {
  return [...new Set(field.names)].join(' | ')
}

function deepFreeze<T>(value: T): Readonly<T> {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const inner of Object.values(value)) deepFreeze(inner)
  }
  return value
}

/** Parses a default text, which must be valid: a bad default is a bug in the table. */
function parseDefault(field: Field<unknown>, text: string): unknown {
  const value = field.parse(text)
  if (value instanceof Invalid) {
    throw new TypeError(
      `the default ${JSON.stringify(text)} of ${field.names[0]} is invalid: ${value.messages.join('; ')}`,
    )
  }
  return value
}

/**
 * Defines a server's settings table: each field's names and default are written once, here, and
 * give the loader, its problems and `--help`.
 *
 * @param fields The fields, in the order problems and `--help` list them.
 * @param options Prefixes, how conflicting names are treated, computed defaults.
 * @throws {TypeError} When a field object stands twice in the table.
 * @example
 *
 * ```ts
 * import { bool, defineSettings, duration, port } from '@gatehouse/settings'
 *
 * const table = defineSettings({
 *   port: port('PORT', { default: '8080' }),
 *   timeoutMs: duration(['REDIS_TIMEOUT', 'KVSTORE_TIMEOUT'], { default: '10s' }),
 *   shadowMode: bool('SHADOW_MODE'),
 * })
 * const read = table.read(process.env)
 * if (read.values.shadowMode && read.values.port === 0) read.report(table.fields.port, 'must be set')
 * const settings = read.finish({ ...read.values }) // throws SettingsError listing every problem
 * ```
 */
export function defineSettings<const F extends Fields, C = undefined>(
  fields: F,
  options: TableOptions<F, C> = {},
): SettingsTable<F, C> {
  const entries = flatten(fields, [], [])
  if (new Set(entries.map((e) => e.field)).size !== entries.length) {
    throw new TypeError('a field object stands twice in the settings table')
  }
  const prefixes = options.prefixes ?? ['']
  const candidates = (field: Field<unknown>): string[] => [
    ...new Set([...prefixes.map((p) => `${p}${field.names[0]}`), ...field.names.slice(1)]),
  ]
  /** The name problems give an unset field: its first candidate (`AUTHSVC_SITE_URL`). */
  const firstName = (field: Field<unknown>): string => candidates(field)[0] ?? field.names[0]
  /** Every variable a single field reads: never a family's member. */
  const singles = new Set(entries.flatMap(({ field }) => (field.family ? [] : candidates(field))))

  /**
   * Reads a family's members (see `family`): each set variable whose name is a candidate's stem
   * and a suffix, keyed by the rule, parsed by the member's parser. The first name in reading
   * order wins a key; another set to a different value is a problem unless conflicts are `first`.
   */
  function readFamily(
    env: Env,
    field: Field<unknown>,
    rule: FamilyRule,
    index: number,
    problems: { index: number; text: string }[],
  ): Record<string, unknown> {
    const members: Record<string, unknown> = {}
    const seen = new Map<string, { readonly name: string; readonly text: string }>()
    const got = (text: string): string => (field.secret ? ' (got a value)' : ` (got "${text}")`)
    for (const stem of candidates(field).map((n) => n.slice(0, -rule.placeholder.length))) {
      const names = Object.keys(env)
        .filter((name) => name.length > stem.length && name.startsWith(stem) && !singles.has(name))
        .sort()
      for (const name of names) {
        const text = env[name] ?? ''
        if (text === '') continue
        const key = rule.key(name.slice(stem.length))
        if (key instanceof Invalid) {
          problems.push(...key.messages.map((m) => ({ index, text: `${name}: ${m}` })))
          continue
        }
        const earlier = seen.get(key)
        if (earlier !== undefined) {
          if (options.conflicts !== 'first' && earlier.text !== text) {
            const message = `${earlier.name} and ${name} are both set, to different values; set one`
            problems.push({ index, text: message })
          }
          continue
        }
        seen.set(key, { name, text })
        const value = rule.parseMember(text)
        if (value instanceof Invalid) {
          const echo = value.echo ? got(text) : ''
          problems.push(...value.messages.map((m) => ({ index, text: `${name}: ${m}${echo}` })))
        } else members[key] = value
      }
    }
    return members
  }

  /** Reads every field; `computed` holds the computed default texts. */
  function resolve(env: Env, context: C | undefined) {
    const states = new Map<Field<unknown>, State>()
    const problems: { index: number; text: string }[] = []
    const values: Record<string, unknown> = {}
    const unset: Entry[] = []
    const pending = new Set<Field<unknown>>()
    entries.forEach(({ field, path }, index) => {
      if (field.family) {
        states.set(field, { index })
        assign(values, path, readFamily(env, field, field.family, index, problems))
        return
      }
      const set = candidates(field)
        .map((name) => ({ name, text: env[name] ?? '' }))
        .filter((c) => c.text !== '')
      const found = set[0]
      states.set(field, found === undefined ? { index } : { index, found })
      if (found === undefined) {
        unset.push({ field, path })
        if (field.required !== false) {
          const aliases = field.names.slice(1)
          const or = aliases.length > 0 ? ` (or ${aliases.join(', ')})` : ''
          const message = field.required === true ? 'required' : field.required
          problems.push({ index, text: `${firstName(field)}${or}: ${message}` })
          return
        }
        // A field without a valid constant default must get a computed one (checked below).
        const value = field.parse(field.default)
        if (value instanceof Invalid) pending.add(field)
        else assign(values, path, value)
        return
      }
      if (options.conflicts !== 'first') {
        for (const other of set.slice(1)) {
          if (other.text === found.text) continue
          const text = `${found.name} and ${other.name} are both set, to different values; set one`
          problems.push({ index, text })
        }
      }
      const value = field.parse(found.text)
      if (!(value instanceof Invalid)) assign(values, path, value)
      else {
        problems.push(...describe(field, states, value))
        // Keep a value for the computed defaults and checks that read it.
        const fallback = field.parse(field.default)
        if (!(fallback instanceof Invalid)) assign(values, path, fallback)
      }
    })
    const computed = options.computedDefaults?.(values as Values<F>, context) ?? {}
    for (const { field, path } of unset) {
      const text = lookupPath(computed, path)
      if (typeof text === 'string') assign(values, path, parseDefault(field, text))
      else if (pending.has(field)) parseDefault(field, field.default) // throws
    }
    return { values: values as Values<F>, states, problems, computed }
  }

  /** `NAME: message (got "…")` for each message of a problem, at the field's place. */
  function describe(
    field: Field<unknown>,
    states: ReadonlyMap<Field<unknown>, State>,
    problem: Invalid,
  ): { index: number; text: string }[] {
    const state = states.get(field)
    if (state === undefined) throw new TypeError(`${field.names[0]} is not in this table`)
    const { found } = state
    const got =
      found === undefined || !problem.echo
        ? ''
        : field.secret
          ? ' (got a value)'
          : ` (got "${found.text}")`
    return problem.messages.map((message) => ({
      index: state.index,
      text: `${found?.name ?? firstName(field)}: ${message}${got}`,
    }))
  }

  function read(env: Env, context?: C): SettingsRead<Values<F>> {
    const { values, states, problems } = resolve(env, context)
    // In table order; sort is stable, so one field's problems keep the order they were found in.
    const listed = (): string[] =>
      [...problems].sort((a, b) => a.index - b.index).map((p) => p.text)
    return {
      values,
      get problems() {
        return listed()
      },
      report(field, message, reportOptions) {
        problems.push(...describe(field, states, invalid(message, reportOptions)))
      },
      finish(settings) {
        if (problems.length > 0) throw new SettingsError(listed())
        return deepFreeze(settings)
      },
    }
  }

  function defaults(context?: C): ReadonlyMap<string, string> {
    const { computed } = resolve({}, context)
    return new Map(
      entries.map(({ field, path }) => {
        const text = lookupPath(computed, path)
        return [displayName(field), typeof text === 'string' ? text : field.default]
      }),
    )
  }

  function help(context?: C, helpOptions: HelpOptions = {}): string[] {
    const texts = [...defaults(context).values()]
    return entries.map(({ field }, i) => {
      const text = texts[i] ?? ''
      const required = field.required !== false
      const shown =
        (required ? 'required' : text === '' ? 'none' : text) +
        (field.note === '' ? '' : `: ${field.note}`)
      const value =
        field.help !== ''
          ? `${helpSummary(field.help)} (${shown})`
          : required || text === '' || field.note !== ''
            ? `(${shown})`
            : shown
      const width = helpOptions.width ?? 40
      const name = displayName(field)
      const columns = helpOptions.columns ?? Infinity
      const lines = wrap(value, Math.max(20, columns - width - 4))
      // A name wider than its column stands on a line of its own when the line would be too long.
      if (name.length > width && (lines.length > 1 || name.length + value.length + 4 > columns)) {
        lines.unshift('')
      }
      return lines
        .map((line, l) => `  ${(l === 0 ? name : '').padEnd(width)}  ${line}`.trimEnd())
        .join('\n')
    })
  }

  function markdown(markdownOptions: MarkdownOptions = {}): string {
    const keys = markdownOptions.keys
    const dotted = entries.map(({ path }) => path.join('.'))
    for (const key of keys ?? []) {
      if (!dotted.some((d) => d === key || d.startsWith(`${key}.`))) {
        throw new TypeError(`${key} names no field or group of the settings table`)
      }
    }
    const chosen =
      keys === undefined
        ? entries
        : [
            ...new Set(
              keys.flatMap((key) =>
                entries.filter((_, i) => dotted[i] === key || dotted[i]?.startsWith(`${key}.`)),
              ),
            ),
          ]
    return markdownTable(
      chosen.map(({ field }) => {
        const constant = field.default === '' ? '(empty)' : `\`${field.default}\``
        const base =
          field.required !== false
            ? 'required'
            : field.computedDefault !== ''
              ? field.computedDefault
              : constant
        return {
          names: [...new Set(field.names)],
          default: field.note === '' ? base : `${base} (${field.note})`,
          meaning: field.help,
        }
      }),
    )
  }

  return Object.freeze({ fields, read, defaults, help, markdown })
}
