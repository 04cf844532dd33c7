/**
 * The loaded rate limit configuration: a tree of descriptors per domain, built from YAML files,
 * and the matching algorithm that finds the limit for a request descriptor. Semantics and error
 * texts are upstream's (`src/config/config_impl.go`).
 *
 * @module
 */
import type { Descriptor, JsonObject, Unit } from '../protocol/types.js'
import { UNITS } from '../protocol/types.js'
import type { RateLimitStats, StatsManager } from '../stats/manager.js'
import { ALGORITHMS, isAlgorithm, type Algorithm } from '../limiter/algorithms.js'
import { MAX_UNIT_MULTIPLIER, MAX_WINDOW_SECONDS, windowSeconds } from '../limiter/units.js'
import { RateLimitConfigError } from './errors.js'
import { parseConfigFile, type YamlDescriptor, type YamlRateLimit, type YamlRoot } from './yaml.js'
import { compileWildcard, matchWildcard, type WildcardPattern } from './wildcard.js'

/**
 * A limit that applies to a request descriptor: from a configured `rate_limit` block, or made up
 * from the descriptor's own `limit` override.
 */
export interface RateLimit {
  /** Full key of the rule, e.g. `domain.key1_value1.subkey1` (for `/rlconfig`). */
  readonly fullKey: string
  readonly requestsPerUnit: number
  /** `UNKNOWN` only for unlimited rules. */
  readonly unit: Unit
  /**
   * `unit_multiplier` (issue 32): the window is this many units long (1 for upstream's rules).
   * Fixed and sliding windows start at multiples of their length since the epoch; a token bucket
   * refills `requests_per_unit` per window.
   */
  readonly unitMultiplier: number
  /**
   * What this window's store keys end with: empty for upstream's keys (a one-unit window that is
   * the rule's only or first one), else `_<window seconds>s`, so that windows of one rule, or
   * rules before and after a reload, never share a counter. See {@link windowKeySuffix}.
   */
  readonly keySuffix: string
  /**
   * The windows of a rule whose `rate_limit` is a list (issue 32), each a full {@link RateLimit}
   * of its own (unit, limit, algorithm, keys, stats) sharing the rule's fields; the rule's own
   * fields are its first window's. Undefined for rules of one window.
   */
  readonly windows: readonly RateLimit[] | undefined
  /**
   * The window's name in stats and `/rlconfig` (`<multiplier><unit letter>`: `1s`, `30s`, `5m`,
   * `6h`, `1d`, `1w`, `1mo`, `1y`): its stats are `<rule key>_<name>.*`. Empty for rules of one
   * window, whose stats keep upstream's names.
   */
  readonly windowName: string
  /** Answer OK with remaining 4294967295 without touching the store. */
  readonly unlimited: boolean
  /** Over-limit results are reported as OK (and counted as `shadow_mode`). */
  readonly shadowMode: boolean
  /** Over-limit fails the request only if every quota descriptor is over. */
  readonly quotaMode: boolean
  /** The rule's `name` (for `replaces`), or undefined. */
  readonly name: string | undefined
  /** Names of rules this one replaces. */
  readonly replaces: readonly string[]
  /** Free-form metadata returned in dynamic metadata. */
  readonly metadata: JsonObject | undefined
  /** Where this limit's counters go. */
  readonly stats: RateLimitStats
  /**
   * Per request entry: the `share_threshold` value pattern to use in the cache key instead of
   * the request's value (undefined entries use the request's value).
   */
  readonly sharePatterns: readonly (string | undefined)[] | undefined
  /** How the rule counts: its `algorithm`, else `RATE_LIMIT_ALGORITHM`. */
  readonly algorithm: Algorithm
  /**
   * Token bucket capacity in hits: the rule's `burst`, else `requests_per_unit`. Equal to
   * `requests_per_unit` for the other algorithms.
   */
  readonly burst: number
}

/**
 * Builds a {@link RateLimit}; fields not given take their neutral value (not unlimited, no
 * shadow or quota mode, no name, no replaces, no metadata, no share patterns, fixed window,
 * burst = `requestsPerUnit`).
 */
export function newRateLimit(
  fullKey: string,
  stats: RateLimitStats,
  fields: Partial<Omit<RateLimit, 'fullKey' | 'stats'>> &
    Pick<RateLimit, 'requestsPerUnit' | 'unit'>,
): RateLimit {
  return {
    fullKey,
    unlimited: false,
    shadowMode: false,
    quotaMode: false,
    name: undefined,
    replaces: [],
    metadata: undefined,
    sharePatterns: undefined,
    algorithm: 'fixed_window',
    burst: fields.requestsPerUnit,
    unitMultiplier: 1,
    keySuffix: '',
    windows: undefined,
    windowName: '',
    ...fields,
    stats,
  }
}

