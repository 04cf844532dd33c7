/**
 * Reads one rate limit configuration file into a {@link YamlRoot}, reproducing upstream's loading
 * pipeline and error texts (`ConfigFileContentToYaml`): parse as YAML 1.1 (only the first
 * document), check that every key is a known config key (`validateYamlKeys`), then decode into
 * the typed structure the way Go's yaml.v2 does (strings accept any scalar's text; type mismatches
 * give `yaml: unmarshal errors:` lines).
 *
 * @module
 */
import {
  isAlias,
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  parseAllDocuments,
  visit,
  type Alias,
  type Document,
  type Node as YamlLibNode,
} from 'yaml'
import type { JsonObject, JsonValue } from '../protocol/types.js'
import { RateLimitConfigError } from './errors.js'

/** A `replaces` entry. */
export interface YamlReplaces {
  readonly name: string
}

/** A `rate_limit` block. */
export interface YamlRateLimit {
  readonly requestsPerUnit: number
  readonly unit: string
  readonly unlimited: boolean
  readonly name: string
  readonly replaces: readonly YamlReplaces[]
  /** `algorithm` (a Gatehouse addition): empty when absent. */
  readonly algorithm: string
  /** `burst` (a Gatehouse addition, token bucket only): undefined when absent. */
  readonly burst: number | undefined
  /**
   * `unit_multiplier` (a Gatehouse addition, issue 32, named as Envoy PR #47307 proposes):
   * undefined when absent.
   */
  readonly unitMultiplier: number | undefined
}

/** One entry of a `descriptors` list. */
export interface YamlDescriptor {
  readonly key: string
  readonly value: string
  /** `rate_limit` as one block (upstream's form); undefined for the list form. */
  readonly rateLimit: YamlRateLimit | undefined
  /**
   * `rate_limit` as a list of windows (a Gatehouse addition, issue 32); undefined for the block
   * form and when absent.
   */
  readonly rateLimits?: readonly YamlRateLimit[] | undefined
  readonly descriptors: readonly YamlDescriptor[]
  readonly shadowMode: boolean
  readonly quotaMode: boolean
  readonly detailedMetric: boolean
  readonly valueToMetric: boolean
  readonly shareThreshold: boolean
  readonly metadata: JsonObject | undefined
}

/** A whole configuration file. */
export interface YamlRoot {
  readonly domain: string
  readonly descriptors: readonly YamlDescriptor[]
}

/** Keys allowed anywhere in a configuration file (upstream's `validKeys`). */
export const VALID_KEYS: ReadonlySet<string> = new Set([
  'domain',
  'key',
  'value',
  'descriptors',
  'rate_limit',
  'unit',
  'requests_per_unit',
  'unlimited',
  'shadow_mode',
  'quota_mode',
  'name',
  'replaces',
  'detailed_metric',
  'value_to_metric',
  'share_threshold',
  'metadata',
  // Gatehouse additions (issue 15): the rule's algorithm and the token bucket's capacity.
  'algorithm',
  'burst',
  // Gatehouse addition (issue 32): windows of several units.
  'unit_multiplier',
])

// ---------------------------------------------------------------------------------------------
// A generic tree of the document, after aliases and merge keys are resolved (what yaml.v2 hands
// to Go code as map[interface{}]interface{}).

type ScalarTag = 'str' | 'int' | 'uint' | 'float' | 'bool' | 'null'

type GNode =
  | { readonly kind: 'map'; readonly line: number; readonly pairs: (readonly [GNode, GNode])[] }
  | { readonly kind: 'seq'; readonly line: number; readonly items: GNode[] }
  | {
      readonly kind: 'scalar'
      readonly line: number
      readonly tag: ScalarTag
      /** The decoded value (string for `str`, number, boolean, null). */
      readonly value: string | number | boolean | null
      /** The scalar's text as written (yaml.v2 uses it when decoding into a string). */
      readonly text: string
    }

