/**
 * The Prometheus sink (`USE_PROMETHEUS`): each flush (every `STATS_FLUSH_INTERVAL`) goes through
 * a {@link MetricMapper} into prom-client metrics of the sink's own registry, as upstream's
 * embedded statsd_exporter does: counter deltas are added, gauges set, timer samples observed
 * (scaled by the mapping). The scrape endpoint itself is {@link servePrometheus}; with several
 * workers the primary serves the sum of the workers' registries.
 *
 * @module
 */
import { createServer, type Server } from 'node:http'
import { listenHttp } from '../listen.js'
import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client'
import type { MappedMetric, MetricMapper } from './mapper.js'
import type { FlushedStat, StatsSink } from './store.js'

type Metric = Counter | Gauge | Histogram | Summary

/** The prom-client type a flushed stat becomes. */
function kindOf(stat: FlushedStat, mapped: MappedMetric): string {
  if (stat.type !== 'timer') return stat.type
  return mapped.observerType
}

/** Splits gostats' `.__k=v` extra tags off a name: the bare name and the tags. */
export function splitExtraTags(name: string): { name: string; tags: Record<string, string> } {
  const tags: Record<string, string> = {}
  let rest = name
  for (let at = rest.lastIndexOf('.__'); at >= 0; at = rest.lastIndexOf('.__')) {
    const tag = rest.slice(at + 3)
    const eq = tag.indexOf('=')
    if (eq <= 0) break
    tags[tag.slice(0, eq)] = tag.slice(eq + 1)
    rest = rest.slice(0, at)
  }
  return { name: rest, tags }
}

/** Options of {@link PrometheusSink}. */
export interface PrometheusSinkOptions {
  readonly mapper: MetricMapper
  /** `EXTRA_TAGS` keys: labels every metric may carry. */
  readonly extraTagNames?: readonly string[]
}

/**
 * Keeps the mapped metrics in a prom-client {@link Registry} (never the global one). A stat whose
 * mapped name is already a metric of another type, or whose labels the metric cannot carry, is
 * counted in `conflicts` and skipped (statsd_exporter's "conflicting event"), never thrown.
 */
export class PrometheusSink implements StatsSink {
  /** The registry the scrape endpoint serves. */
  readonly registry = new Registry()
  readonly #mapper: MetricMapper
  readonly #metrics = new Map<string, { kind: string; metric: Metric; labels: Set<string> }>()
  readonly #labelNames: ReturnType<MetricMapper['labelNames']>
  readonly #extraTagNames: readonly string[]
  /** Stats skipped because their metric exists with another type or other labels. */
  conflicts = 0

  constructor(options: PrometheusSinkOptions) {
    this.#mapper = options.mapper
    this.#labelNames = options.mapper.labelNames()
    this.#extraTagNames = options.extraTagNames ?? []
  }

  #metric(mapped: MappedMetric, kind: string, labels: Record<string, string>): Metric | undefined {
    const existing = this.#metrics.get(mapped.name)
    if (existing !== undefined) {
      const fits = Object.keys(labels).every((l) => existing.labels.has(l))
      return existing.kind === kind && fits ? existing.metric : undefined
    }
    const names = new Set([
      ...(this.#labelNames.byName.get(mapped.name) ?? []),
      ...this.#labelNames.any,
      ...Object.keys(labels),
      ...this.#extraTagNames,
    ])
    const config = {
      name: mapped.name,
      help: mapped.help,
      labelNames: [...names],
      registers: [this.registry],
    }
    const metric =
      kind === 'counter'
        ? new Counter(config)
        : kind === 'gauge'
          ? new Gauge(config)
          : kind === 'histogram'
            ? new Histogram({ ...config, buckets: [...mapped.buckets] })
            : new Summary({ ...config, percentiles: [...mapped.quantiles] })
    this.#metrics.set(mapped.name, { kind, metric, labels: names })
    return metric
  }

  flush(stats: readonly FlushedStat[]): void {
    for (const stat of stats) {
      const { name, tags } = splitExtraTags(stat.name)
      const mapped = this.#mapper.map(name, stat.type)
      if (mapped === undefined) continue
      const kind = kindOf(stat, mapped)
      // The mapping's labels first (and winning), then the extra tags.
      const labels: Record<string, string> = { ...mapped.labels }
      for (const [k, v] of Object.entries(tags)) labels[k] ??= v
      const metric = this.#metric(mapped, kind, labels)
      if (metric === undefined) {
        this.conflicts++
        continue
      }
      if (metric instanceof Counter) metric.inc(labels, stat.value)
      else if (metric instanceof Gauge) metric.set(labels, stat.value)
      else metric.observe(labels, stat.value * mapped.scale)
    }
  }

  close(): Promise<void> {
    return Promise.resolve()
  }
}

/** Splits `PROMETHEUS_ADDR` (`host:port`, `[v6]:port`, `:port`) into host and port. */
export function parseListenAddress(addr: string): { host: string; port: number } {
  const at = addr.lastIndexOf(':')
  const host = addr.slice(0, at).replace(/^\[(.*)\]$/, '$1')
  return { host: host === '' ? '0.0.0.0' : host, port: Number(addr.slice(at + 1)) }
}

/**
 * Builds the scrape endpoint (not listening): `GET <path>` answers `metrics()` in the Prometheus
 * text format (0.0.4); other paths 404; a failure to collect 500 (logged by `onError`).
 *
 * @param path `PROMETHEUS_PATH`.
 * @param metrics The exposition text (a registry's, or the workers' aggregate).
 */
export function buildPrometheusServer(
  path: string,
  metrics: () => Promise<string>,
  onError: (error: unknown) => void,
): Server {
  return createServer((req, res) => {
    req.resume()
    const target = (req.url ?? '/').split('?')[0]
    if (target !== path || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
      res.end('404 page not found\n')
      return
    }
    metrics().then(
      (text) => {
        res.writeHead(200, {
          'content-type': Registry.PROMETHEUS_CONTENT_TYPE,
          'content-length': String(Buffer.byteLength(text)),
        })
        res.end(req.method === 'HEAD' ? undefined : text)
      },
      (error: unknown) => {
        onError(error)
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
        res.end('could not collect metrics\n')
      },
    )
  })
}

/** Listens on `addr` (`PROMETHEUS_ADDR`); resolves with the bound port. */
export function listenPrometheus(server: Server, addr: string): Promise<number> {
  const { host, port } = parseListenAddress(addr)
  return listenHttp(server, port, host)
}