/** A window's unit in its name ({@link RateLimit.windowName}). */
const UNIT_LETTERS: Readonly<Record<Unit, string>> = {
  UNKNOWN: 'x',
  SECOND: 's',
  MINUTE: 'm',
  HOUR: 'h',
  DAY: 'd',
  WEEK: 'w',
  MONTH: 'mo',
  YEAR: 'y',
}

/** The most windows one rule's `rate_limit` list may have. */
export const MAX_WINDOWS_PER_RULE = 8

/** A window's name (see {@link RateLimit.windowName}), e.g. `30s`, `1d`. */
export function windowName(unit: Unit, unitMultiplier: number): string {
  return `${String(unitMultiplier)}${UNIT_LETTERS[unit]}`
}

/**
 * The key suffix of a rule's window (see {@link RateLimit.keySuffix}): empty for a one-unit
 * window at `index` 0, else `_<seconds>s` (ending in a letter, it never equals an upstream
 * fixed-window key, which ends in digits, nor a token-bucket key, which ends in `tb`).
 *
 * @param index The window's place in the rule's `rate_limit` list (0 for a single window).
 */
export function windowKeySuffix(unit: Unit, unitMultiplier: number, index: number): string {
  if (unitMultiplier === 1 && index === 0) return ''
  return `_${String(windowSeconds({ unit, unitMultiplier }))}s`
}

/**
 * One configuration file: its config key (used in error texts) and either its YAML text or, for
 * a resource pushed by a management server (`config/xds.ts`), the same structure already
 * decoded, which then goes through the same validation.
 */
export type ConfigFile =
  | { readonly name: string; readonly content: string }
  | { readonly name: string; readonly root: YamlRoot }

interface DescriptorNode {
  /** `key` or `key_value`. */
  readonly finalKey: string
  readonly key: string
  readonly value: string
  readonly limit: RateLimit | undefined
  readonly children: Map<string, DescriptorNode>
  readonly wildcards: { readonly pattern: WildcardPattern; readonly node: DescriptorNode }[]
  readonly detailedMetric: boolean
  readonly valueToMetric: boolean
  readonly shareThreshold: boolean
}

function newNode(finalKey = '', key = '', value = ''): DescriptorNode {
  return {
    finalKey,
    key,
    value,
    limit: undefined,
    children: new Map(),
    wildcards: [],
    detailedMetric: false,
    valueToMetric: false,
    shareThreshold: false,
  }
}

const UNIT_BY_NAME: ReadonlyMap<string, Unit> = new Map(UNITS.map((unit) => [unit, unit]))

/** Options of {@link RateLimitConfig.load}. */
export interface LoadConfigOptions {
  /** Creates the per-key counters. */
  readonly stats: StatsManager
  /** `MERGE_DOMAIN_CONFIG`: several files may define descriptors of one domain. @default false */
  readonly mergeDomainConfig?: boolean
  /**
   * `RATE_LIMIT_ALGORITHM`: the algorithm of rules that name none, and of descriptor `limit`
   * overrides. @default 'fixed_window'
   */
  readonly defaultAlgorithm?: Algorithm
  /**
   * Algorithms the backend cannot run, with the reason shown in the load error (memcache:
   * `token_bucket`). @default none
   */
  readonly unsupportedAlgorithms?: Readonly<Partial<Record<Algorithm, string>>>
}

/** What {@link loadDescriptors} needs besides the tree. */
interface LoadContext {
  readonly fileName: string
  readonly stats: StatsManager
  readonly defaultAlgorithm: Algorithm
  readonly unsupportedAlgorithms: Readonly<Partial<Record<Algorithm, string>>>
}

/**
 * A loaded, immutable configuration. Create with {@link RateLimitConfig.load}; a failed load
 * throws and leaves any previous configuration untouched.
 */
export class RateLimitConfig {
  readonly #domains: Map<string, DescriptorNode>
  readonly #stats: StatsManager
  readonly #defaultAlgorithm: Algorithm
  /** {@link couplesDescriptors}, found on first use. */
  #couples: boolean | undefined

  private constructor(
    domains: Map<string, DescriptorNode>,
    stats: StatsManager,
    defaultAlgorithm: Algorithm,
  ) {
    this.#domains = domains
    this.#stats = stats
    this.#defaultAlgorithm = defaultAlgorithm
  }

