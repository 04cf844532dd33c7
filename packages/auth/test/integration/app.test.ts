import {
  createTestSchema,
  FakeClock,
  getFreePort,
  waitFor,
  type TestDatabase,
} from '@gatehouse/testing'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildAuthApp, JwtKeys, loadSettings, openDb, type Random } from '@gatehouse/auth'
import { runCli, type CliIo } from '#internal/cli.js'
import { testEnv, type Reply } from '../helpers.js'

/** A {@link Random} that counts: UUIDs and bytes a test can predict. */
function countingRandom(): Random & { uuids: string[] } {
  let n = 0
  const uuids: string[] = []
  return {
    uuids,
    uuid() {
      n++
      const id = `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`
      uuids.push(id)
      return id
    },
    bytes: (length) => new Uint8Array(length).fill(7),
    int: () => 4,
  }
}

/**
 * `buildAuthApp` builds without opening anything; `start()` opens, migrates and readies;
 * `close()` closes only what the app opened.
 *
 * @see issue 9 (wiring in one place)
 */
describe('buildAuthApp', () => {
  let schema: TestDatabase

  beforeAll(async () => {
    schema = await createTestSchema('auth_app')
  })
  afterAll(async () => {
    await schema.drop()
  })

  it('opens nothing when built: an unreachable database only fails start()', async () => {
    const port = await getFreePort()
    const app = buildAuthApp(
      loadSettings(testEnv(`postgres://postgres@127.0.0.1:${String(port)}/x`)),
    )
    expect(app.server.server.listening).toBe(false)
    expect(() => app.db).toThrow('the auth app is not started: call start() first')
    await expect(app.start()).rejects.toThrow()
    await app.close()
  })

  it('starts once, serves, and leaves a database it was given open', async () => {
    const settings = loadSettings(testEnv(schema.url))
    const db = await openDb(schema.url, '', 2)
    try {
      const app = buildAuthApp(settings, { db, keys: await JwtKeys.load(settings.jwt) })
      const first = app.start()
      expect(app.start()).toBe(first)
      await first
      expect(app.db).toBe(db)
      expect(app.freshDatabase).toBe(true)
      const res = await app.server.inject({ method: 'GET', url: '/health' })
      expect(res.statusCode).toBe(200)
      await app.close()
      const { rows } = await db.query<{ n: number }>('SELECT 1 AS n')
      expect(rows).toEqual([{ n: 1 }])
    } finally {
      await db.close()
    }
  })

  it('takes ids and refresh tokens from the injected Random', async () => {
    const random = countingRandom()
    const app = buildAuthApp(loadSettings(testEnv(schema.url)), {
      random,
      clock: new FakeClock(Date.UTC(2026, 0, 1)),
    })
    await app.start()
    try {
      expect(app.freshDatabase).toBe(false)
      const res = await app.server.inject({
        method: 'POST',
        url: '/signup',
        payload: { email: 'counted@example.com', password: 'secret123' },
      })
      expect(res.statusCode).toBe(200)
      const body = res.json<Reply>()
      expect(random.uuids).toContain(body.user.id)
      expect(body.user.identities[0]?.identity_id).toBe(
        random.uuids[random.uuids.indexOf(body.user.id) + 1],
      )
      // Seven bytes everywhere: every character of the token is alphabet[7 & 31].
      expect(body.refresh_token).toBe('hhhhhhhhhhhh')
      // Then the sign-up's audit entry, then the session.
      expect(decodeJwt(body.access_token).session_id).toBe(
        random.uuids[random.uuids.indexOf(body.user.id) + 3],
      )
    } finally {
      await app.close()
    }
  })
})

describe('gatehouse-auth serve', () => {
  it('signs the development service_role key with the injected clock', async () => {
    const clock = new FakeClock(Date.UTC(2030, 5, 1))
    const out: string[] = []
    let stop: ((signal: string) => void) | undefined
    const io: CliIo = {
      out: (line) => out.push(line),
      err: () => undefined,
      onSignal: (handler) => {
        stop = handler
      },
    }
    const port = await getFreePort()
    const env = testEnv('pglite://memory', {
      PORT: String(port),
      AUTHSVC_API_HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
    })
    const running = runCli([], env, io, { clock })
    await waitFor(() => out.some((line) => line.includes('service_role key')), {
      timeout: 30_000,
      what: 'the server',
    })
    stop?.('SIGTERM')
    expect(await running).toBe(0)
    const key = /service_role key \(admin API\): (\S+)/.exec(out.join('\n'))?.[1] ?? ''
    expect(decodeJwt(key)).toMatchObject({ role: 'service_role', iat: clock.nowSeconds() })
  }, 60_000)
})