const INT_SOURCE = /^[-+]?(0b[01_]+|0o?[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(:[0-5]?[0-9])*)$/

function classifyNumber(value: number, text: string): ScalarTag {
  if (!INT_SOURCE.test(text)) return 'float'
  if (!Number.isInteger(value)) return 'float'
  const cleaned = text.replaceAll('_', '')
  if (cleaned.includes(':')) return 'int'
  try {
    const negative = cleaned.startsWith('-')
    const digits = cleaned.replace(/^[-+]/, '')
    let big: bigint
    if (/^0[bB]/.test(digits) || /^0[xX]/.test(digits) || /^0[oO]/.test(digits))
      big = BigInt(digits)
    else if (/^0[0-7]+$/.test(digits)) big = BigInt(`0o${digits.slice(1)}`)
    else big = BigInt(digits)
    if (negative) big = -big
    if (big >= -(2n ** 63n) && big < 2n ** 63n) return 'int'
    if (big >= 0n && big < 2n ** 64n) return 'uint'
    return 'float'
  } catch {
    return 'float'
  }
}

/**
 * yaml.v2's limit on alias expansion (`allowedAliasRatio` in its `decode.go`): once more than
 * 100 of more than 1000 decoded nodes come from aliases, the share of nodes decoded through
 * aliases may be at most 99% for documents up to 400,000 nodes, falling linearly to 10% at
 * 4,000,000. A "billion laughs" file is refused after a few thousand nodes instead of expanding
 * exponentially, while ordinary aliases (a shared `rate_limit`) stay far below the ratio.
 */
function allowedAliasRatio(decodes: number): number {
  if (decodes <= 400_000) return 0.99
  if (decodes >= 4_000_000) return 0.1
  return 0.99 - 0.89 * ((decodes - 400_000) / 3_600_000)
}

/** State of one document's conversion: anchors resolved once, and yaml.v2's alias accounting. */
interface Walk {
  readonly lines: LineCounter
  /** The node each alias refers to (the last node with its anchor before it). */
  readonly targets: ReadonlyMap<Alias, unknown>
  /** Aliases being expanded (an alias met again inside its own value is a cycle). */
  readonly expanding: Set<Alias>
  decodes: number
  aliased: number
  aliasDepth: number
}

/**
 * Resolves every alias of a document in one pass, in document order (what `Alias.resolve` does
 * per alias with a walk of the whole document each time).
 */
function resolveAliases(doc: Document): Map<Alias, unknown> {
  const anchors = new Map<string, unknown>()
  const targets = new Map<Alias, unknown>()
  visit(doc, {
    Node(_key, node) {
      if (isAlias(node)) targets.set(node, anchors.get(node.source))
      else if (node.anchor !== undefined) anchors.set(node.anchor, node)
    },
  })
  return targets
}

function toGeneric(node: unknown, walk: Walk, depth = 0): GNode {
  if (depth > 200) throw new Error('yaml: exceeded max depth')
  walk.decodes++
  if (walk.aliasDepth > 0) walk.aliased++
  if (
    walk.aliased > 100 &&
    walk.decodes > 1000 &&
    walk.aliased / walk.decodes > allowedAliasRatio(walk.decodes)
  ) {
    throw new Error('yaml: document contains excessive aliasing')
  }
  if (isAlias(node)) {
    if (walk.expanding.has(node)) {
      throw new Error(`yaml: anchor '${node.source}' value contains itself`)
    }
    walk.expanding.add(node)
    walk.aliasDepth++
    try {
      return toGeneric(walk.targets.get(node), walk, depth + 1)
    } finally {
      walk.aliasDepth--
      walk.expanding.delete(node)
    }
  }
  const offset = (node as YamlLibNode | undefined)?.range?.[0] ?? 0
  const line = walk.lines.linePos(offset).line
  if (isMap(node)) {
    const explicit: (readonly [GNode, GNode])[] = []
    const merged: (readonly [GNode, GNode])[] = []
    for (const pair of node.items) {
      const key = toGeneric(pair.key, walk, depth + 1)
      if (key.kind === 'scalar' && key.text === '<<' && isScalar(pair.key)) {
        const source = toGeneric(pair.value, walk, depth + 1)
        const sources = source.kind === 'seq' ? source.items : [source]
        for (const s of sources) if (s.kind === 'map') merged.push(...s.pairs)
        continue
      }
      explicit.push([key, toGeneric(pair.value, walk, depth + 1)])
    }
    // Later pairs win (as yaml.v2 does for a Go map); explicit keys beat merged ones.
    const byKey = new Map<string, readonly [GNode, GNode]>()
    for (const pair of [...merged, ...explicit]) byKey.set(keyIdentity(pair[0]), pair)
    return { kind: 'map', line, pairs: [...byKey.values()] }
  }
  if (isSeq(node)) {
    return {
      kind: 'seq',
      line,
      items: node.items.map((item) => toGeneric(item, walk, depth + 1)),
    }
  }
  if (isScalar(node)) {
    const value: unknown = node.value
    const text = typeof node.source === 'string' ? node.source : String(value)
    if (value === null || value === undefined)
      return { kind: 'scalar', line, tag: 'null', value: null, text }
    if (typeof value === 'boolean') return { kind: 'scalar', line, tag: 'bool', value, text }
    if (typeof value === 'number') {
      return { kind: 'scalar', line, tag: classifyNumber(value, text), value, text }
    }
    if (typeof value === 'string') return { kind: 'scalar', line, tag: 'str', value, text: value }
    // Timestamps and other resolved types stay strings, as yaml.v2 keeps them for interface{}.
    return { kind: 'scalar', line, tag: 'str', value: text, text }
  }
  return { kind: 'scalar', line, tag: 'null', value: null, text: '' }
}

function keyIdentity(node: GNode): string {
  return node.kind === 'scalar'
    ? `${node.tag}:${String(node.value)}`
    : `${node.kind}@${String(node.line)}`
}

/** Formats a float the way Go's `%v` does (shortest repr, exponent outside 1e-4..1e21). */
function goFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN'
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf'
  if (value === 0) return '0'
  const exp = Math.floor(Math.log10(Math.abs(value)))
  if (exp < -4 || exp >= 21) {
    const [mantissa, e] = value.toExponential().split('e') as [string, string]
    const sign = e.startsWith('-') ? '-' : '+'
    const digits = e.replace(/^[-+]/, '').padStart(2, '0')
    return `${mantissa}e${sign}${digits}`
  }
  return String(value)
}

