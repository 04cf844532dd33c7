import { FakeClock } from '@gatehouse/testing'
import { describe, expect, it } from 'vitest'
import { StatsStore } from '../stats/store.js'
import { MemoryCounterStore } from './memory-store.js'

describe('MemoryCounterStore', () => {
  it('increments, refreshes the TTL on every hit and expires keys by the clock', async () => {
    const clock = new FakeClock(0)
    const store = new MemoryCounterStore({ clock, sweepIntervalMs: 0 })
    expect(
      await store.increment([{ key: 'a', addend: 2, expireSeconds: 10, perSecond: false }]),
    ).toEqual([2])
    clock.advance(9_000)
    expect(
      await store.increment([{ key: 'a', addend: 0, expireSeconds: 10, perSecond: false }]),
    ).toEqual([2])
    clock.advance(9_999)
    expect(
      await store.get([
        { key: 'a', perSecond: false },
        { key: 'b', perSecond: true },
      ]),
    ).toEqual([2, 0])
    clock.advance(1)
    expect(await store.get([{ key: 'a', perSecond: false }])).toEqual([0])
    expect(
      await store.increment([{ key: 'a', addend: 1, expireSeconds: 10, perSecond: false }]),
    ).toEqual([1])
    await store.close()
  })

  it('sweeps expired keys', async () => {
    const clock = new FakeClock(0)
    const store = new MemoryCounterStore({ clock, sweepIntervalMs: 0 })
    await store.increment([
      { key: 'short', addend: 1, expireSeconds: 1, perSecond: true },
      { key: 'long', addend: 1, expireSeconds: 60, perSecond: false },
    ])
    clock.advance(1_000)
    store.sweep()
    expect(store.size).toBe(1)
    await store.close()
  })

  it('keeps counters at or below 2^52, like the Redis store', async () => {
    const store = new MemoryCounterStore({ clock: new FakeClock(0), sweepIntervalMs: 0 })
    const op = { key: 'a', addend: 2 ** 51, expireSeconds: 10, perSecond: false }
    expect(await store.increment([op, op])).toEqual([2 ** 51, 2 ** 52])
    expect(await store.increment([op])).toEqual([2 ** 52])
    await store.close()
  })

  it('keeps at most maxKeys counters, evicting the least recently incremented', async () => {
    const clock = new FakeClock(0)
    const evictions = new StatsStore().counter('evictions')
    const store = new MemoryCounterStore({ clock, sweepIntervalMs: 0, maxKeys: 3, evictions })
    const hit = (key: string, expireSeconds = 60) =>
      store.increment([{ key, addend: 1, expireSeconds, perSecond: false }])
    await hit('a')
    await hit('b')
    await hit('c')
    await hit('a') // a is now the most recent; b the least
    await hit('d')
    expect(store.size).toBe(3)
    expect(evictions.value()).toBe(1)
    const read = (key: string) => store.get([{ key, perSecond: false }])
    expect(await read('b')).toEqual([0])
    expect(await read('a')).toEqual([2])
    // The least recently used key makes room; if it had expired, that is no eviction.
    await hit('short', 1)
    expect(evictions.value()).toBe(2) // c
    await hit('a')
    await hit('d')
    clock.advance(1_000)
    await hit('e')
    expect(evictions.value()).toBe(2)
    expect(await read('short')).toEqual([0])
    expect(store.size).toBe(3)
    await store.close()
  })
})
