import type { GoTrueClient } from '@supabase/auth-js'
import {
  AuthApiError,
  AuthSessionMissingError,
  AuthWeakPasswordError,
  GoTrueAdminApi,
} from '@supabase/auth-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { systemClock } from '@gatehouse/auth'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

/** Black-box tests: the server driven only through the official client, over real HTTP. */
describe('@supabase/auth-js against the server', () => {
  let server: TestServer
  let admin: GoTrueAdminApi

  function client(): GoTrueClient {
    return authJsClient(server.url)
  }

  beforeAll(async () => {
    server = await startTestServer('authjs', {}, systemClock)
    await server.listen()
    admin = new GoTrueAdminApi({
      url: server.url,
      headers: { Authorization: `Bearer ${server.serviceKey}` },
    })
  })
  afterAll(async () => {
    await server.close()
  })

  it('signUp, signInWithPassword, getUser, updateUser and refreshSession', async () => {
    const auth = client()
    const signUp = await auth.signUp({
      email: 'js@example.com',
      password: 'secret123',
      options: { data: { name: 'JS' } },
    })
    expect(signUp.error).toBeNull()
    expect(signUp.data.session?.access_token).toEqual(expect.any(String))
    expect(signUp.data.user?.user_metadata).toMatchObject({ name: 'JS' })

    const signIn = await auth.signInWithPassword({ email: 'js@example.com', password: 'secret123' })
    expect(signIn.error).toBeNull()
    expect(signIn.data.user?.email).toBe('js@example.com')

    const got = await auth.getUser()
    expect(got.error).toBeNull()
    expect(got.data.user?.id).toBe(signIn.data.user?.id)

    const updated = await auth.updateUser({ data: { plan: 'free' } })
    expect(updated.error).toBeNull()
    expect(updated.data.user?.user_metadata).toMatchObject({ name: 'JS', plan: 'free' })

    const before = signIn.data.session!.refresh_token
    const refreshed = await auth.refreshSession()
    expect(refreshed.error).toBeNull()
    expect(refreshed.data.session?.refresh_token).not.toBe(before)

    const password = await auth.updateUser({ password: 'another-secret1' })
    expect(password.error).toBeNull()
    const again = await client().signInWithPassword({
      email: 'js@example.com',
      password: 'another-secret1',
    })
    expect(again.error).toBeNull()
  })

  it('raises typed errors: AuthWeakPasswordError, AuthApiError with code, AuthSessionMissingError', async () => {
    const auth = client()
    const weak = await auth.signUp({ email: 'weak-js@example.com', password: '123' })
    expect(weak.error).toBeInstanceOf(AuthWeakPasswordError)
    expect(weak.error).toMatchObject({ status: 422, code: 'weak_password', reasons: ['length'] })

    const wrong = await auth.signInWithPassword({ email: 'js@example.com', password: 'nope-nope' })
    expect(wrong.error).toBeInstanceOf(AuthApiError)
    expect(wrong.error).toMatchObject({
      status: 400,
      code: 'invalid_credentials',
      message: 'Invalid login credentials',
    })

    const session = await auth.signInWithPassword({
      email: 'js@example.com',
      password: 'another-secret1',
    })
    expect(session.error).toBeNull()
    const other = client()
    await other.setSession(session.data.session!)
    // End the session through another client, then ask for the user with the old token.
    const { error: outError } = await other.signOut({ scope: 'global' })
    expect(outError).toBeNull()
    const missing = await auth.getUser(session.data.session!.access_token)
    expect(missing.error).toBeInstanceOf(AuthSessionMissingError)
  })

  it('signOut with scope local, others and global', async () => {
    await admin.createUser({
      email: 'scopes-js@example.com',
      password: 'secret123',
      email_confirm: true,
    })
    const [a, b, c] = [client(), client(), client()]
    for (const auth of [a, b, c]) {
      const { error } = await auth.signInWithPassword({
        email: 'scopes-js@example.com',
        password: 'secret123',
      })
      expect(error).toBeNull()
    }
    expect((await a.signOut({ scope: 'local' })).error).toBeNull()
    expect((await a.getSession()).data.session).toBeNull()
    expect((await b.getUser()).error).toBeNull()

    expect((await b.signOut({ scope: 'others' })).error).toBeNull()
    expect((await b.getUser()).error).toBeNull()
    const cUser = await c.getUser()
    expect(cUser.error).toBeInstanceOf(AuthSessionMissingError)

    expect((await b.signOut()).error).toBeNull()
    const bSession = await b.getSession()
    expect(bSession.data.session).toBeNull()
  })

  it('admin createUser, listUsers, getUserById, updateUserById and deleteUser', async () => {
    const created = await admin.createUser({
      email: 'admin-js@example.com',
      password: 'secret123',
      email_confirm: true,
      user_metadata: { a: 1 },
    })
    expect(created.error).toBeNull()
    const id = created.data.user!.id

    for (let i = 0; i < 3; i++) {
      await admin.createUser({ email: `list-${String(i)}@example.com`, email_confirm: true })
    }
    const page = await admin.listUsers({ page: 1, perPage: 2 })
    expect(page.error).toBeNull()
    expect(page.data.users).toHaveLength(2)
    expect(page.data).toMatchObject({ nextPage: 2, lastPage: 3, total: 6 })

    const got = await admin.getUserById(id)
    expect(got.data.user?.email).toBe('admin-js@example.com')

    const updated = await admin.updateUserById(id, { user_metadata: { b: 2 }, ban_duration: '10m' })
    expect(updated.error).toBeNull()
    expect(updated.data.user?.user_metadata).toMatchObject({ a: 1, b: 2 })
    expect(updated.data.user?.banned_until).toEqual(expect.any(String))

    const banned = await client().signInWithPassword({
      email: 'admin-js@example.com',
      password: 'secret123',
    })
    expect(banned.error).toMatchObject({ code: 'user_banned' })

    const deleted = await admin.deleteUser(id)
    expect(deleted.error).toBeNull()
    const gone = await admin.getUserById(id)
    expect(gone.error).toBeInstanceOf(AuthApiError)
    expect(gone.error).toMatchObject({ status: 404, code: 'user_not_found' })
  })

  it('admin calls with a non-admin token fail with not_admin', async () => {
    const auth = client()
    const { data } = await auth.signInWithPassword({
      email: 'js@example.com',
      password: 'another-secret1',
    })
    const notAdmin = new GoTrueAdminApi({
      url: server.url,
      headers: { Authorization: `Bearer ${data.session!.access_token}` },
    })
    const res = await notAdmin.listUsers()
    expect(res.error).toMatchObject({ status: 403, code: 'not_admin' })
  })
})