  /**
   * Parses, validates and builds a configuration from files, in the order given.
   *
   * @throws {@link RateLimitConfigError} With upstream's `<name>: <problem>` text for the first
   *   problem found (and, in the same style, for a bad `algorithm` or `burst`, or an algorithm
   *   the backend cannot run).
   */
  static load(files: readonly ConfigFile[], options: LoadConfigOptions): RateLimitConfig {
    const domains = new Map<string, DescriptorNode>()
    const defaultAlgorithm = options.defaultAlgorithm ?? 'fixed_window'
    const unsupportedAlgorithms = options.unsupportedAlgorithms ?? {}
    for (const file of files) {
      const root = 'root' in file ? file.root : parseConfigFile(file.name, file.content)
      if (root.domain === '')
        throw new RateLimitConfigError(file.name, 'config file cannot have empty domain')
      let domainNode = domains.get(root.domain)
      if (domainNode !== undefined) {
        if (options.mergeDomainConfig !== true) {
          throw new RateLimitConfigError(
            file.name,
            `duplicate domain '${root.domain}' in config file`,
          )
        }
      } else {
        domainNode = newNode(root.domain)
        domains.set(root.domain, domainNode)
      }
      const context: LoadContext = {
        fileName: file.name,
        stats: options.stats,
        defaultAlgorithm,
        unsupportedAlgorithms,
      }
      loadDescriptors(context, domainNode, `${root.domain}.`, root.descriptors)
    }
    return new RateLimitConfig(domains, options.stats, defaultAlgorithm)
  }

  /**
   * Whether a rule makes the outcome of one descriptor depend on the other descriptors of the
   * same request: a rule with `replaces` (it drops the replaced rules' limits from the request)
   * or with `quota_mode` (a quota descriptor over its limit fails the request only when every
   * quota descriptor of the request is over). Without such rules a request's descriptors are
   * decided independently of each other (the service then allows clients to coalesce requests:
   * see `COALESCE_MAX_DESCRIPTORS_HEADER`).
   */
  get couplesDescriptors(): boolean {
    this.#couples ??= [...this.#domains.values()].some(coupling)
    return this.#couples
  }

