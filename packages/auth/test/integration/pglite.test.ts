import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createAuthApp, loadSettings, type AuthApp } from '@gatehouse/auth'
import { testEnv } from '../helpers.js'

async function call(
  app: AuthApp,
  method: 'GET' | 'POST',
  url: string,
  body?: unknown,
  token?: string,
) {
  const res = await app.server.inject({
    method,
    url,
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
    ...(body === undefined ? {} : { payload: body as Record<string, unknown> }),
  })
  return { status: res.statusCode, body: res.json<Record<string, string>>() }
}

describe('embedded PGlite', () => {
  const dirs: string[] = []
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
  })

  it('runs sign-up, sign-in, refresh and GET /user on a data directory that survives a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-auth-pglite-'))
    dirs.push(dir)
    const settings = loadSettings(testEnv(`pglite://${dir}`))
    let app = await createAuthApp(settings)
    try {
      const signup = await call(app, 'POST', '/signup', {
        email: 'lite@example.com',
        password: 'secret123',
      })
      expect(signup.status).toBe(200)
      const refreshed = await call(app, 'POST', '/token?grant_type=refresh_token', {
        refresh_token: signup.body.refresh_token,
      })
      expect(refreshed.status).toBe(200)
    } finally {
      await app.close()
    }
    app = await createAuthApp(settings)
    try {
      const login = await call(app, 'POST', '/token?grant_type=password', {
        email: 'lite@example.com',
        password: 'secret123',
      })
      expect(login.status).toBe(200)
      const me = await call(app, 'GET', '/user', undefined, login.body.access_token)
      expect(me.body.email).toBe('lite@example.com')
    } finally {
      await app.close()
    }
  }, 90_000)
})
