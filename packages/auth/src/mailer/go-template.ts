/**
 * A parser and evaluator for the subset of Go's `text/template` language that mail templates
 * written for upstream use (upstream parses them with Go's `html/template`): text and `{{ … }}`
 * actions with the `{{- ` / ` -}}` trim markers and comments (`{{/*` to star-slash `}}`); fields (`.Email`,
 * `.Data.locale`, `.`), variables (`$`, `$x := …`, `$x = …`), string, raw-string, number,
 * boolean and `nil` constants; pipelines (`.X | printf "%s"`) and parenthesised ones; `if` /
 * `else if` / `else`, `with` / `else with` / `else`, `range` (with `$i, $v :=`, `else`,
 * `break`, `continue`) and `end`; and the functions `and`, `or`, `not`, `eq`, `ne`, `lt`,
 * `le`, `gt`, `ge`, `len`, `index`, `print`, `printf`, `println`, `html` and `urlquery`.
 * `define`, `template` and `block` are refused when the template is parsed.
 *
 * Templates are parsed once ({@link parseTemplate}, which throws {@link TemplateParseError}
 * with the line and column) and then rendered many times; nothing is evaluated as JavaScript.
 * Rendering follows Go where it matters for mail: truth as Go's (`false`, `0`, `""`, `nil`, an
 * empty list or map are false), `and`/`or` stop at the deciding argument, a missing map key is
 * nothing, comparisons of values of different kinds fail ({@link TemplateExecError}). Two
 * differences: numbers are one kind (JSON's, so `eq .Data.age 42` holds), and a list or map
 * prints as JSON. In bodies (`html: true`) every printed value is HTML-escaped, as Go's
 * `html/template` does outside attributes and scripts (`html` output is not escaped twice), and
 * a value that starts a URL attribute (`href="{{ .Data.site }}"`) with a scheme other than
 * `http`, `https`, `mailto` or `tel` becomes `#ZgotmplZ`, as `html/template` makes it.
 *
 * @see https://pkg.go.dev/text/template
 * @module
 */

/** A template that could not be parsed; the message says where and why. */
export class TemplateParseError extends Error {
  /** 1-based line of the offending action or text. */
  readonly line: number
  /** 1-based column. */
  readonly column: number

  constructor(message: string, line: number, column: number) {
    super(`line ${String(line)}, column ${String(column)}: ${message}`)
    this.name = 'TemplateParseError'
    this.line = line
    this.column = column
  }
}

/** A template that parsed but failed while rendering (a bad comparison, an index out of range). */
export class TemplateExecError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'TemplateExecError'
  }
}

/** Options of {@link Template.render}. */
export interface RenderOptions {
  /** HTML-escape every printed value (mail bodies); subjects are plain text. */
  readonly html: boolean
}

/** A parsed template; see {@link parseTemplate}. */
export interface Template {
  /**
   * Renders the template with `data` as `.` and `$`.
   *
   * @throws {@link TemplateExecError} When an action fails, or the output passes 1 MiB.
   */
  render(data: unknown, options: RenderOptions): string
}

// ---------------------------------------------------------------------------------------------
// Syntax tree

type Arg =
  | { readonly t: 'field'; readonly path: readonly string[] }
  | { readonly t: 'var'; readonly name: string; readonly path: readonly string[] }
  | { readonly t: 'const'; readonly value: unknown }
  | { readonly t: 'func'; readonly name: string }
  | { readonly t: 'pipe'; readonly pipe: Pipe; readonly path: readonly string[] }

interface Pipe {
  /** Where its action starts: 1-based line and column. */
  readonly line: number
  readonly column: number
  /** Variables declared (`:=`) or assigned (`=`) with the pipeline's value. */
  readonly vars: readonly string[]
  readonly assign: boolean
  readonly cmds: readonly (readonly Arg[])[]
}

type Node =
  | { readonly t: 'text'; text: string }
  | { readonly t: 'action'; readonly pipe: Pipe }
  | {
      readonly t: 'if' | 'with'
      readonly pipe: Pipe
      readonly body: readonly Node[]
      readonly otherwise: readonly Node[]
    }
  | {
      readonly t: 'range'
      readonly pipe: Pipe
      readonly body: readonly Node[]
      readonly otherwise: readonly Node[]
    }
  | { readonly t: 'break' | 'continue' }

// ---------------------------------------------------------------------------------------------
// Lexing of one action

