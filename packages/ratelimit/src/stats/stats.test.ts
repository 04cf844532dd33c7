import { FakeClock, waitFor } from '@gatehouse/testing'
import { createServer, type Socket } from 'node:net'
import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { sanitizeStatName, StatsManager } from './manager.js'
import { StatsdSink, StreamSink, statsdLine } from './sinks.js'
import { StatsStore } from './store.js'

describe('StatsStore', () => {
  it('flushes counter deltas (skipping zero), every gauge and the timer samples', () => {
    const store = new StatsStore()
    const c = store.counter('ratelimit.service.config_load_success')
    store.counter('ratelimit.idle')
    store.gauge('ratelimit.localcache.entryCount').set(3)
    c.add(2)
    store.timer('ratelimit_server.ShouldRateLimit.response_time').record(1.5)
    expect(store.collect()).toEqual([
      { name: 'ratelimit.service.config_load_success', type: 'counter', value: 2 },
      { name: 'ratelimit.localcache.entryCount', type: 'gauge', value: 3 },
      {
        name: 'ratelimit_server.ShouldRateLimit.response_time',
        type: 'timer',
        value: 1.5,
        sampleRate: 1,
      },
    ])
    c.add()
    expect(store.collect()).toEqual([
      { name: 'ratelimit.service.config_load_success', type: 'counter', value: 1 },
      { name: 'ratelimit.localcache.entryCount', type: 'gauge', value: 3 },
    ])
    expect(c.value()).toBe(3)
  })

  it('samples timers beyond 1000 values per interval', () => {
    const store = new StatsStore()
    const t = store.timer('t')
    for (let i = 0; i < 4000; i++) t.record(i)
    const flushed = store.collect()
    expect(flushed).toHaveLength(1000)
    expect(flushed[0]?.sampleRate).toBe(0.25)
  })

  it('picks the samples it replaces with the injected random source', () => {
    const store = new StatsStore({ random: () => 0 })
    const timer = store.timer('t')
    for (let i = 0; i < 1002; i++) timer.record(i)
    const samples = store.collect().map((s) => s.value)
    // Every sample past the first 1000 lands in slot 0; the last one stays.
    expect(samples.slice(0, 2)).toEqual([1001, 1])
    expect(samples).toHaveLength(1000)
  })

  it('replaces ".", ":" and "|" in EXTRA_TAGS values, as gostats does', () => {
    const store = new StatsStore({ extraTags: { v: '1.2:3|4\n' } })
    store.counter('ratelimit.x').add()
    expect(store.snapshot()[0]?.name).toBe('ratelimit.x.__v=1_2_3_4_')
  })

  it('appends EXTRA_TAGS, sorted, to ratelimit.* names only', () => {
    const store = new StatsStore({ extraTags: { zone: 'b', app: 'x' } })
    store.counter('ratelimit.service.config_load_success').add()
    store.counter('ratelimit_server.ShouldRateLimit.total_requests').add()
    expect(store.snapshot().map((s) => s.name)).toEqual([
      'ratelimit.service.config_load_success.__app=x.__zone=b',
      'ratelimit_server.ShouldRateLimit.total_requests',
    ])
  })
})

