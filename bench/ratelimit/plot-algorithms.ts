/**
 * The picture of the package README's "Algorithms" section: a bursty client against a real
 * in-process service (`buildRateLimitApp`, memory backend, HTTP `/json`, a fake clock so that the
 * run is exact and takes a second), one rule per algorithm with the same limit (10 per minute),
 * and the cumulative allowed requests of each over four minutes, written as a plain SVG to
 * `packages/ratelimit/docs/algorithms.svg`.
 *
 * Usage (from the repository root): npx tsx --conditions=dev-source bench/ratelimit/plot-algorithms.ts
 */
import { FakeClock, getFreePort } from '@gatehouse/testing'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pino } from 'pino'
import { buildRateLimitApp, loadSettings } from '#internal/ratelimit/index.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const OUT = join(ROOT, 'packages/ratelimit/docs/algorithms.svg')
const ALGORITHMS = ['fixed_window', 'sliding_window', 'token_bucket'] as const
const COLORS: Record<(typeof ALGORITHMS)[number], string> = {
  fixed_window: '#d62728',
  sliding_window: '#1f77b4',
  token_bucket: '#2ca02c',
}
const LIMIT = 10
const SECONDS = 240
/** The start of a minute: window edges fall on multiples of 60 s. */
const T0 = Date.UTC(2026, 0, 1)

const CONFIG = `domain: plot
descriptors:
${ALGORITHMS.map(
  (a) => `  - key: ${a}
    rate_limit: { unit: minute, requests_per_unit: ${String(LIMIT)}, algorithm: ${a} }
`,
).join('')}`

/**
 * Requests the client sends at second `t`: a burst of 12 just before a minute edge and another
 * just after it, a steady one every 2 s (30 a minute, three times the limit) from 90 s to 180 s,
 * and a last burst of 15 after a quiet spell.
 */
function offered(t: number): number {
  if (t === 50 || t === 62) return 12
  if (t >= 90 && t < 180) return t % 2 === 0 ? 1 : 0
  if (t === 215) return 15
  return 0
}

interface Point {
  readonly t: number
  readonly allowed: number
}

async function measure(): Promise<Record<(typeof ALGORITHMS)[number], Point[]>> {
  const dir = mkdtempSync(join(tmpdir(), 'ratelimit-plot-'))
  mkdirSync(join(dir, 'config'))
  writeFileSync(join(dir, 'config', 'plot.yaml'), CONFIG)
  const [port, grpcPort, debugPort] = await Promise.all([
    getFreePort(),
    getFreePort(),
    getFreePort(),
  ])
  const settings = loadSettings({
    HOST: '127.0.0.1',
    PORT: String(port),
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: String(grpcPort),
    DEBUG_HOST: '127.0.0.1',
    DEBUG_PORT: String(debugPort),
    RUNTIME_ROOT: dir,
    RUNTIME_WATCH_ROOT: 'false',
    BACKEND_TYPE: 'memory',
    DISABLE_STATS: 'true',
  })
  const clock = new FakeClock(T0)
  const app = buildRateLimitApp(settings, { clock, logger: pino({ level: 'silent' }) })
  const series = { fixed_window: [], sliding_window: [], token_bucket: [] } as Record<
    (typeof ALGORITHMS)[number],
    Point[]
  >
  try {
    await app.listen()
    const totals = { fixed_window: 0, sliding_window: 0, token_bucket: 0 }
    for (let t = 0; t <= SECONDS; t++) {
      clock.set(T0 + t * 1000)
      for (let i = 0; i < offered(t); i++) {
        for (const algorithm of ALGORITHMS) {
          const response = await fetch(`http://127.0.0.1:${String(port)}/json`, {
            method: 'POST',
            body: JSON.stringify({
              domain: 'plot',
              descriptors: [{ entries: [{ key: algorithm, value: 'client' }] }],
            }),
          })
          const answer = (await response.json()) as { overallCode?: string }
          if (answer.overallCode === 'OK') totals[algorithm]++
        }
      }
      for (const algorithm of ALGORITHMS) {
        series[algorithm].push({ t, allowed: totals[algorithm] })
      }
    }
  } finally {
    await app.close(0)
    rmSync(dir, { recursive: true, force: true })
  }
  return series
}