  /** Domains in this configuration. */
  get domains(): readonly string[] {
    return [...this.#domains.keys()]
  }

  /**
   * Finds the limit for one request descriptor (upstream `GetLimit`).
   *
   * Unknown domain: counts `domain_not_found` (upstream's `<domain>.domain_not_found` for the
   * first `STATS_MAX_UNKNOWN_DOMAINS` domains) and returns undefined. A descriptor
   * `limit` override applies without a config match (the domain must exist), with the default
   * algorithm (`RATE_LIMIT_ALGORITHM`). Otherwise the
   * entries walk the tree: at each level `key_value` beats the first matching wildcard, which
   * beats the bare `key`; only a rule on the node matched by the **last** entry counts.
   *
   * @returns The limit, or undefined when nothing applies (the descriptor is then allowed).
   */
  getLimit(domain: string, descriptor: Descriptor): RateLimit | undefined {
    const root = this.#domains.get(domain)
    if (root === undefined) {
      this.#stats.domainNotFound(domain).add()
      return undefined
    }
    const entries = descriptor.entries
    if (descriptor.limit !== undefined) {
      const key = entries.map((e) => (e.value === '' ? e.key : `${e.key}_${e.value}`))
      const fullKey = [domain, ...key].join('.')
      return newRateLimit(fullKey, this.#stats.requestStats(domain, fullKey), {
        requestsPerUnit: descriptor.limit.requestsPerUnit,
        unit: descriptor.limit.unit,
        algorithm: this.#defaultAlgorithm,
      })
    }

    let node = root
    let result: RateLimit | undefined
    let leaf: DescriptorNode | undefined
    let sharePatterns: (string | undefined)[] | undefined
    let valueToMetric = false
    const metricParts: string[] = []
    const last = entries.length - 1
    for (let i = 0; i <= last; i++) {
      const entry = entries[i] as (typeof entries)[number]
      const keyValue = `${entry.key}_${entry.value}`
      let next = node.children.get(keyValue)
      let part: string
      if (next !== undefined) {
        part = next.finalKey
      } else {
        for (const wildcard of node.wildcards) {
          if (matchWildcard(wildcard.pattern, keyValue)) {
            next = wildcard.node
            break
          }
        }
        if (next !== undefined) {
          if (next.shareThreshold) {
            sharePatterns ??= []
            sharePatterns[i] = next.value
            part = next.finalKey
          } else part = next.valueToMetric ? keyValue : next.finalKey
        } else {
          next = node.children.get(entry.key)
          if (next === undefined) break
          part = next.valueToMetric ? keyValue : next.finalKey
        }
      }
      if (next.valueToMetric) valueToMetric = true
      metricParts.push(part)
      if (next.limit !== undefined && i === last) {
        result = next.limit
        leaf = next
      }
      if (next.children.size === 0) break
      node = next
    }
    if (result === undefined || leaf === undefined) return undefined

    let statsKey: string | undefined
    if (leaf.detailedMetric) {
      statsKey = [
        domain,
        ...entries.map((e, i) => `${e.key}_${sharePatterns?.[i] ?? e.value}`),
      ].join('.')
    } else if (valueToMetric) {
      statsKey = [domain, ...metricParts].join('.')
    }
    if (statsKey === undefined && sharePatterns === undefined) return result
    const key = statsKey
    const perRequest = (limit: RateLimit): RateLimit => ({
      ...limit,
      stats:
        key === undefined
          ? limit.stats
          : this.#stats.requestStats(
              domain,
              limit.windowName === '' ? key : `${key}_${limit.windowName}`,
            ),
      sharePatterns,
    })
    const windows = result.windows?.map(perRequest)
    return windows === undefined ? perRequest(result) : { ...(windows[0] as RateLimit), windows }
  }

  /**
   * The configuration as text, one line per rule (upstream `Dump()`, used by `/rlconfig`):
   * `<fullKey>: unit=<UNIT> requests_per_unit=<n>, shadow_mode: <bool>, quota_mode: <bool>`,
   * followed by `, unit_multiplier: <n>` for windows of several units and `, algorithm: <name>`
   * (and `, burst: <n>` for a token bucket) for rules that do not use the fixed window, so
   * upstream's lines stay as they are. A rule with a list of windows has one line per window,
   * `<fullKey>: window=<name> unit=…`.
   */
  dump(): string {
    let out = ''
    const visit = (node: DescriptorNode): void => {
      for (const child of node.children.values()) {
        const rule = child.limit
        for (const limit of rule?.windows ?? (rule === undefined ? [] : [rule])) {
          const unit = limit.unlimited ? 'UNKNOWN' : limit.unit
          const rpu = limit.unlimited ? 0 : limit.requestsPerUnit
          let extra = ''
          if (limit.unitMultiplier !== 1)
            extra = `, unit_multiplier: ${String(limit.unitMultiplier)}`
          if (!limit.unlimited && limit.algorithm !== 'fixed_window') {
            extra += `, algorithm: ${limit.algorithm}`
            if (limit.algorithm === 'token_bucket') extra += `, burst: ${String(limit.burst)}`
          }
          const window = limit.windowName === '' ? '' : ` window=${limit.windowName}`
          out += `${limit.fullKey}:${window} unit=${unit} requests_per_unit=${String(rpu)}, shadow_mode: ${String(limit.shadowMode)}, quota_mode: ${String(limit.quotaMode)}${extra}\n`
        }
        visit(child)
      }
    }
    for (const root of this.#domains.values()) visit(root)
    return out
  }
}

/**
 * The rule's algorithm and burst, checked: a known algorithm the backend runs, and a `burst`
 * (at least 1) only on a token bucket.
 */
function algorithmOf(
  context: LoadContext,
  rl: YamlRateLimit,
): { algorithm: Algorithm; burst: number } {
  const { fileName } = context
  const named = rl.algorithm
  if (named !== '' && !isAlgorithm(named)) {
    throw new RateLimitConfigError(
      fileName,
      `invalid rate limit algorithm '${named}' (expected one of ${ALGORITHMS.join(', ')})`,
    )
  }
  const algorithm = named === '' ? context.defaultAlgorithm : named
  if (rl.burst !== undefined) {
    if (algorithm !== 'token_bucket') {
      throw new RateLimitConfigError(
        fileName,
        `burst is only valid with algorithm 'token_bucket' (the rule's algorithm is '${algorithm}')`,
      )
    }
    if (rl.burst === 0) throw new RateLimitConfigError(fileName, 'burst must be at least 1')
    if (rl.requestsPerUnit === 0 && !rl.unlimited) {
      throw new RateLimitConfigError(
        fileName,
        'burst needs requests_per_unit of at least 1 (the refill rate)',
      )
    }
  }
  const refused = rl.unlimited ? undefined : context.unsupportedAlgorithms[algorithm]
  if (refused !== undefined) {
    throw new RateLimitConfigError(
      fileName,
      `rate limit algorithm '${algorithm}' is not supported: ${refused}`,
    )
  }
  return { algorithm, burst: rl.burst ?? rl.requestsPerUnit }
}

