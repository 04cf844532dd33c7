/**
 * The algorithm table ({@link describeAlgorithmTable}) on the memory backend (`BACKEND_TYPE=
 * memory`), whose counters and buckets live in the service itself: read and written through the
 * running service's store.
 */
import { describe } from 'vitest'
import type { Harness } from '../harness.js'
import { MemoryCounterStore } from '#internal/memory/memory-store.js'
import { describeAlgorithmTable } from './algorithm-table.js'

describe('memory backend', () => {
  /** The service of the table (one per table). */
  let service: Harness | undefined
  const store = (): MemoryCounterStore => {
    const current = service?.app.store
    if (!(current instanceof MemoryCounterStore)) throw new Error('no memory store yet')
    return current
  }
  describeAlgorithmTable(
    {
      name: 'memory',
      env: () => ({ BACKEND_TYPE: 'memory' }),
      read: async (key) => {
        const [value] = await store().get([{ key, perSecond: false }])
        return value === 0 ? undefined : value
      },
      write: async (key, value, ttlSeconds) => {
        await store().increment([
          { key, addend: value, expireSeconds: ttlSeconds, perSecond: false },
        ])
      },
      settle: () => Promise.resolve(),
      ready: (h) => {
        service = h
        return Promise.resolve()
      },
    },
    '',
    { tokenBucket: true },
  )
})