type Token =
  | { readonly k: 'field'; readonly path: readonly string[] }
  | { readonly k: 'var'; readonly name: string; readonly path: readonly string[] }
  | { readonly k: 'ident'; readonly name: string }
  | { readonly k: 'const'; readonly value: unknown }
  | { readonly k: '(' | ')' | '|' | ':=' | '=' | ',' }
  | { readonly k: 'chain'; readonly path: readonly string[] }

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*/
const FIELD_CHAIN = /^(?:\.[A-Za-z_][A-Za-z0-9_]*)+/
const NUMBER =
  /^[+-]?(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?)/
const ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '\\': '\\',
  '"': '"',
  "'": "'",
  a: '\x07',
  b: '\b',
  f: '\f',
  v: '\v',
}

function unquote(body: string, fail: (message: string) => never): string {
  return body.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)/g, (_m, e: string) => {
    if (e.length > 1) return String.fromCodePoint(parseInt(e.slice(1), 16))
    const out = ESCAPES[e]
    if (out === undefined) fail(`unknown escape sequence \\${e} in a string`)
    return out
  })
}

function lexAction(src: string, fail: (message: string) => never): Token[] {
  const tokens: Token[] = []
  let i = 0
  while (i < src.length) {
    const rest = src.slice(i)
    const c = src[i] as string
    if (/\s/.test(c)) {
      i++
      continue
    }
    if (c === '(' || c === ')' || c === '|' || c === ',') {
      tokens.push({ k: c })
      i++
      // A field chain right after `)` applies to the parenthesised value: `(index .A 0).Name`.
      if (c === ')') {
        const chain = FIELD_CHAIN.exec(src.slice(i))
        if (chain) {
          tokens.push({ k: 'chain', path: chain[0].slice(1).split('.') })
          i += chain[0].length
        }
      }
      continue
    }
    if (rest.startsWith(':=')) {
      tokens.push({ k: ':=' })
      i += 2
      continue
    }
    if (c === '=') {
      tokens.push({ k: '=' })
      i++
      continue
    }
    if (c === '"') {
      const m = /^"((?:[^"\\\n]|\\.)*)"/.exec(rest)
      if (!m) fail('unterminated quoted string')
      tokens.push({ k: 'const', value: unquote(m[1] ?? '', fail) })
      i += m[0].length
      continue
    }
    if (c === '`') {
      const end = src.indexOf('`', i + 1)
      if (end < 0) fail('unterminated raw quoted string')
      tokens.push({ k: 'const', value: src.slice(i + 1, end) })
      i = end + 1
      continue
    }
    if (c === "'") fail('character constants are not supported in mail templates')
    if (c === '$') {
      const name = /^\$[A-Za-z0-9_]*/.exec(rest)?.[0] ?? '$'
      i += name.length
      const chain = FIELD_CHAIN.exec(src.slice(i))
      if (chain) i += chain[0].length
      tokens.push({ k: 'var', name, path: chain ? chain[0].slice(1).split('.') : [] })
      continue
    }
    if (c === '.' && !/^\.\d/.test(rest)) {
      const chain = FIELD_CHAIN.exec(rest)
      if (chain) {
        tokens.push({ k: 'field', path: chain[0].slice(1).split('.') })
        i += chain[0].length
      } else {
        tokens.push({ k: 'field', path: [] })
        i++
      }
      continue
    }
    const number = NUMBER.exec(rest)
    if (number && !IDENT.test(rest)) {
      const text = number[0].replaceAll('_', '')
      const value = /^[+-]?0[xXbBoO]/.test(text)
        ? (text.startsWith('-') ? -1 : 1) * Number(text.replace(/^[+-]/, ''))
        : Number(text)
      if (!Number.isFinite(value)) fail(`bad number syntax: ${number[0]}`)
      tokens.push({ k: 'const', value })
      i += number[0].length
      continue
    }
    const ident = IDENT.exec(rest)
    if (ident) {
      const name = ident[0]
      i += name.length
      if (name === 'true' || name === 'false') tokens.push({ k: 'const', value: name === 'true' })
      else if (name === 'nil') tokens.push({ k: 'const', value: null })
      else tokens.push({ k: 'ident', name })
      continue
    }
    fail(`unexpected ${JSON.stringify(c)} in an action`)
  }
  return tokens
}

// ---------------------------------------------------------------------------------------------
// Parsing

/** Functions and the number of arguments each takes (`[min, max]`). */
const FUNCTIONS: Readonly<Record<string, readonly [number, number]>> = {
  and: [1, Infinity],
  or: [1, Infinity],
  not: [1, 1],
  eq: [2, Infinity],
  ne: [2, 2],
  lt: [2, 2],
  le: [2, 2],
  gt: [2, 2],
  ge: [2, 2],
  len: [1, 1],
  index: [1, Infinity],
  print: [0, Infinity],
  printf: [1, Infinity],
  println: [0, Infinity],
  html: [0, Infinity],
  urlquery: [0, Infinity],
}