/**
 * The rule's `unit_multiplier`, checked: at least 1, at most {@link MAX_UNIT_MULTIPLIER}, a
 * window of at most {@link MAX_WINDOW_SECONDS}, and none on an unlimited rule.
 */
function unitMultiplierOf(fileName: string, rl: YamlRateLimit, unit: Unit): number {
  const multiplier = rl.unitMultiplier
  if (multiplier === undefined) return 1
  if (rl.unlimited) {
    throw new RateLimitConfigError(fileName, 'should not specify unit_multiplier when unlimited')
  }
  if (multiplier < 1) {
    throw new RateLimitConfigError(
      fileName,
      `unit_multiplier must be at least 1 (got ${String(multiplier)}; leave it out for one ${unit.toLowerCase()})`,
    )
  }
  if (multiplier > MAX_UNIT_MULTIPLIER) {
    throw new RateLimitConfigError(
      fileName,
      `unit_multiplier must be at most ${String(MAX_UNIT_MULTIPLIER)} (got ${String(multiplier)})`,
    )
  }
  const seconds = windowSeconds({ unit, unitMultiplier: multiplier })
  if (seconds > MAX_WINDOW_SECONDS) {
    throw new RateLimitConfigError(
      fileName,
      `unit_multiplier ${String(multiplier)} with unit ${unit} makes a window of ${String(seconds)} seconds; the longest allowed is ${String(MAX_WINDOW_SECONDS)} seconds (10 years of 365 days)`,
    )
  }
  return multiplier
}

/** The unit of a `rate_limit` block, checked as upstream does (none when unlimited). */
function unitOf(fileName: string, rl: YamlRateLimit): Unit {
  const unit = UNIT_BY_NAME.get(rl.unit.toUpperCase())
  const validUnit = unit !== undefined && unit !== 'UNKNOWN'
  if (rl.unlimited) {
    if (validUnit) {
      throw new RateLimitConfigError(fileName, 'should not specify rate limit unit when unlimited')
    }
  } else if (!validUnit) {
    throw new RateLimitConfigError(fileName, `invalid rate limit unit '${rl.unit}'`)
  }
  return unit ?? 'UNKNOWN'
}

/** Upstream's checks of `replaces`. */
function checkReplaces(fileName: string, rl: YamlRateLimit): void {
  for (const replace of rl.replaces) {
    if (replace.name === '') {
      throw new RateLimitConfigError(fileName, 'should not have an empty replaces entry')
    }
    if (replace.name === rl.name) {
      throw new RateLimitConfigError(
        fileName,
        'replaces should not contain name of same descriptor',
      )
    }
  }
}

/**
 * The limit of a descriptor's `rate_limit`: upstream's block, or (issue 32) a list of windows,
 * which becomes a rule with {@link RateLimit.windows} (a list of one window is that block).
 */
function ruleOf(context: LoadContext, d: YamlDescriptor, fullKey: string): RateLimit | undefined {
  const list = d.rateLimits
  if (list !== undefined && list.length !== 1) return windowsOf(context, d, fullKey, list)
  const rl = list?.[0] ?? d.rateLimit
  if (rl === undefined) return undefined
  const { fileName, stats } = context
  const unit = unitOf(fileName, rl)
  checkReplaces(fileName, rl)
  const { algorithm, burst } = algorithmOf(context, rl)
  const unitMultiplier = unitMultiplierOf(fileName, rl, unit)
  return newRateLimit(fullKey, stats.rateLimitStats(fullKey), {
    algorithm,
    burst,
    requestsPerUnit: rl.requestsPerUnit,
    unit,
    unitMultiplier,
    keySuffix: rl.unlimited ? '' : windowKeySuffix(unit, unitMultiplier, 0),
    unlimited: rl.unlimited,
    shadowMode: d.shadowMode,
    quotaMode: d.quotaMode,
    name: rl.name === '' ? undefined : rl.name,
    replaces: rl.replaces.map((r) => r.name),
    metadata: d.metadata,
  })
}

