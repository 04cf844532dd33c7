declare module 'parse-prometheus-text-format' {
  /** Parses the Prometheus text exposition format into metric families (JSON shape of prom2json). */
  export default function parsePrometheusTextFormat(text: string): unknown[]
}