/** Formats a generic node the way Go's `%v` prints the decoded value. */
function goFormat(node: GNode): string {
  switch (node.kind) {
    case 'seq':
      return `[${node.items.map(goFormat).join(' ')}]`
    case 'map': {
      const entries = node.pairs.map(([k, v]) => `${goFormat(k)}:${goFormat(v)}`).sort()
      return `map[${entries.join(' ')}]`
    }
    case 'scalar':
      switch (node.tag) {
        case 'null':
          return '<nil>'
        case 'float':
          return typeof node.value === 'number' ? goFloat(node.value) : node.text
        case 'int':
        case 'uint':
          return node.text.includes(':') || typeof node.value !== 'number'
            ? node.text
            : classifyExactInteger(node.text, node.value)
        case 'bool':
        case 'str':
          return String(node.value)
      }
  }
}

function classifyExactInteger(text: string, value: number): string {
  if (Number.isSafeInteger(value)) return String(value)
  try {
    return BigInt(text.replaceAll('_', '')).toString()
  } catch {
    return String(value)
  }
}

// ---------------------------------------------------------------------------------------------
// Parsing and validation

function fail(name: string, problem: string): never {
  throw new RateLimitConfigError(name, problem)
}

function syntaxProblem(code: string, message: string, line: number): string {
  const text =
    code === 'MISSING_CHAR' && /closing/.test(message)
      ? 'found unexpected end of stream'
      : (message.split(' at line ')[0] ?? message)
  return `error loading config file: yaml: line ${String(line)}: ${text}`
}

function validateKeys(name: string, node: Extract<GNode, { kind: 'map' }>): void {
  for (const [key, value] of node.pairs) {
    if (key.kind !== 'scalar' || key.tag !== 'str') {
      fail(name, `config error, key is not of type string: ${goFormat(key)}`)
    }
    const keyText = key.value as string
    if (!VALID_KEYS.has(keyText)) fail(name, `config error, unknown key '${keyText}'`)
    // The contents of metadata are free-form.
    if (keyText === 'metadata') continue
    switch (value.kind) {
      case 'seq':
        for (const element of value.items) {
          if (element.kind !== 'map') {
            fail(
              name,
              `config error, yaml file contains list of type other than map: ${goFormat(element)}`,
            )
          }
          validateKeys(name, element)
        }
        break
      case 'map':
        validateKeys(name, value)
        break
      case 'scalar':
        if (value.tag === 'float' || value.tag === 'uint') fail(name, 'error checking config')
        break
    }
  }
}

