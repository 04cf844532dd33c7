/**
 * The stats sinks end to end: Prometheus scraped over HTTP (one process, a custom mapping file,
 * and two workers summed by the primary), DogStatsD lines on a real UDP socket, the debug port's
 * `/stats` summed over two workers, and upstream's start-up error for two sinks.
 */
import {
  getFreePort,
  redisKeyPrefix,
  scrape,
  series,
  sharedRedisUrl,
  waitFor,
  type ManagedProcess,
} from '@gatehouse/testing'
import { createSocket } from 'node:dgram'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../fixtures.js'
import { loopbackEnv, spawnService, startService } from '../harness.js'

const BASIC = fixture('integration/basic.yaml')
const request = (value: string) => ({
  domain: 'basic',
  descriptors: [{ entries: [{ key: 'one_per_minute', value }] }],
})

describe('the Prometheus sink', () => {
  it('exposes upstream names, labels and values after known traffic (one process)', async () => {
    const h = await startService({
      files: { 'basic.yaml': BASIC },
      env: { USE_PROMETHEUS: 'true', PROMETHEUS_ADDR: '127.0.0.1:0' },
      deps: { statsSink: undefined },
    })
    try {
      const ports = h.app.prometheusServer?.address()
      if (ports === null || typeof ports !== 'object') throw new Error('no port')
      const url = `http://127.0.0.1:${String(ports.port)}/metrics`
      for (let i = 0; i < 3; i++) await h.json(request('a'))
      await h.client.shouldRateLimit(request('grpc'))
      // Nothing is exported before the flush (STATS_FLUSH_INTERVAL), as upstream.
      expect((await scrape(url)).get('ratelimit_service_rate_limit_total_hits')).toBeUndefined()
      h.app.flushStats()
      const m = await scrape(url)
      const key = { domain: 'basic', key1: 'one_per_minute' }
      expect(m.get('ratelimit_service_rate_limit_total_hits')?.type).toBe('COUNTER')
      expect(series(m, 'ratelimit_service_rate_limit_total_hits', key)?.value).toBe('4')
      expect(series(m, 'ratelimit_service_rate_limit_over_limit', key)?.value).toBe('2')
      expect(series(m, 'ratelimit_service_rate_limit_within_limit', key)?.value).toBe('2')
      expect(
        series(m, 'ratelimit_service_total_requests', { grpc_method: 'ShouldRateLimit' })?.value,
      ).toBe('1')
      expect(series(m, 'ratelimit_service_config_load_success', {})?.value).toBe('1')
      const time = m.get('ratelimit_service_response_time_seconds')
      expect(time?.type).toBe('HISTOGRAM')
      expect(time?.metrics[0]?.buckets?.['+Inf']).toBe('1')
      // The parser keeps no labels, count or sum for histograms: read those lines directly.
      const text = await (await fetch(url)).text()
      expect(text).toContain(
        'ratelimit_service_response_time_seconds_count{grpc_method="ShouldRateLimit"} 1\n',
      )
      const sum =
        /^ratelimit_service_response_time_seconds_sum\{grpc_method="ShouldRateLimit"\} (\S+)$/m.exec(
          text,
        )
      // Seconds: one local call is far below a second.
      expect(Number(sum?.[1])).toBeLessThan(1)
      expect((await fetch(url.replace('/metrics', '/other'))).status).toBe(404)
    } finally {
      await h.close()
    }
  })

  it('maps with a PROMETHEUS_MAPPER_YAML file instead of the defaults', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ratelimit-mapper-'))
    const file = join(dir, 'mapper.yaml')
    writeFileSync(
      file,
      [
        'mappings:',
        '  - match: "ratelimit.service.rate_limit.*.*.*"',
        '    name: "rl_$3"',
        '    labels: { rl_domain: "$1", descriptor: "$2" }',
        '  - match: "ratelimit_server.*.*"',
        '    action: drop',
      ].join('\n'),
    )
    const h = await startService({
      files: { 'basic.yaml': BASIC },
      env: { USE_PROMETHEUS: 'true', PROMETHEUS_ADDR: '127.0.0.1:0', PROMETHEUS_MAPPER_YAML: file },
      deps: { statsSink: undefined },
    })
    try {
      const address = h.app.prometheusServer?.address()
      if (address === null || typeof address !== 'object') throw new Error('no port')
      await h.json(request('b'))
      await h.json(request('b'))
      h.app.flushStats()
      const m = await scrape(`http://127.0.0.1:${String(address.port)}/metrics`)
      const labels = { rl_domain: 'basic', descriptor: 'one_per_minute' }
      expect(series(m, 'rl_total_hits', labels)?.value).toBe('2')
      expect(series(m, 'rl_over_limit', labels)?.value).toBe('1')
      expect(m.has('ratelimit_service_rate_limit_total_hits')).toBe(false)
      expect([...m.keys()].some((name) => name.startsWith('ratelimit_server'))).toBe(false)
      // Unmapped stats keep their name, escaped.
      expect(series(m, 'ratelimit_service_config_load_success', {})?.value).toBe('1')
    } finally {
      await h.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('the tagged statsd sink', () => {
  it("sends DogStatsD lines with the mogrifiers' tags over UDP", async () => {
    const socket = createSocket('udp4')
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
    const lines: string[] = []
    const received = new Promise<void>((resolve) => {
      socket.on('message', (data) => {
        lines.push(...data.toString().split('\n'))
        if (lines.some((l) => l.startsWith('ratelimit.service.rate_limit.total_hits:'))) resolve()
      })
    })
    const h = await startService({
      files: { 'basic.yaml': BASIC },
      env: {
        USE_TAGGED_STATSD: 'true',
        STATSD_HOST: '127.0.0.1',
        STATSD_PORT: String(socket.address().port),
        EXTRA_TAGS: 'zone:eu',
        USE_DOG_STATSD_MOGRIFIERS: 'RL',
        DOG_STATSD_MOGRIFIER_RL_PATTERN:
          '^ratelimit\\.service\\.rate_limit\\.([^.]+)\\.(.*)\\.([^.]+)$',
        DOG_STATSD_MOGRIFIER_RL_NAME: 'ratelimit.service.rate_limit.$3',
        DOG_STATSD_MOGRIFIER_RL_TAGS: 'domain:$1,descriptor:$2',
      },
      deps: { statsSink: undefined },
    })
    try {
      await h.json(request('c'))
      await h.json(request('c'))
      h.app.flushStats()
      await received
      expect(lines).toContain(
        'ratelimit.service.rate_limit.total_hits:2|c|#domain:basic,descriptor:one_per_minute,zone:eu',
      )
      expect(lines).toContain(
        'ratelimit.service.rate_limit.over_limit:1|c|#domain:basic,descriptor:one_per_minute,zone:eu',
      )
      // Stats no mogrifier matches keep their name, with the extra tags.
      expect(lines).toContain('ratelimit.service.config_load_success:1|c|#zone:eu')
    } finally {
      await h.close()
      socket.close()
    }
  })
})

describe('the executable with several stats sinks and workers', () => {
  let root: string
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'ratelimit-sinks-'))
    mkdirSync(join(root, 'config'))
    writeFileSync(join(root, 'config', 'basic.yaml'), BASIC)
  })
  afterAll(() => {
    rmSync(root, { recursive: true, force: true })
  })

  const spawn = (env: Record<string, string>): Promise<ManagedProcess> =>
    spawnService({ RUNTIME_ROOT: root, RUNTIME_WATCH_ROOT: 'false', ...env })

  it("refuses USE_PROMETHEUS with the default USE_STATSD=true, with upstream's message (exit 2)", async () => {
    const p = await spawn({ USE_PROMETHEUS: 'true', BACKEND_TYPE: 'memory' })
    try {
      const code = await new Promise<number | null>((resolve) => {
        if (p.child.exitCode !== null) resolve(p.child.exitCode)
        else p.child.once('exit', resolve)
      })
      expect(code).toBe(2)
      expect(p.output()).toContain(
        'Error: unable to use more than one stats sink at the same time. Set one of USE_DOG_STATSD, USE_STATSD, USE_PROMETHEUS.',
      )
    } finally {
      await p.stop('SIGKILL')
    }
  })

  it('sums /stats and the Prometheus metrics over two workers', async () => {
    const [{ port, debugPort, env }, promPort] = await Promise.all([
      loopbackEnv(root),
      getFreePort(),
    ])
    const p = await spawn({
      ...env,
      RATELIMIT_WORKERS: '2',
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: sharedRedisUrl(),
      CACHE_KEY_PREFIX: redisKeyPrefix('ratelimit-sinks'),
      USE_STATSD: 'false',
      USE_PROMETHEUS: 'true',
      PROMETHEUS_ADDR: `127.0.0.1:${String(promPort)}`,
      STATS_FLUSH_INTERVAL: '100ms',
    })
    try {
      const base = `http://127.0.0.1:${String(port)}`
      await waitFor(async () => (await fetch(`${base}/healthcheck`)).status === 200, {
        what: () => `the workers to listen (output: ${p.output()})`,
        timeout: 20_000,
      })
      // New connections are spread over the workers (cluster round robin): 20 requests reach both.
      const n = 20
      for (let i = 0; i < n; i++) {
        await fetch(`${base}/json`, {
          method: 'POST',
          body: JSON.stringify(request('workers')),
          headers: { connection: 'close' },
        })
      }
      const name = 'ratelimit.service.rate_limit.basic.one_per_minute.total_hits'
      await waitFor(
        async () => {
          const text = await (await fetch(`http://127.0.0.1:${String(debugPort)}/stats`)).text()
          return text.includes(`${name}: ${String(n)}\n`)
        },
        { what: () => `/stats to sum both workers (output: ${p.output()})`, timeout: 10_000 },
      )
      await waitFor(
        async () => {
          const m = await scrape(`http://127.0.0.1:${String(promPort)}/metrics`)
          const s = series(m, 'ratelimit_service_rate_limit_total_hits', {
            domain: 'basic',
            key1: 'one_per_minute',
          })
          return s?.value === String(n)
        },
        {
          what: () => `the primary's scrape to sum both workers (output: ${p.output()})`,
          timeout: 10_000,
        },
      )
      p.child.kill('SIGTERM')
    } finally {
      await p.stop('SIGKILL')
    }
  })
})
