import { describe, expect, it } from 'vitest'
import { realSleep, sleepFor, systemClock } from './clock.js'

describe('waiting', () => {
  it('realSleep resolves, and rejects with the reason of a signal that aborts or has aborted', async () => {
    await expect(realSleep(1)).resolves.toBeUndefined()
    const controller = new AbortController()
    const waiting = realSleep(60_000, controller.signal)
    controller.abort(new Error('stop'))
    await expect(waiting).rejects.toThrow('stop')
    await expect(realSleep(1, controller.signal)).rejects.toThrow('stop')
  })

  it("sleepFor uses the clock's own sleep, else real timers", async () => {
    const asked: number[] = []
    const clock = {
      now: () => 0,
      sleep: (ms: number) => {
        asked.push(ms)
        return Promise.resolve()
      },
    }
    await sleepFor(clock, 5_000)
    expect(asked).toEqual([5_000])
    await expect(sleepFor({ now: () => 0 }, 1)).resolves.toBeUndefined()
    expect(systemClock).toMatchObject({ sleep: realSleep })
  })
})
