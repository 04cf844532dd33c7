/**
 * Scrapes a Prometheus endpoint and parses the text format with parse-prometheus-text-format.
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format'

/** One series of a parsed family. */
export interface Series {
  readonly labels?: Record<string, string>
  readonly value?: string
  readonly count?: string
  readonly sum?: string
  readonly buckets?: Record<string, string>
}

/** A parsed metric family. */
export interface Family {
  readonly name: string
  readonly help: string
  readonly type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED'
  readonly metrics: readonly Series[]
}

/**
 * GETs `url` and parses it; fails unless it is a 200 in the text format.
 *
 * The parser flattens a histogram's labelled series into one (its `le` buckets overwrite each
 * other and labelled `_count`/`_sum` samples are dropped), so each histogram's `<name>_bucket`,
 * `<name>_count` and `<name>_sum` samples are also given as untyped families of their own, one
 * series per label set (parsed from the same text without the histogram `# TYPE` lines).
 */
export async function scrape(url: string): Promise<Map<string, Family>> {
  const response = await fetch(url)
  const text = await response.text()
  if (response.status !== 200) throw new Error(`scrape ${url}: ${String(response.status)} ${text}`)
  if (!(response.headers.get('content-type') ?? '').startsWith('text/plain; version=0.0.4')) {
    throw new Error(`scrape ${url}: content-type ${String(response.headers.get('content-type'))}`)
  }
  const families = parsePrometheusTextFormat(text) as Family[]
  const parsed = new Map(families.map((f) => [f.name, f]))
  const histograms = families.filter((f) => f.type === 'HISTOGRAM').map((f) => f.name)
  if (histograms.length > 0) {
    const untyped = text
      .split('\n')
      .filter((line) => !histograms.some((h) => line === `# TYPE ${h} histogram`))
      .join('\n')
    for (const f of parsePrometheusTextFormat(untyped) as Family[]) {
      if (histograms.some((h) => [`${h}_bucket`, `${h}_count`, `${h}_sum`].includes(f.name))) {
        // Series of one histogram come as runs (count, sum, buckets per label set): merge them.
        const seen = parsed.get(f.name)
        parsed.set(f.name, seen ? { ...seen, metrics: [...seen.metrics, ...f.metrics] } : f)
      }
    }
  }
  return parsed
}

/** The series of `family` whose labels are exactly `labels`. */
export function series(
  families: Map<string, Family>,
  family: string,
  labels: Record<string, string>,
): Series | undefined {
  const key = JSON.stringify(Object.entries(labels).sort())
  return families
    .get(family)
    ?.metrics.find((m) => JSON.stringify(Object.entries(m.labels ?? {}).sort()) === key)
}
