import { createSocket } from 'node:dgram'
import { describe, expect, it } from 'vitest'
import { dogStatsdLine, MAX_DATAGRAM_BYTES, Mogrifiers, TaggedStatsdSink } from './dogstatsd.js'

const mogrifiers = new Mogrifiers([
  {
    key: 'RL',
    pattern: '^ratelimit\\.service\\.rate_limit\\.([^.]+)\\.(.*)\\.([^.]+)$',
    name: 'ratelimit.service.rate_limit.$3',
    tags: { domain: '$1', descriptor: '$2' },
  },
])

describe('dogStatsdLine', () => {
  it('writes counters, gauges and sampled timers with tags; the first matching mogrifier wins', () => {
    expect(
      dogStatsdLine(
        { name: 'ratelimit.service.rate_limit.d.k_v.k2.over_limit', type: 'counter', value: 3 },
        mogrifiers,
      ),
    ).toBe('ratelimit.service.rate_limit.over_limit:3|c|#domain:d,descriptor:k_v.k2')
    expect(dogStatsdLine({ name: 'g.__zone=eu', type: 'gauge', value: 2 }, mogrifiers)).toBe(
      'g:2|g|#zone:eu',
    )
    expect(
      dogStatsdLine({ name: 't', type: 'timer', value: 1.5, sampleRate: 0.5 }, mogrifiers),
    ).toBe('t:1.500000|ms|@0.500000')
  })

  it('keeps tag separators out of tag values', () => {
    const m = new Mogrifiers([{ key: 'A', pattern: '^x\\.(.*)$', name: 'x', tags: { v: '$1' } }])
    expect(dogStatsdLine({ name: 'x.a,b|c#d', type: 'counter', value: 1 }, m)).toBe(
      'x:1|c|#v:a_b_c_d',
    )
  })
})

describe('TaggedStatsdSink', () => {
  it('packs the lines into datagrams of at most 1432 bytes over UDP', async () => {
    const socket = createSocket('udp4')
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
    const datagrams: Buffer[] = []
    const lines = 100
    const all = new Promise<void>((resolve) => {
      socket.on('message', (data) => {
        datagrams.push(data)
        if (datagrams.reduce((n, d) => n + d.toString().split('\n').length, 0) === lines) resolve()
      })
    })
    const sink = new TaggedStatsdSink('127.0.0.1', socket.address().port, [])
    sink.flush(
      Array.from({ length: lines }, (_, i) => ({
        name: `ratelimit.test.counter_${String(i).padStart(3, '0')}`,
        type: 'counter' as const,
        value: i,
      })),
    )
    await all
    await sink.close()
    socket.close()
    expect(datagrams.length).toBeGreaterThan(1)
    for (const d of datagrams) expect(d.length).toBeLessThanOrEqual(MAX_DATAGRAM_BYTES)
    expect(datagrams.map(String).join('\n').split('\n')[7]).toBe('ratelimit.test.counter_007:7|c')
  })
})