/** Collects yaml.v2-style type errors while decoding. */
class Decoder {
  readonly errors: string[] = []

  #terror(node: GNode, type: string): void {
    if (node.kind === 'scalar') {
      const text = node.text.length > 10 ? `${node.text.slice(0, 7)}...` : node.text
      this.errors.push(
        `line ${String(node.line)}: cannot unmarshal !!${node.tag === 'uint' ? 'int' : node.tag} \`${text}\` into ${type}`,
      )
    } else {
      this.errors.push(`line ${String(node.line)}: cannot unmarshal !!${node.kind} into ${type}`)
    }
  }

  string(node: GNode | undefined): string {
    if (node === undefined) return ''
    if (node.kind !== 'scalar') {
      this.#terror(node, 'string')
      return ''
    }
    if (node.tag === 'null') return ''
    return typeof node.value === 'string' ? node.value : node.text
  }

  uint32(node: GNode | undefined): number {
    if (node === undefined) return 0
    if (node.kind === 'scalar') {
      if (node.tag === 'null') return 0
      if (
        node.tag === 'int' &&
        typeof node.value === 'number' &&
        node.value >= 0 &&
        node.value <= 0xffffffff
      ) {
        return node.value
      }
    }
    this.#terror(node, 'uint32')
    return 0
  }

  bool(node: GNode | undefined): boolean {
    if (node === undefined) return false
    if (node.kind === 'scalar') {
      if (node.tag === 'null') return false
      if (node.tag === 'bool') return node.value === true
    }
    this.#terror(node, 'bool')
    return false
  }

  list<T>(
    node: GNode | undefined,
    type: string,
    element: (n: Extract<GNode, { kind: 'map' }>) => T,
  ): T[] {
    if (node === undefined) return []
    if (node.kind === 'scalar' && node.tag === 'null') return []
    if (node.kind !== 'seq') {
      this.#terror(node, `[]${type}`)
      return []
    }
    const out: T[] = []
    for (const item of node.items) {
      if (item.kind === 'map') out.push(element(item))
      else if (!(item.kind === 'scalar' && item.tag === 'null')) this.#terror(item, type)
    }
    return out
  }

  fields(node: Extract<GNode, { kind: 'map' }>): Map<string, GNode> {
    const fields = new Map<string, GNode>()
    for (const [key, value] of node.pairs) {
      if (key.kind === 'scalar')
        fields.set(typeof key.value === 'string' ? key.value : key.text, value)
    }
    return fields
  }

  rateLimit(node: GNode | undefined): YamlRateLimit | undefined {
    if (node === undefined || (node.kind === 'scalar' && node.tag === 'null')) return undefined
    if (node.kind !== 'map') {
      this.#terror(node, 'config.YamlRateLimit')
      return undefined
    }
    return this.rateLimitFields(node)
  }

  rateLimitFields(node: Extract<GNode, { kind: 'map' }>): YamlRateLimit {
    const f = this.fields(node)
    return {
      requestsPerUnit: this.uint32(f.get('requests_per_unit')),
      unit: this.string(f.get('unit')),
      unlimited: this.bool(f.get('unlimited')),
      name: this.string(f.get('name')),
      replaces: this.list(f.get('replaces'), 'config.YamlReplaces', (m) => ({
        name: this.string(this.fields(m).get('name')),
      })),
      algorithm: this.string(f.get('algorithm')),
      burst: f.has('burst') ? this.uint32(f.get('burst')) : undefined,
      unitMultiplier: f.has('unit_multiplier') ? this.uint32(f.get('unit_multiplier')) : undefined,
    }
  }

  /** `rate_limit`: one block, or (issue 32) a list of windows. */
  rateLimitForms(node: GNode | undefined): Pick<YamlDescriptor, 'rateLimit' | 'rateLimits'> {
    if (node?.kind !== 'seq') return { rateLimit: this.rateLimit(node), rateLimits: undefined }
    return {
      rateLimit: undefined,
      rateLimits: this.list(node, 'config.YamlRateLimit', (m) => this.rateLimitFields(m)),
    }
  }

  metadata(node: GNode | undefined): JsonObject | undefined {
    if (node === undefined || (node.kind === 'scalar' && node.tag === 'null')) return undefined
    if (node.kind !== 'map') {
      this.#terror(node, 'map[string]interface {}')
      return undefined
    }
    return toJsonObject(node)
  }

  descriptor(node: Extract<GNode, { kind: 'map' }>): YamlDescriptor {
    const f = this.fields(node)
    return {
      key: this.string(f.get('key')),
      value: this.string(f.get('value')),
      ...this.rateLimitForms(f.get('rate_limit')),
      descriptors: this.list(f.get('descriptors'), 'config.YamlDescriptor', (m) =>
        this.descriptor(m),
      ),
      shadowMode: this.bool(f.get('shadow_mode')),
      quotaMode: this.bool(f.get('quota_mode')),
      detailedMetric: this.bool(f.get('detailed_metric')),
      valueToMetric: this.bool(f.get('value_to_metric')),
      shareThreshold: this.bool(f.get('share_threshold')),
      metadata: this.metadata(f.get('metadata')),
    }
  }
}

