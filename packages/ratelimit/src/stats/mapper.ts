/**
 * Prometheus names for the dotted statsd names, in prometheus/statsd_exporter's mapping format
 * (what upstream embeds): a YAML document with `defaults` and a list of `mappings`, each a `match`
 * (a glob where `*` is one dot-separated part, or with `match_type: regex` a regular expression)
 * and a `name` and `labels` that may use the match's groups as `$1` / `${1}`. The first mapping
 * that matches wins; `action: drop` discards; a stat no mapping matches keeps its name with every
 * character Prometheus does not allow replaced by `_`, and no labels.
 *
 * @see https://github.com/prometheus/statsd_exporter#metric-mapping-and-configuration
 * @module
 */
import { parse } from 'yaml'
import { SettingsError } from '@gatehouse/settings'
import type { FlushedStat } from './store.js'

/** How a timer is exposed. */
export type ObserverType = 'histogram' | 'summary'

/** The statsd types a mapping may be restricted to (`match_metric_type`). */
type MatchMetricType = 'counter' | 'gauge' | 'observer'

/** One compiled mapping. */
interface Mapping {
  readonly regex: RegExp
  readonly metricType: MatchMetricType | undefined
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly drop: boolean
  readonly observerType: ObserverType
  readonly buckets: readonly number[]
  readonly quantiles: readonly number[]
  readonly scale: number
  readonly help: string
}

/** Where one stat goes in Prometheus. */
export interface MappedMetric {
  /** Metric name (valid Prometheus name). */
  readonly name: string
  /** Label values by label name. */
  readonly labels: Readonly<Record<string, string>>
  /** For timers: histogram or summary. */
  readonly observerType: ObserverType
  /** Histogram buckets (upper bounds, in the observed unit). */
  readonly buckets: readonly number[]
  /** Summary quantiles (0 to 1). */
  readonly quantiles: readonly number[]
  /** Factor applied to timer values before observing them (0.001 turns ms into seconds). */
  readonly scale: number
  /** Help text. */
  readonly help: string
}

/** Prometheus' default histogram buckets (seconds), statsd_exporter's default. */
export const DEFAULT_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
]
const DEFAULT_QUANTILES: readonly number[] = [0.5, 0.9, 0.99]
const RATE_LIMIT_STATS = ['near_limit', 'over_limit', 'total_hits', 'within_limit', 'shadow_mode']

/**
 * The default mapping (upstream's `default_mapper.yaml` names): per-key rate limit counters with
 * `domain`, `key1` (and `key2` for deeper keys; further parts are dropped), the error counters,
 * the per-method request counters and response time histograms (milliseconds turned into
 * seconds unless `responseTimeAsMilliseconds`), and the configuration load counters.
 */