/** The SVG: one step line per algorithm, the limit's rate dashed, minute edges dotted. */
function svg(series: Record<(typeof ALGORITHMS)[number], Point[]>): string {
  const width = 760
  const height = 420
  const m = { left: 56, right: 170, top: 36, bottom: 48 }
  const maxY =
    Math.ceil(Math.max(...ALGORITHMS.map((a) => series[a].at(-1)?.allowed ?? 0)) / 10) * 10
  const x = (t: number): number => m.left + (t / SECONDS) * (width - m.left - m.right)
  const y = (v: number): number => height - m.bottom - (v / maxY) * (height - m.top - m.bottom)
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${String(width)}" height="${String(height)}" viewBox="0 0 ${String(width)} ${String(height)}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="${String(m.left)}" y="20" font-size="14" font-weight="bold">Allowed requests of a bursty client, limit ${String(LIMIT)} per minute (cumulative)</text>`,
  ]
  for (let t = 0; t <= SECONDS; t += 30) {
    const edge = t % 60 === 0
    parts.push(
      `<line x1="${x(t).toFixed(1)}" y1="${String(m.top)}" x2="${x(t).toFixed(1)}" y2="${String(height - m.bottom)}" stroke="${edge ? '#999' : '#ddd'}" stroke-dasharray="${edge ? '2,3' : '1,4'}"/>`,
      `<text x="${x(t).toFixed(1)}" y="${String(height - m.bottom + 16)}" text-anchor="middle">${String(t)}</text>`,
    )
  }
  for (let v = 0; v <= maxY; v += 10) {
    parts.push(
      `<line x1="${String(m.left)}" y1="${y(v).toFixed(1)}" x2="${x(SECONDS).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#eee"/>`,
      `<text x="${String(m.left - 8)}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${String(v)}</text>`,
    )
  }
  parts.push(
    `<text x="${((m.left + x(SECONDS)) / 2).toFixed(1)}" y="${String(height - 12)}" text-anchor="middle">seconds (dotted: minute edges, where fixed windows reset)</text>`,
    `<text transform="translate(16 ${((m.top + height - m.bottom) / 2).toFixed(1)}) rotate(-90)" text-anchor="middle">allowed so far</text>`,
    `<line x1="${x(0).toFixed(1)}" y1="${y(LIMIT).toFixed(1)}" x2="${x(SECONDS).toFixed(1)}" y2="${y(LIMIT + (LIMIT * SECONDS) / 60).toFixed(1)}" stroke="#888" stroke-dasharray="6,4"/>`,
  )
  // Offered requests: a rug along the bottom.
  for (let t = 0; t <= SECONDS; t++) {
    const n = offered(t)
    if (n > 0) {
      parts.push(
        `<line x1="${x(t).toFixed(1)}" y1="${String(height - m.bottom)}" x2="${x(t).toFixed(1)}" y2="${(height - m.bottom - Math.min(24, 2 * n)).toFixed(1)}" stroke="#aaa" stroke-width="2"/>`,
      )
    }
  }
  for (const algorithm of ALGORITHMS) {
    let d = ''
    let previous: Point | undefined
    for (const point of series[algorithm]) {
      if (previous === undefined) d += `M${x(point.t).toFixed(1)},${y(point.allowed).toFixed(1)}`
      else d += `H${x(point.t).toFixed(1)}V${y(point.allowed).toFixed(1)}`
      previous = point
    }
    parts.push(`<path d="${d}" fill="none" stroke="${COLORS[algorithm]}" stroke-width="2"/>`)
  }
  const legend: [string, string, string][] = [
    ...ALGORITHMS.map((a): [string, string, string] => [
      COLORS[a],
      '',
      `${a} (${String(series[a].at(-1)?.allowed ?? 0)})`,
    ]),
    ['#888', '6,4', `burst + ${String(LIMIT)}/min`],
    ['#aaa', '', 'requests sent (bars)'],
  ]
  legend.forEach(([color, dash, label], i) => {
    const ly = m.top + 10 + i * 20
    const lx = width - m.right + 16
    parts.push(
      `<line x1="${String(lx)}" y1="${String(ly)}" x2="${String(lx + 24)}" y2="${String(ly)}" stroke="${color}" stroke-width="2"${dash === '' ? '' : ` stroke-dasharray="${dash}"`}/>`,
      `<text x="${String(lx + 30)}" y="${String(ly + 4)}">${label}</text>`,
    )
  })
  parts.push('</svg>')
  return `${parts.join('\n')}\n`
}

const series = await measure()
mkdirSync(join(ROOT, 'packages/ratelimit/docs'), { recursive: true })
writeFileSync(OUT, svg(series))
for (const algorithm of ALGORITHMS) {
  const points = series[algorithm]
  const at = (t: number): number => points[t]?.allowed ?? 0
  console.log(
    `${algorithm}: allowed ${String(at(SECONDS))} in total; ${String(at(62) - at(49))} in 50–62 s; ${String(at(179) - at(89))} in 90–179 s; ${String(at(215) - at(214))} at 215 s`,
  )
}
console.log(`wrote ${OUT}`)