/**
 * A rule of several windows: each list entry is a window (`unit`, `requests_per_unit`, optional
 * `unit_multiplier`, `algorithm`, `burst`); `name` and `replaces` name the rule and go on the
 * first entry; `unlimited` has no place in a list; windows differ in length.
 */
function windowsOf(
  context: LoadContext,
  d: YamlDescriptor,
  fullKey: string,
  list: readonly YamlRateLimit[],
): RateLimit {
  const { fileName, stats } = context
  if (list.length === 0) {
    throw new RateLimitConfigError(fileName, `rate_limit list of '${fullKey}' is empty`)
  }
  if (list.length > MAX_WINDOWS_PER_RULE) {
    throw new RateLimitConfigError(
      fileName,
      `rate_limit list of '${fullKey}' has ${String(list.length)} windows; at most ${String(MAX_WINDOWS_PER_RULE)} are allowed`,
    )
  }
  const first = list[0] as YamlRateLimit
  checkReplaces(fileName, first)
  const lengths = new Map<number, number>()
  const windows = list.map((rl, index) => {
    const where = `rate_limit list of '${fullKey}', window ${String(index + 1)}`
    if (rl.unlimited) {
      throw new RateLimitConfigError(
        fileName,
        `${where}: unlimited is not allowed in a list of windows (use a single rate_limit block)`,
      )
    }
    if (index > 0 && (rl.name !== '' || rl.replaces.length > 0)) {
      throw new RateLimitConfigError(
        fileName,
        `${where}: name and replaces belong to the rule: put them on its first window`,
      )
    }
    const unit = unitOf(fileName, rl)
    const { algorithm, burst } = algorithmOf(context, rl)
    const unitMultiplier = unitMultiplierOf(fileName, rl, unit)
    const seconds = windowSeconds({ unit, unitMultiplier })
    const same = lengths.get(seconds)
    if (same !== undefined) {
      throw new RateLimitConfigError(
        fileName,
        `${where}: window ${String(same + 1)} has the same length (${String(seconds)} seconds); each window of a rule needs a length of its own`,
      )
    }
    lengths.set(seconds, index)
    const name = windowName(unit, unitMultiplier)
    return newRateLimit(fullKey, stats.rateLimitStats(`${fullKey}_${name}`), {
      algorithm,
      burst,
      requestsPerUnit: rl.requestsPerUnit,
      unit,
      unitMultiplier,
      keySuffix: windowKeySuffix(unit, unitMultiplier, index),
      windowName: name,
      shadowMode: d.shadowMode,
      quotaMode: d.quotaMode,
      name: first.name === '' ? undefined : first.name,
      replaces: first.replaces.map((r) => r.name),
      metadata: d.metadata,
    })
  })
  return { ...(windows[0] as RateLimit), windows }
}

function loadDescriptors(
  context: LoadContext,
  parent: DescriptorNode,
  parentKey: string,
  descriptors: readonly YamlDescriptor[],
): void {
  const { fileName } = context
  for (const d of descriptors) {
    if (d.key === '') throw new RateLimitConfigError(fileName, 'descriptor has empty key')
    const finalKey = d.value === '' ? d.key : `${d.key}_${d.value}`
    const fullKey = parentKey + finalKey
    if (parent.children.has(finalKey)) {
      throw new RateLimitConfigError(fileName, `duplicate descriptor composite key '${fullKey}'`)
    }
    const limit = ruleOf(context, d, fullKey)
    if (d.shareThreshold && !d.value.includes('*')) {
      throw new RateLimitConfigError(
        fileName,
        `share_threshold can only be used with wildcard values (containing '*'), but found key '${finalKey}'`,
      )
    }
    const node: DescriptorNode = {
      ...newNode(finalKey, d.key, d.value),
      limit,
      detailedMetric: d.detailedMetric,
      valueToMetric: d.valueToMetric,
      shareThreshold: d.shareThreshold,
    }
    loadDescriptors(context, node, `${fullKey}.`, d.descriptors)
    parent.children.set(finalKey, node)
    if (finalKey.includes('*')) parent.wildcards.push({ pattern: compileWildcard(finalKey), node })
  }
}

/** Whether a rule at or below `node` has `replaces` or `quota_mode` (see `couplesDescriptors`). */
function coupling(node: DescriptorNode): boolean {
  const limit = node.limit
  if (limit !== undefined && (limit.quotaMode || limit.replaces.length > 0)) return true
  for (const child of node.children.values()) if (coupling(child)) return true
  for (const wildcard of node.wildcards) if (coupling(wildcard.node)) return true
  return false
}