export function defaultMapperYaml(responseTimeAsMilliseconds: boolean): string {
  const lines = [
    'mappings:',
    ...RATE_LIMIT_STATS.flatMap((stat) => [
      `  - match: "ratelimit.service.rate_limit.*.*.${stat}"`,
      `    name: "ratelimit_service_rate_limit_${stat}"`,
      '    labels: { domain: "$1", key1: "$2" }',
    ]),
    ...RATE_LIMIT_STATS.flatMap((stat) => [
      `  - match: '^ratelimit\\.service\\.rate_limit\\.([^.]+)\\.([^.]+)\\.([^.]+)(?:\\..+)?\\.${stat}$'`,
      '    match_type: regex',
      `    name: "ratelimit_service_rate_limit_${stat}"`,
      '    labels: { domain: "$1", key1: "$2", key2: "$3" }',
    ]),
    '  - match: "ratelimit.service.call.should_rate_limit.*"',
    '    name: "ratelimit_service_should_rate_limit_error"',
    '    match_metric_type: counter',
    '    labels: { err_type: "$1" }',
    '  - match: "ratelimit_server.*.total_requests"',
    '    name: "ratelimit_service_total_requests"',
    '    match_metric_type: counter',
    '    labels: { grpc_method: "$1" }',
    '  - match: "ratelimit_server.*.response_time"',
    '    name: "ratelimit_service_response_time_seconds"',
    '    observer_type: histogram',
    ...(responseTimeAsMilliseconds ? [] : ['    scale: 0.001']),
    '    labels: { grpc_method: "$1" }',
    '  - match: "ratelimit.service.config_load_success"',
    '    name: "ratelimit_service_config_load_success"',
    '    match_metric_type: counter',
    '  - match: "ratelimit.service.config_load_error"',
    '    name: "ratelimit_service_config_load_error"',
    '    match_metric_type: counter',
  ]
  return `${lines.join('\n')}\n`
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const GROUP = /\$(?:\{(\d+)\}|(\d+))/g
const GROUP_IN_NAME = /\$(?:\{\d+\}|\d+)/

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function globToRegex(glob: string): RegExp {
  const parts = glob.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  return new RegExp(`^${parts.join('([^.]*)')}$`)
}

function numbers(value: unknown, what: string, problems: string[]): number[] | undefined {
  if (value === undefined) return undefined
  if (Array.isArray(value) && value.every((n) => typeof n === 'number' && Number.isFinite(n))) {
    return [...(value as number[])].sort((a, b) => a - b)
  }
  problems.push(`${what} must be a list of numbers`)
  return undefined
}

function observerOf(value: unknown, what: string, problems: string[]): ObserverType | undefined {
  if (value === undefined) return undefined
  if (value === 'histogram' || value === 'summary') return value
  problems.push(`${what} must be histogram or summary`)
  return undefined
}

/** Reads one entry of `mappings`; pushes what is wrong with it to `problems`. */
function compileMapping(
  raw: unknown,
  where: string,
  defaults: {
    matchType: string
    observerType: ObserverType
    buckets: readonly number[]
    quantiles: readonly number[]
  },
  problems: string[],
): Mapping | undefined {
  if (!isRecord(raw)) {
    problems.push(`${where} must be a mapping`)
    return undefined
  }
  const { match, name, labels = {}, action = 'map' } = raw
  const matchType = raw.match_type ?? defaults.matchType
  if (typeof match !== 'string' || match === '') {
    problems.push(`${where}.match must be a non-empty string`)
    return undefined
  }
  let regex: RegExp
  if (matchType === 'regex') {
    try {
      regex = new RegExp(match)
    } catch {
      problems.push(`${where}.match is not a valid regular expression`)
      return undefined
    }
  } else if (matchType === 'glob') regex = globToRegex(match)
  else {
    problems.push(`${where}.match_type must be glob or regex`)
    return undefined
  }
  const drop = action === 'drop'
  if (!drop && action !== 'map') problems.push(`${where}.action must be map or drop`)
  if (!drop && (typeof name !== 'string' || !NAME.test(name.replace(GROUP, 'x')))) {
    problems.push(`${where}.name must be a Prometheus metric name`)
  }
  if (
    !isRecord(labels) ||
    !Object.entries(labels).every(([k, v]) => LABEL.test(k) && typeof v === 'string')
  ) {
    problems.push(`${where}.labels must map label names to strings`)
  }
  const metricType = raw.match_metric_type
  if (
    metricType !== undefined &&
    !['counter', 'gauge', 'observer', 'timer'].includes(metricType as string)
  ) {
    problems.push(`${where}.match_metric_type must be counter, gauge or observer`)
  }
  const histogramOptions = isRecord(raw.histogram_options) ? raw.histogram_options : {}
  const summaryOptions = isRecord(raw.summary_options) ? raw.summary_options : {}
  const scale = raw.scale ?? 1
  if (typeof scale !== 'number' || !Number.isFinite(scale)) {
    problems.push(`${where}.scale must be a number`)
  }
  const help = raw.help ?? ''
  return {
    regex,
    metricType: metricType === 'timer' ? 'observer' : (metricType as MatchMetricType | undefined),
    name: typeof name === 'string' ? name : '',
    labels: isRecord(labels) ? (labels as Record<string, string>) : {},
    drop,
    observerType:
      observerOf(raw.observer_type ?? raw.timer_type, `${where}.observer_type`, problems) ??
      defaults.observerType,
    buckets:
      numbers(raw.buckets ?? histogramOptions.buckets, `${where}.buckets`, problems) ??
      defaults.buckets,
    quantiles:
      numbers(
        raw.quantiles ??
          (Array.isArray(summaryOptions.quantiles)
            ? summaryOptions.quantiles.map((q: unknown) => (isRecord(q) ? q.quantile : q))
            : undefined),
        `${where}.quantiles`,
        problems,
      ) ?? defaults.quantiles,
    scale: typeof scale === 'number' ? scale : 1,
    help: typeof help === 'string' ? help : '',
  }
}

/** Replaces `$1` / `${1}` in `template` with the groups of `match`. */
function expand(template: string, match: RegExpExecArray): string {
  return template.replace(GROUP, (_, braced: string | undefined, bare: string | undefined) => {
    return match[Number(braced ?? bare)] ?? ''
  })
}

/** A statsd name as a Prometheus name: invalid characters become `_`. */
export function escapeMetricName(name: string): string {
  const escaped = name.replace(/[^a-zA-Z0-9_]/g, '_')
  return /^[0-9]/.test(escaped) ? `_${escaped}` : escaped
}

/**
 * Maps statsd names to Prometheus metrics with a statsd_exporter mapping document.
 */
export class MetricMapper {
  readonly #mappings: readonly Mapping[]
  readonly #defaults: { observerType: ObserverType; buckets: readonly number[] }

  private constructor(
    mappings: readonly Mapping[],
    defaults: { observerType: ObserverType; buckets: readonly number[] },
  ) {
    this.#mappings = mappings
    this.#defaults = defaults
  }

  /**
   * Compiles a mapping document.
   *
   * @param text The YAML (statsd_exporter's `mapping` file format).
   * @param source Where it comes from, for the error message (`PROMETHEUS_MAPPER_YAML`).
   * @throws {@link SettingsError} Listing everything wrong with the document.
   */
  static fromYaml(text: string, source: string): MetricMapper {
    const problems: string[] = []
    let doc: unknown
    try {
      doc = parse(text) as unknown
    } catch (error) {
      throw new SettingsError([`${source}: not valid YAML: ${(error as Error).message}`])
    }
    if (!isRecord(doc))
      throw new SettingsError([`${source}: must be a YAML mapping with "mappings"`])
    const raw = isRecord(doc.defaults) ? doc.defaults : {}
    const defaults = {
      matchType: typeof raw.match_type === 'string' ? raw.match_type : 'glob',
      observerType:
        observerOf(raw.observer_type ?? raw.timer_type, 'defaults.observer_type', problems) ??
        'histogram',
      buckets: numbers(raw.buckets, 'defaults.buckets', problems) ?? DEFAULT_BUCKETS,
      quantiles: numbers(raw.quantiles, 'defaults.quantiles', problems) ?? DEFAULT_QUANTILES,
    }
    const list = doc.mappings ?? []
    if (!Array.isArray(list)) problems.push('mappings must be a list')
    const mappings = (Array.isArray(list) ? list : []).flatMap((m: unknown, i) => {
      const mapping = compileMapping(m, `mappings[${String(i)}]`, defaults, problems)
      return mapping === undefined ? [] : [mapping]
    })
    if (problems.length > 0) throw new SettingsError(problems.map((p) => `${source}: ${p}`))
    return new MetricMapper(mappings, defaults)
  }

  /**
   * The label names each static metric name can carry (the union over its mappings), so that
   * one metric can hold the series of several mappings (`{domain,key1}` and `{domain,key1,key2}`),
   * and those of mappings whose name uses groups (`any`: every metric may carry them).
   */
  labelNames(): { byName: ReadonlyMap<string, ReadonlySet<string>>; any: ReadonlySet<string> } {
    const byName = new Map<string, Set<string>>()
    // Labels of mappings whose name uses groups: any metric may carry them.
    const any = new Set<string>()
    for (const m of this.#mappings) {
      if (m.drop) continue
      let set = GROUP_IN_NAME.test(m.name) ? any : byName.get(m.name)
      if (set === undefined) byName.set(m.name, (set = new Set()))
      for (const label of Object.keys(m.labels)) set.add(label)
    }
    return { byName, any }
  }

  /**
   * Where the stat `name` of `type` goes.
   *
   * @returns The metric, or undefined when a mapping drops it.
   */
  map(name: string, type: FlushedStat['type']): MappedMetric | undefined {
    const kind: MatchMetricType = type === 'timer' ? 'observer' : type
    for (const m of this.#mappings) {
      if (m.metricType !== undefined && m.metricType !== kind) continue
      const match = m.regex.exec(name)
      if (match === null) continue
      if (m.drop) return undefined
      const mappedName = expand(m.name, match)
      if (!NAME.test(mappedName)) return undefined
      const labels: Record<string, string> = {}
      for (const [label, template] of Object.entries(m.labels)) {
        labels[label] = expand(template, match)
      }
      return {
        name: mappedName,
        labels,
        observerType: m.observerType,
        buckets: m.buckets,
        quantiles: m.quantiles,
        scale: m.scale,
        help: m.help !== '' ? m.help : `Metric autogenerated by statsd_exporter mapping.`,
      }
    }
    return {
      name: escapeMetricName(name),
      labels: {},
      observerType: this.#defaults.observerType,
      buckets: this.#defaults.buckets,
      quantiles: DEFAULT_QUANTILES,
      scale: 1,
      help: 'Metric autogenerated by statsd_exporter.',
    }
  }
}
