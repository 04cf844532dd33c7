/**
 * The mail queue runs one address's jobs one after another, in the order they were queued, and
 * different addresses' jobs side by side: a second request for an address must see what the
 * first sent (SMTP_MAX_FREQUENCY), whatever order the database returns a claimed batch in.
 */
import { cryptoRandom, systemClock } from '@gatehouse/auth'
import { MailQueue } from '#internal/services/shared/mail-queue.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'

describe('mail queue ordering', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer('mail_queue_order')
  })
  afterAll(async () => {
    await server.close()
  })

  it('runs the jobs of one address in queueing order, never two at once; other addresses in parallel', async () => {
    const events: string[] = []
    const running = new Map<string, number>()
    let overlapOfOneAddress = false
    let parallelAddresses = false
    const queue = new MailQueue({
      db: server.app.db,
      clock: systemClock,
      random: cryptoRandom,
      lifetimeMs: 60_000,
      pollIntervalMs: 60_000,
      handlerFor: () => ({
        inTransaction: false,
        run: async (payload) => {
          const { email, n } = payload as { email: string; n: number }
          const address = email.toLowerCase()
          if ((running.get(address) ?? 0) > 0) overlapOfOneAddress = true
          running.set(address, (running.get(address) ?? 0) + 1)
          if ([...running.values()].filter((count) => count > 0).length > 1) {
            parallelAddresses = true
          }
          events.push(`${address} ${String(n)}`)
          // Let the other jobs of the batch start if they were allowed to.
          await new Promise<void>((resolve) => setImmediate(resolve))
          await new Promise<void>((resolve) => setImmediate(resolve))
          running.set(address, (running.get(address) ?? 1) - 1)
        },
      }),
    })
    const db = server.app.db
    const base = Date.now()
    for (let n = 0; n < 4; n++) {
      await queue.enqueue(
        db,
        'order',
        { email: n % 2 === 0 ? 'Ann@example.com' : 'ann@example.com', n },
        base + n,
      )
      await queue.enqueue(db, 'order', { email: 'bob@example.com', n }, base + n)
    }
    await queue.flush()
    await queue.close()
    expect(events.filter((e) => e.startsWith('ann@'))).toEqual([
      'ann@example.com 0',
      'ann@example.com 1',
      'ann@example.com 2',
      'ann@example.com 3',
    ])
    expect(events.filter((e) => e.startsWith('bob@'))).toEqual([
      'bob@example.com 0',
      'bob@example.com 1',
      'bob@example.com 2',
      'bob@example.com 3',
    ])
    expect(overlapOfOneAddress).toBe(false)
    expect(parallelAddresses).toBe(true)
  })
})