const KEYWORDS = new Set(['if', 'else', 'end', 'range', 'with', 'break', 'continue'])
const UNSUPPORTED = new Set(['define', 'template', 'block'])

/** The deepest nesting of blocks and parentheses accepted. */
const MAX_DEPTH = 100

interface RawAction {
  readonly src: string
  readonly line: number
  readonly column: number
}

type Item = { readonly text: string } | RawAction

/** Splits a template into text and actions, applying trim markers and dropping comments. */
function scan(source: string): Item[] {
  const items: Item[] = []
  let i = 0
  let trimNext = false
  const position = (at: number): [number, number] => {
    const before = source.slice(0, at)
    const line = before.split('\n').length
    return [line, at - before.lastIndexOf('\n')]
  }
  while (i <= source.length) {
    const open = source.indexOf('{{', i)
    let text = source.slice(i, open < 0 ? source.length : open)
    if (trimNext) text = text.replace(/^\s+/, '')
    trimNext = false
    if (open < 0) {
      items.push({ text })
      break
    }
    let start = open + 2
    if (/^-[ \t\r\n]/.test(source.slice(start))) {
      text = text.replace(/\s+$/, '')
      start += 2
    }
    items.push({ text })
    const close = source.indexOf('}}', start)
    const [line, column] = position(open)
    if (close < 0) throw new TemplateParseError('unclosed action', line, column)
    let end = close
    if (/[ \t\r\n]-$/.test(source.slice(start, close))) {
      end -= 2
      trimNext = true
    }
    const inner = source.slice(start, end)
    const trimmed = inner.trim()
    if (trimmed.startsWith('/*')) {
      if (!trimmed.endsWith('*/') || trimmed.length < 4) {
        throw new TemplateParseError('unclosed comment', line, column)
      }
    } else {
      items.push({ src: inner, line, column })
    }
    i = close + 2
  }
  return items
}

class Parser {
  readonly #items: Item[]
  #at = 0
  #depth = 0
  /** The action being parsed (positions of its pipelines). */
  #current: RawAction = { src: '', line: 1, column: 1 }

  constructor(items: Item[]) {
    this.#items = items
  }

