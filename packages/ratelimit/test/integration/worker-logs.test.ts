/**
 * The executable with several workers writes each line once (issue 25 item 13): the lines every
 * worker would write alike (start-up, configuration loads, the backend's connection, SIGTERM)
 * come from the first worker only, and standard-output stats are one flush per interval for all
 * workers, printed by the primary with the workers' counters summed.
 */
import { redisKeyPrefix, sharedRedisUrl, waitFor } from '@gatehouse/testing'
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fixture } from '../fixtures.js'
import { exitCode, loopbackEnv, spawnService } from '../harness.js'

/** `"flushing counter"` lines of gostats' logging sink, as printed. */
interface StatsLine {
  readonly ts: number
  readonly msg: string
  readonly json: { readonly name?: string; readonly value: string }
}

describe('gatehouse-ratelimit with two workers', () => {
  let root: string
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'ratelimit-worker-logs-'))
    mkdirSync(join(root, 'config'))
    writeFileSync(join(root, 'config', 'basic.yaml'), fixture('integration/basic.yaml'))
  })
  afterAll(() => {
    rmSync(root, { recursive: true, force: true })
  })

  it('writes every log line once, and one stats flush per interval with summed counters', async () => {
    const { port, debugPort, env } = await loopbackEnv(root)
    const p = await spawnService({
      ...env,
      RUNTIME_WATCH_ROOT: 'false',
      RATELIMIT_WORKERS: '2',
      REDIS_SOCKET_TYPE: 'tcp',
      REDIS_URL: sharedRedisUrl(),
      CACHE_KEY_PREFIX: redisKeyPrefix('ratelimit-worker-logs'),
      LOG_LEVEL: 'info',
      USE_STATSD: 'false',
      STATS_FLUSH_INTERVAL: '500ms',
    })
    // All of it (the process helper keeps only the end).
    let output = ''
    for (const stream of [p.child.stdout, p.child.stderr]) {
      stream?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
    }
    const loads = () => output.split('Successfully loaded new configuration').length - 1
    try {
      await waitFor(
        async () =>
          (await fetch(`http://127.0.0.1:${String(port)}/healthcheck`).catch(() => undefined))
            ?.status === 200,
        { what: () => `the workers to listen (output: ${output})`, timeout: 20_000 },
      )
      // Both workers have loaded the configuration (and watch it): /stats sums them.
      await waitFor(
        async () =>
          (await (await fetch(`http://127.0.0.1:${String(debugPort)}/stats`)).text()).includes(
            'ratelimit.service.config_load_success: 2\n',
          ),
        { what: () => `both workers' first load (output: ${output})` },
      )
      // One edit reloads both.
      appendFileSync(join(root, 'config', 'basic.yaml'), '# edited\n')
      await waitFor(
        () => output.includes('"ratelimit.service.config_load_success"') && loads() === 2,
        {
          what: () => `the reload (output: ${output})`,
        },
      )
      await waitFor(
        () => sumOf(statsLines(output), 'ratelimit.service.config_load_success') === 4,
        {
          what: () => `the reloads of both workers in the stats (output: ${output})`,
        },
      )
      p.child.kill('SIGTERM')
      expect(await exitCode(p), output).toBe(0)

      const logLines = p
        .output()
        .split('\n')
        .filter((line) => line.startsWith('time='))
        .map((line) => line.replace(/^time="[^"]*" /, ''))
      // The first load and the reload write the same text, once each (not once per worker).
      const once = logLines.filter(
        (line) => !line.includes('Successfully loaded new configuration'),
      )
      expect(
        once.filter((line, i) => once.indexOf(line) !== i),
        output,
      ).toEqual([])
      for (const expected of [
        'level=info msg="Waiting for initial ratelimit config update event"',
        `level=info msg="connected to main redis at ${sharedRedisUrl()}"`,
        'level=info msg="Waiting for the backend to answer"',
        'level=warning msg="SIGTERM received, draining and shutting down"',
      ]) {
        expect(logLines).toContain(expected)
      }
      expect(logLines.filter((l) => l.includes('msg="listening: http'))).toHaveLength(1)
      expect(loads()).toBe(2)

      const stats = statsLines(output)
      const flushes = stats.filter((line) => line.msg === 'flushing all stats').map((l) => l.ts)
      expect(new Set(flushes).size, 'one flush per interval, not one per worker').toBe(
        flushes.length,
      )
      expect(sumOf(stats, 'ratelimit.service.config_load_success')).toBe(4)
    } finally {
      await p.stop('SIGKILL')
    }
  })
})

function statsLines(output: string): StatsLine[] {
  return output
    .split('\n')
    .filter((line) => line.includes('"logger":"gostats.loggingsink"'))
    .map((line) => JSON.parse(line) as StatsLine)
}

function sumOf(lines: readonly StatsLine[], name: string): number {
  return lines
    .filter((line) => line.json.name === name)
    .reduce((sum, line) => sum + Number(line.json.value), 0)
}
