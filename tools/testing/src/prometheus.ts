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

/** GETs `url` and parses it; fails unless it is a 200 in the text format. */
export async function scrape(url: string): Promise<Map<string, Family>> {
  const response = await fetch(url)
  const text = await response.text()
  if (response.status !== 200) throw new Error(`scrape ${url}: ${String(response.status)} ${text}`)
  if (!(response.headers.get('content-type') ?? '').startsWith('text/plain; version=0.0.4')) {
    throw new Error(`scrape ${url}: content-type ${String(response.headers.get('content-type'))}`)
  }
  const families = parsePrometheusTextFormat(text) as Family[]
  return new Map(families.map((f) => [f.name, f]))
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