function toJson(node: GNode): JsonValue {
  switch (node.kind) {
    case 'map':
      return toJsonObject(node)
    case 'seq':
      return node.items.map(toJson)
    case 'scalar':
      return node.value
  }
}

function toJsonObject(node: Extract<GNode, { kind: 'map' }>): JsonObject {
  const out: JsonObject = {}
  for (const [key, value] of node.pairs) {
    const k =
      key.kind === 'scalar' ? (typeof key.value === 'string' ? key.value : key.text) : goFormat(key)
    out[k] = toJson(value)
  }
  return out
}

/**
 * Parses and validates one configuration file.
 *
 * @param name The file's config key, used as the prefix of every error message.
 * @param content The file's text.
 * @throws {@link RateLimitConfigError} With upstream's message for syntax errors, non-string or
 *   unknown keys, non-map list elements, unsupported leaf values and type mismatches.
 */
export function parseConfigFile(name: string, content: string): YamlRoot {
  const lineCounter = new LineCounter()
  const docs = parseAllDocuments(content, {
    version: '1.1',
    uniqueKeys: false,
    merge: true,
    lineCounter,
    prettyErrors: true,
  })
  const doc = Array.isArray(docs) ? docs[0] : undefined
  if (doc !== undefined) {
    const error = doc.errors[0]
    if (error !== undefined) {
      const line = error.linePos?.[0].line ?? 1
      fail(name, syntaxProblem(error.code, error.message, line))
    }
  }
  let root: GNode
  try {
    root =
      doc === undefined
        ? { kind: 'scalar', line: 1, tag: 'null', value: null, text: '' }
        : toGeneric(doc.contents, {
            lines: lineCounter,
            targets: resolveAliases(doc),
            expanding: new Set(),
            decodes: 0,
            aliased: 0,
            aliasDepth: 0,
          })
  } catch (error) {
    fail(name, `error loading config file: ${(error as Error).message}`)
  }
  if (root.kind === 'scalar' && root.tag === 'null') root = { kind: 'map', line: 1, pairs: [] }
  if (root.kind !== 'map') {
    const what = root.kind === 'seq' ? '!!seq' : `!!${root.tag} \`${root.text}\``
    fail(
      name,
      `error loading config file: yaml: unmarshal errors:\n  line ${String(root.line)}: cannot unmarshal ${what} into map[interface {}]interface {}`,
    )
  }
  validateKeys(name, root)
  const decoder = new Decoder()
  const fields = decoder.fields(root)
  const result: YamlRoot = {
    domain: decoder.string(fields.get('domain')),
    descriptors: decoder.list(fields.get('descriptors'), 'config.YamlDescriptor', (m) =>
      decoder.descriptor(m),
    ),
  }
  if (decoder.errors.length > 0) {
    fail(
      name,
      `error loading config file: yaml: unmarshal errors:\n  ${decoder.errors.join('\n  ')}`,
    )
  }
  return result
}