  /** Parses nodes until one of `stops` (a keyword action), which is returned unconsumed. */
  nodes(stops: ReadonlySet<string>, inRange: boolean): { nodes: Node[]; stop?: RawAction } {
    const nodes: Node[] = []
    while (this.#at < this.#items.length) {
      const item = this.#items[this.#at] as Item
      if ('text' in item) {
        if (item.text !== '') nodes.push({ t: 'text', text: item.text })
        this.#at++
        continue
      }
      const fail: (message: string) => never = this.#failer(item)
      this.#current = item
      const tokens = lexAction(item.src, fail)
      const first = tokens[0]
      const keyword = first?.k === 'ident' && KEYWORDS.has(first.name) ? first.name : undefined
      if (keyword !== undefined && stops.has(keyword)) return { nodes, stop: item }
      this.#at++
      if (first === undefined) fail('missing value for command')
      if (first.k === 'ident' && UNSUPPORTED.has(first.name)) {
        fail(`{{ ${first.name} }} is not supported in mail templates`)
      }
      switch (keyword) {
        case undefined:
          nodes.push({ t: 'action', pipe: this.#pipe(tokens, fail, true) })
          break
        case 'if':
        case 'with':
          nodes.push(this.#conditional(keyword, tokens.slice(1), fail, inRange))
          break
        case 'range':
          nodes.push(this.#range(tokens.slice(1), fail))
          break
        case 'break':
        case 'continue':
          if (!inRange) fail(`{{ ${keyword} }} outside {{ range }}`)
          if (tokens.length > 1) fail(`unexpected text after {{ ${keyword} }}`)
          nodes.push({ t: keyword })
          break
        default:
          fail(`unexpected {{ ${keyword} }}`)
      }
    }
    return { nodes }
  }

  #failer(item: RawAction): (message: string) => never {
    return (message) => {
      throw new TemplateParseError(message, item.line, item.column)
    }
  }

  #enter(fail: (message: string) => never): void {
    if (++this.#depth > MAX_DEPTH) fail('actions nested too deeply')
  }

  /** `if`/`with` and their `else if`/`else with`/`else` chain, up to `end`. */
  #conditional(
    kind: 'if' | 'with',
    tokens: Token[],
    fail: (message: string) => never,
    inRange: boolean,
  ): Node {
    this.#enter(fail)
    const pipe = this.#pipe(tokens, fail, false)
    const stops = new Set(['else', 'end'])
    const { nodes: body, stop } = this.nodes(stops, inRange)
    if (!stop) fail(`unexpected end of template: {{ ${kind} }} without {{ end }}`)
    this.#at++
    const stopTokens = lexAction(stop.src, this.#failer(stop))
    let otherwise: Node[] = []
    if ((stopTokens[0] as { name: string }).name === 'else') {
      const next = stopTokens[1]
      if (next?.k === 'ident' && (next.name === 'if' || next.name === 'with')) {
        // `else if` / `else with`: a nested block that consumes the shared `end`.
        this.#depth--
        this.#current = stop
        return {
          t: kind,
          pipe,
          body,
          otherwise: [
            this.#conditional(next.name, stopTokens.slice(2), this.#failer(stop), inRange),
          ],
        }
      }
      if (stopTokens.length > 1) this.#failer(stop)('unexpected text after {{ else }}')
      const rest = this.nodes(new Set(['end', 'else']), inRange)
      if (!rest.stop) fail(`unexpected end of template: {{ ${kind} }} without {{ end }}`)
      const endTokens = lexAction(rest.stop.src, this.#failer(rest.stop))
      if ((endTokens[0] as { name: string }).name !== 'end') {
        this.#failer(rest.stop)(`{{ else }} after {{ else }}`)
      }
      if (endTokens.length > 1) this.#failer(rest.stop)('unexpected text after {{ end }}')
      this.#at++
      otherwise = rest.nodes
    } else if (stopTokens.length > 1) {
      this.#failer(stop)('unexpected text after {{ end }}')
    }
    this.#depth--
    return { t: kind, pipe, body, otherwise }
  }

  #range(tokens: Token[], fail: (message: string) => never): Node {
    this.#enter(fail)
    const pipe = this.#pipe(tokens, fail, false)
    if (pipe.assign) fail('range can only declare variables (:=)')
    if (pipe.vars.length > 2) fail('too many declarations in range')
    const { nodes: body, stop } = this.nodes(new Set(['else', 'end']), true)
    if (!stop) fail('unexpected end of template: {{ range }} without {{ end }}')
    this.#at++
    const stopTokens = lexAction(stop.src, this.#failer(stop))
    if (stopTokens.length > 1) this.#failer(stop)('unexpected text after {{ else }} or {{ end }}')
    let otherwise: Node[] = []
    if ((stopTokens[0] as { name: string }).name === 'else') {
      const rest = this.nodes(new Set(['end', 'else']), false)
      if (!rest.stop) fail('unexpected end of template: {{ range }} without {{ end }}')
      const endTokens = lexAction(rest.stop.src, this.#failer(rest.stop))
      if ((endTokens[0] as { name: string }).name !== 'end' || endTokens.length > 1) {
        this.#failer(rest.stop)('expected {{ end }}')
      }
      this.#at++
      otherwise = rest.nodes
    }
    this.#depth--
    return { t: 'range', pipe, body, otherwise }
  }

  /** A pipeline: optional `$x :=`/`$x, $y :=`/`$x =`, then commands joined by `|`. */
  #pipe(tokens: Token[], fail: (message: string) => never, allowAssign: boolean): Pipe {
    let at = 0
    const vars: string[] = []
    let assign = false
    const decl = tokens.findIndex((t) => t.k === ':=' || t.k === '=')
    if (decl >= 0) {
      for (let j = 0; j < decl; j++) {
        const token = tokens[j] as Token
        if (token.k === 'var' && token.path.length === 0 && j % 2 === 0) vars.push(token.name)
        else if (!(token.k === ',' && j % 2 === 1)) fail('bad variable declaration')
      }
      if (vars.length === 0) fail('bad variable declaration')
      assign = (tokens[decl] as Token).k === '='
      if (assign && (!allowAssign || vars.length > 1)) fail('bad variable assignment')
      at = decl + 1
    }
    const body = tokens.slice(at)
    if (body.length === 0) fail('missing value for command')
    const { line, column } = this.#current
    return { line, column, vars, assign, cmds: this.#commands(body, fail) }
  }

  #commands(tokens: Token[], fail: (message: string) => never): (readonly Arg[])[] {
    const cmds: Arg[][] = [[]]
    let i = 0
    const arg = (): Arg => {
      const token = tokens[i++] as Token
      switch (token.k) {
        case 'field':
          return { t: 'field', path: token.path }
        case 'var':
          return { t: 'var', name: token.name, path: token.path }
        case 'const':
          return { t: 'const', value: token.value }
        case 'ident':
          if (KEYWORDS.has(token.name) || UNSUPPORTED.has(token.name)) {
            fail(`unexpected ${token.name} in an operand`)
          }
          if (!Object.hasOwn(FUNCTIONS, token.name)) fail(`function "${token.name}" not defined`)
          return { t: 'func', name: token.name }
        case '(': {
          this.#enter(fail)
          let depth = 1
          const start = i
          while (i < tokens.length && depth > 0) {
            const k = (tokens[i] as Token).k
            if (k === '(') depth++
            else if (k === ')') depth--
            i++
          }
          if (depth > 0) fail('unclosed left paren')
          const inner = tokens.slice(start, i - 1)
          if (inner.length === 0) fail('missing value for command')
          const chain =
            tokens[i]?.k === 'chain' ? (tokens[i++] as { path: readonly string[] }).path : []
          const { line, column } = this.#current
          const cmds = this.#commands(inner, fail)
          const pipe: Pipe = { line, column, vars: [], assign: false, cmds }
          this.#depth--
          return { t: 'pipe', pipe, path: chain }
        }
        case ')':
        case '|':
        case ':=':
        case '=':
        case ',':
        case 'chain':
          return fail(`unexpected ${JSON.stringify(token.k)} in an operand`)
      }
    }
    while (i < tokens.length) {
      const k = (tokens[i] as Token).k
      if (k === '|') {
        if ((cmds.at(-1) as Arg[]).length === 0) fail('missing command before |')
        cmds.push([])
        i++
        continue
      }
      if (k === ')') fail('unexpected right paren')
      if (k === ':=' || k === '=' || k === ',') fail(`unexpected ${k}`)
      ;(cmds.at(-1) as Arg[]).push(arg())
    }
    for (const [n, cmd] of cmds.entries()) {
      if (cmd.length === 0) fail('missing command after |')
      const head = cmd[0] as Arg
      if (head.t !== 'func') {
        if (cmd.length > 1) fail("can't give an argument to a non-function")
        if (n > 0) fail('a value after | must be a function call')
        continue
      }
      for (const extra of cmd.slice(1)) {
        if (extra.t === 'func') fail(`function "${extra.name}" used as an argument without ( )`)
      }
      const [min, max] = FUNCTIONS[head.name] as readonly [number, number]
      const given = cmd.length - 1 + (n > 0 ? 1 : 0)
      if (given < min || given > max) {
        fail(
          `wrong number of args for ${head.name}: want ${min === max ? String(min) : `at least ${String(min)}`} got ${String(given)}`,
        )
      }
    }
    return cmds
  }
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/** Output of `html`, printed as it is in bodies. */
class SafeHtml {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
}

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&#34;',
  "'": '&#39;',
  '\0': '\uFFFD',
}

/** `value` with `& < > " '` replaced by character references (Go's `HTMLEscapeString`). */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"'\0]/g, (ch) => HTML_ESCAPES[ch] ?? ch)
}

/** The output ends at the start of a URL attribute's value: `<a href="`, `<img src=`. */
const URL_ATTRIBUTE_START =
  /<[A-Za-z][^<>]*\s(?:href|src|action|formaction|poster|cite|background|xlink:href)\s*=\s*["']?$/i
/** A URL that may start such a value: http(s), mailto or tel, or no scheme (relative). */
const SAFE_URL = /^(?:(?:https?|mailto|tel):|[^:]*(?:[/?#]|$))/i
/** What `html/template` writes for a URL it refuses. */
const UNSAFE_URL = '#ZgotmplZ'

/** Largest rendered output, in UTF-16 code units. */
const MAX_OUTPUT = 1 << 20

function isMap(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof SafeHtml)
  )
}

/** Go's `isTrue`. */
function truth(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') {
    return false
  }
  if (Array.isArray(value)) return value.length > 0
  if (value instanceof SafeHtml) return value.text !== ''
  if (isMap(value)) return Object.keys(value).length > 0
  return true
}

/** A value as Go's `fmt.Sprint` prints it, but lists and maps as JSON; nothing for nil. */
function printed(value: unknown): string {
  if (typeof value === 'string') return value
  if (value instanceof SafeHtml) return value.text
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  if (value === null || value === undefined) return ''
  return JSON.stringify(value)
}

function kindOf(value: unknown): string {
  if (value === null || value === undefined) return 'nil'
  if (value instanceof SafeHtml) return 'string'
  if (Array.isArray(value)) return 'list'
  return typeof value === 'object' ? 'map' : typeof value
}

function basic(value: unknown): unknown {
  return value instanceof SafeHtml ? value.text : value
}

function equal(a: unknown, b: unknown): boolean {
  const [x, y] = [basic(a), basic(b)]
  const [kx, ky] = [kindOf(x), kindOf(y)]
  if (kx === 'nil' || ky === 'nil') return kx === ky
  if (kx !== ky) throw new TemplateExecError('incompatible types for comparison')
  if (kx === 'list' || kx === 'map') throw new TemplateExecError('non-comparable type')
  return x === y
}

function compare(a: unknown, b: unknown): number {
  const [x, y] = [basic(a), basic(b)]
  const [kx, ky] = [kindOf(x), kindOf(y)]
  if (kx !== ky) throw new TemplateExecError('incompatible types for comparison')
  if (kx !== 'number' && kx !== 'string') throw new TemplateExecError('invalid type for comparison')
  return (x as number | string) < (y as number | string) ? -1 : x === y ? 0 : 1
}

function field(value: unknown, name: string): unknown {
  if (value === null || value === undefined) {
    throw new TemplateExecError(`nil pointer evaluating .${name}`)
  }
  if (!isMap(value))
    throw new TemplateExecError(`can't evaluate field ${name} in type ${kindOf(value)}`)
  return Object.hasOwn(value, name) ? value[name] : undefined
}

function index(value: unknown, keys: readonly unknown[]): unknown {
  let current = value
  for (const key of keys) {
    if (Array.isArray(current)) {
      if (typeof key !== 'number' || !Number.isInteger(key)) {
        throw new TemplateExecError('cannot index a list with a non-integer')
      }
      if (key < 0 || key >= current.length) {
        throw new TemplateExecError(`index out of range: ${String(key)}`)
      }
      current = current[key]
    } else if (isMap(current)) {
      if (typeof key !== 'string')
        throw new TemplateExecError('cannot index a map with a non-string')
      current = Object.hasOwn(current, key) ? current[key] : undefined
    } else if (current === null || current === undefined) {
      throw new TemplateExecError('index of untyped nil')
    } else {
      throw new TemplateExecError(`can't index item of type ${kindOf(current)}`)
    }
  }
  return current
}

/** Go's `fmt.Sprint`: a space between operands when neither is a string. */
function sprint(args: readonly unknown[]): string {
  let out = ''
  for (let i = 0; i < args.length; i++) {
    const isString = (v: unknown) => typeof basic(v) === 'string'
    if (i > 0 && !isString(args[i]) && !isString(args[i - 1])) out += ' '
    out += printed(args[i])
  }
  return out
}

/** Go's `fmt.Sprintf` for `%s %v %d %q %f %%` (with an optional width and precision). */
function sprintf(format: string, args: readonly unknown[]): string {
  let n = 0
  return format.replace(
    /%([-+ 0#]*)(\d*)(?:\.(\d+))?([a-zA-Z%])/g,
    (whole, _f, width, precision, verb: string) => {
      if (verb === '%') return '%'
      if (n >= args.length) return `%!${verb}(MISSING)`
      const arg = basic(args[n++])
      let text: string
      switch (verb) {
        case 's':
        case 'v':
          text = printed(arg)
          break
        case 'q':
          text = JSON.stringify(printed(arg))
          break
        case 'd':
          if (typeof arg !== 'number') return `%!d(${kindOf(arg)}=${printed(arg)})`
          text = String(Math.trunc(arg))
          break
        case 'f':
          if (typeof arg !== 'number') return `%!f(${kindOf(arg)}=${printed(arg)})`
          text = arg.toFixed(precision === undefined ? 6 : Number(precision))
          break
        default:
          throw new TemplateExecError(`printf: unsupported verb ${whole}`)
      }
      return width === '' ? text : text.padStart(Number(width))
    },
  )
}

interface Scope {
  readonly dot: unknown
  readonly vars: Map<string, unknown>[]
}

/** Unwinds to the enclosing `range` (thrown by `{{ break }}` and `{{ continue }}`). */
class BreakSignal extends Error {
  readonly kind: 'break' | 'continue'
  constructor(kind: 'break' | 'continue') {
    super(`{{ ${kind} }}`)
    this.kind = kind
  }
}

class Renderer {
  #out = ''
  readonly #html: boolean

  constructor(html: boolean) {
    this.#html = html
  }

  get output(): string {
    return this.#out
  }

  #write(text: string): void {
    this.#out += text
    if (this.#out.length > MAX_OUTPUT) throw new TemplateExecError('output larger than 1 MiB')
  }

  run(nodes: readonly Node[], scope: Scope): void {
    for (const node of nodes) {
      switch (node.t) {
        case 'text':
          this.#write(node.text)
          break
        case 'action': {
          const value = this.#pipe(node.pipe, scope)
          if (node.pipe.vars.length > 0) break
          let text = printed(value)
          if (this.#html && !(value instanceof SafeHtml)) {
            if (URL_ATTRIBUTE_START.test(this.#out.slice(-200)) && !SAFE_URL.test(text)) {
              // As html/template: a value starting a URL attribute with another scheme
              // (`javascript:`, `data:`) is replaced.
              text = UNSAFE_URL
            }
            text = escapeHtml(text)
          }
          this.#write(text)
          break
        }
        case 'if':
        case 'with': {
          const inner: Scope = { dot: scope.dot, vars: [...scope.vars, new Map<string, unknown>()] }
          const value = this.#pipe(node.pipe, inner)
          if (truth(value)) {
            this.run(node.body, node.t === 'with' ? { dot: value, vars: inner.vars } : inner)
          } else {
            this.run(node.otherwise, inner)
          }
          break
        }
        case 'range':
          this.#range(node, scope)
          break
        case 'break':
        case 'continue':
          throw new BreakSignal(node.t)
      }
    }
  }

  #range(node: Extract<Node, { t: 'range' }>, scope: Scope): void {
    const value = basic(this.#pipe({ ...node.pipe, vars: [] }, scope))
    let entries: [unknown, unknown][]
    if (Array.isArray(value)) entries = value.map((v, i) => [i, v])
    else if (isMap(value))
      entries = Object.keys(value)
        .sort()
        .map((k) => [k, value[k]])
    else if (value === null || value === undefined) entries = []
    else throw new TemplateExecError(`range can't iterate over ${printed(value)}`)
    if (entries.length === 0) {
      this.run(node.otherwise, scope)
      return
    }
    const [first, second] = node.pipe.vars
    for (const [key, element] of entries) {
      const vars = new Map<string, unknown>()
      if (second !== undefined) {
        vars.set(first as string, key)
        vars.set(second, element)
      } else if (first !== undefined) {
        vars.set(first, element)
      }
      try {
        this.run(node.body, { dot: element, vars: [...scope.vars, vars] })
      } catch (signal) {
        if (!(signal instanceof BreakSignal)) throw signal
        if (signal.kind === 'break') break
      }
    }
  }

  #pipe(pipe: Pipe, scope: Scope): unknown {
    let value: unknown = undefined
    for (const [n, cmd] of pipe.cmds.entries()) {
      value = this.#command(cmd, scope, n > 0 ? { value } : undefined)
    }
    if (pipe.vars.length > 0) {
      const name = pipe.vars[0] as string
      if (pipe.assign) {
        const holder = [...scope.vars].reverse().find((vars) => vars.has(name))
        if (!holder) throw new TemplateExecError(`undefined variable: ${name}`)
        holder.set(name, value)
      } else {
        ;(scope.vars.at(-1) as Map<string, unknown>).set(name, value)
      }
    }
    return value
  }

  #command(cmd: readonly Arg[], scope: Scope, piped: { value: unknown } | undefined): unknown {
    const head = cmd[0] as Arg
    if (head.t !== 'func') return this.#arg(head, scope)
    const args: (() => unknown)[] = cmd.slice(1).map((arg) => () => this.#arg(arg, scope))
    if (piped) args.push(() => piped.value)
    const all = () => args.map((arg) => arg())
    switch (head.name) {
      case 'and': {
        let last: unknown
        for (const arg of args) {
          last = arg()
          if (!truth(last)) return last
        }
        return last
      }
      case 'or': {
        let last: unknown
        for (const arg of args) {
          last = arg()
          if (truth(last)) return last
        }
        return last
      }
      case 'not':
        return !truth((args[0] as () => unknown)())
      case 'eq': {
        const [first, ...rest] = all()
        return rest.some((other) => equal(first, other))
      }
      case 'ne': {
        const [a, b] = all()
        return !equal(a, b)
      }
      case 'lt':
      case 'le':
      case 'gt':
      case 'ge': {
        const [a, b] = all()
        const order = compare(a, b)
        return head.name === 'lt'
          ? order < 0
          : head.name === 'le'
            ? order <= 0
            : head.name === 'gt'
              ? order > 0
              : order >= 0
      }
      case 'len': {
        const value = basic((args[0] as () => unknown)())
        if (typeof value === 'string') return Buffer.byteLength(value)
        if (Array.isArray(value)) return value.length
        if (isMap(value)) return Object.keys(value).length
        throw new TemplateExecError(`len of ${kindOf(value)}`)
      }
      case 'index': {
        const [value, ...keys] = all()
        return index(value, keys.map(basic))
      }
      case 'print':
        return sprint(all())
      case 'println':
        return `${all().map(printed).join(' ')}\n`
      case 'printf': {
        const [format, ...rest] = all()
        if (typeof basic(format) !== 'string')
          throw new TemplateExecError('printf: format is not a string')
        return sprintf(basic(format) as string, rest)
      }
      case 'html':
        return new SafeHtml(escapeHtml(sprint(all())))
      case 'urlquery':
        return encodeURIComponent(sprint(all()))
          .replace(/%20/g, '+')
          .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
      default:
        throw new TemplateExecError(`function "${head.name}" not defined`)
    }
  }

  #arg(arg: Arg, scope: Scope): unknown {
    switch (arg.t) {
      case 'const':
        return arg.value
      case 'field':
        return arg.path.reduce<unknown>((value, name) => field(value, name), scope.dot)
      case 'var': {
        const holder = [...scope.vars].reverse().find((vars) => vars.has(arg.name))
        if (!holder) throw new TemplateExecError(`undefined variable: ${arg.name}`)
        return arg.path.reduce<unknown>((value, name) => field(value, name), holder.get(arg.name))
      }
      case 'pipe':
        return arg.path.reduce<unknown>(
          (value, name) => field(value, name),
          this.#pipe(arg.pipe, scope),
        )
      case 'func':
        return this.#command([arg], scope, undefined)
    }
  }
}

/** Variables must be declared before they are used, in scope: checked once, at parse time. */
function checkVariables(nodes: readonly Node[], scopes: Set<string>[]): void {
  const declared = (name: string) => name === '$' || scopes.some((s) => s.has(name))
  const inPipe = (pipe: Pipe): void => {
    const fail = (name: string) => {
      throw new TemplateParseError(`undefined variable "${name}"`, pipe.line, pipe.column)
    }
    for (const cmd of pipe.cmds) {
      for (const arg of cmd) {
        if (arg.t === 'var' && !declared(arg.name)) fail(arg.name)
        if (arg.t === 'pipe') inPipe(arg.pipe)
      }
    }
    if (pipe.assign && !declared(pipe.vars[0] as string)) fail(pipe.vars[0] as string)
  }
  const top = (): Set<string> => scopes.at(-1) as Set<string>
  for (const node of nodes) {
    switch (node.t) {
      case 'action':
        inPipe(node.pipe)
        if (!node.pipe.assign) for (const name of node.pipe.vars) top().add(name)
        break
      case 'if':
      case 'with':
      case 'range': {
        const inner = new Set<string>()
        scopes.push(inner)
        inPipe(node.pipe)
        if (node.t !== 'range' && !node.pipe.assign) for (const n of node.pipe.vars) inner.add(n)
        scopes.push(new Set<string>(node.t === 'range' ? node.pipe.vars : []))
        checkVariables(node.body, scopes)
        scopes.pop()
        checkVariables(node.otherwise, scopes)
        scopes.pop()
        break
      }
      case 'text':
      case 'break':
      case 'continue':
        break
    }
  }
}

/**
 * Parses a Go template (see the module comment for what is supported).
 *
 * @param source The template text.
 * @returns The template, to render as often as needed.
 * @throws {@link TemplateParseError} With the line and column, for a syntax error, an unknown
 *   function, a wrong number of arguments, an undeclared variable, an unbalanced `{{ end }}` or
 *   an unsupported action (`define`, `template`, `block`).
 */
export function parseTemplate(source: string): Template {
  const parser = new Parser(scan(source))
  const { nodes, stop } = parser.nodes(new Set(['else', 'end']), false)
  if (stop) {
    const keyword = (lexAction(stop.src, () => undefined as never)[0] as { name: string }).name
    throw new TemplateParseError(`unexpected {{ ${keyword} }}`, stop.line, stop.column)
  }
  checkVariables(nodes, [new Set()])
  return {
    render(data, options) {
      const renderer = new Renderer(options.html)
      try {
        renderer.run(nodes, { dot: data, vars: [new Map([['$', data]])] })
      } catch (error) {
        if (error instanceof BreakSignal)
          throw new TemplateExecError(`{{ ${error.kind} }} outside range`)
        throw error
      }
      return renderer.output
    },
  }
}