describe('StatsManager', () => {
  it('names per-key stats as upstream and sanitizes keys', () => {
    const manager = new StatsManager(new StatsStore())
    const stats = manager.rateLimitStats('domain.remote_address_10.1.2.3|x:y')
    expect(stats.key).toBe('domain.remote_address_10_1_2_3_x_y')
    stats.nearLimit.add()
    expect(manager.store.snapshot().map((s) => s.name)).toContain(
      'ratelimit.service.rate_limit.domain.remote_address_10_1_2_3_x_y.near_limit',
    )
    expect(manager.rateLimitStats('domain.remote_address_10.1.2.3|x:y')).toBe(stats)
    expect(sanitizeStatName('a.b')).toBe('a.b')
  })

  it('replaces control characters too, so that a key cannot start a statsd line', () => {
    expect(sanitizeStatName('d.k_a\nb\r\tc\u0000d\u007fe')).toBe('d.k_a_b__c_d_e')
  })

  it('bounds stat keys made from request values, then counts them per domain', () => {
    const manager = new StatsManager(new StatsStore(), { maxDynamicKeys: 2 })
    const configured = manager.rateLimitStats('d.rule')
    expect(manager.requestStats('d', 'd.rule')).toBe(configured) // known keys cost nothing
    expect(manager.requestStats('d', 'd.k_1').key).toBe('d.k_1')
    expect(manager.requestStats('d', 'd.k_2').key).toBe('d.k_2')
    expect(manager.requestStats('d', 'd.k_1').key).toBe('d.k_1')
    expect(manager.requestStats('d', 'd.k_3').key).toBe('d.stats_overflow')
    expect(manager.requestStats('e', 'e.k_3').key).toBe('e.stats_overflow')
    const roomy = new StatsManager(new StatsStore())
    expect(roomy.requestStats('d', `d.k_${'x'.repeat(252)}`).key).toBe(`d.k_${'x'.repeat(252)}`)
    expect(roomy.requestStats('d', `d.k_${'x'.repeat(253)}`).key).toBe('d.stats_overflow')
  })

  it("counts the first unknown domains under upstream's names, the rest under one name", () => {
    const manager = new StatsManager(new StatsStore(), { maxUnknownDomains: 2 })
    manager.domainNotFound('a').add()
    manager.domainNotFound('b.c').add()
    manager.domainNotFound('a').add()
    manager.domainNotFound('d').add()
    manager.domainNotFound('e').add()
    manager.domainNotFound('b.c').add()
    const counts = Object.fromEntries(
      manager.store
        .snapshot()
        .filter((s) => s.name.endsWith('domain_not_found'))
        .map((s) => [s.name, s.value]),
    )
    expect(counts).toEqual({
      'ratelimit.service.rate_limit.domain_not_found': 2,
      'ratelimit.service.rate_limit.a.domain_not_found': 2,
      'ratelimit.service.rate_limit.b.c.domain_not_found': 2,
    })
  })

  it('counts every unknown domain under one name with STATS_MAX_UNKNOWN_DOMAINS=0, and long ones always', () => {
    const none = new StatsManager(new StatsStore(), { maxUnknownDomains: 0 })
    none.domainNotFound('a').add()
    expect(none.store.snapshot().map((s) => s.name)).toContain(
      'ratelimit.service.rate_limit.domain_not_found',
    )
    const roomy = new StatsManager(new StatsStore())
    expect(roomy.domainNotFound('x'.repeat(257))).toBe(roomy.domainNotFound('y'.repeat(300)))
    expect(roomy.domainNotFound('x'.repeat(256))).not.toBe(roomy.domainNotFound('y'.repeat(300)))
  })
})

describe('sinks', () => {
  it('never lets a name add a statsd line', () => {
    expect(statsdLine({ name: 'a\nb:c|d', type: 'counter', value: 1 })).toBe('a_b_c_d:1|c\n')
  })

  it('formats statsd lines', () => {
    expect(statsdLine({ name: 'a.b', type: 'counter', value: 3 })).toBe('a.b:3|c\n')
    expect(statsdLine({ name: 'a.b', type: 'gauge', value: 7 })).toBe('a.b:7|g\n')
    expect(statsdLine({ name: 'a.b', type: 'timer', value: 1.5, sampleRate: 1 })).toBe(
      'a.b:1.500000|ms\n',
    )
    expect(statsdLine({ name: 'a.b', type: 'timer', value: 2, sampleRate: 0.5 })).toBe(
      'a.b:2.000000|ms|@0.500000\n',
    )
  })

  it('writes gostats logging-sink JSON lines to a stream', () => {
    const out = new PassThrough()
    const chunks: string[] = []
    out.on('data', (chunk: Buffer) => chunks.push(chunk.toString()))
    new StreamSink(out, new FakeClock(1_712_345_678_123)).flush([
      { name: 'ratelimit.x.total_hits', type: 'counter', value: 1 },
    ])
    expect(chunks.join('')).toBe(
      '{"level":"debug","ts":1712345678.123,"logger":"gostats.loggingsink","msg":"flushing counter","json":{"name":"ratelimit.x.total_hits","type":"counter","value":"1.000000"}}\n' +
        '{"level":"debug","ts":1712345678.123,"logger":"gostats.loggingsink","msg":"flushing all stats","json":{"type":"all stats","value":"0.000000"}}\n',
    )
  })

  it('sends to statsd over TCP, buffering while it is not reachable yet', async () => {
    let received = ''
    const sockets: Socket[] = []
    const server = createServer((socket) => {
      sockets.push(socket)
      socket.on('data', (chunk) => (received += chunk.toString()))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as { port: number }
    const sink = new StatsdSink('127.0.0.1', port)
    sink.flush([{ name: 'ratelimit.a', type: 'counter', value: 2 }])
    await waitFor(() => received.includes('ratelimit.a:2|c\n'), { what: 'the first line' })
    sink.flush([{ name: 'ratelimit.b', type: 'gauge', value: 1 }])
    await waitFor(() => received.includes('ratelimit.b:1|g\n'), { what: 'the second line' })
    await sink.close()
    for (const s of sockets) s.destroy()
    await new Promise((resolve) => server.close(resolve))
  })

  it('never throws when statsd is down', async () => {
    const sink = new StatsdSink('127.0.0.1', 1)
    sink.flush([{ name: 'ratelimit.a', type: 'counter', value: 2 }])
    await sink.close()
  })
})
