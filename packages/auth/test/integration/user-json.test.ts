import { createTestSchema, type TestDatabase } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrate, openDb, type Db } from '@gatehouse/auth'
import { lockRefreshToken, insertRefreshToken } from '#internal/models/refresh-token.js'
import { findSessionById, insertSession } from '#internal/models/session.js'
import { findUserContext } from '#internal/models/user-context.js'
import { getUserById, insertUser, isBanned, type User } from '#internal/models/user.js'

/**
 * The hot reads (an authenticated request's context, a refresh's locked token) take the user and
 * the session as one `json` value each rather than a column per field (issue 34): they must give
 * exactly what the column reads give, whatever the connection's time zone, and keep PostgreSQL's
 * `infinity` meaning what it says.
 */

let schema: TestDatabase
const drivers: { name: string; db: Db }[] = []

beforeAll(async () => {
  schema = await createTestSchema('auth_user_json')
  // A time zone with a half-hour offset: `to_json` writes timestamps in the session's zone.
  const url = new URL(schema.url)
  const options = url.searchParams.get('options') ?? ''
  url.searchParams.set('options', `${options} -c TimeZone=America/St_Johns`)
  const lite = await openDb('pglite://memory', '', 0)
  await lite.exec(`SET TimeZone = 'America/St_Johns'`)
  drivers.push(
    { name: 'pg', db: await openDb(url.toString(), '', 2) },
    { name: 'PGlite', db: lite },
  )
  for (const { db } of drivers) await migrate(db)
}, 60_000)

afterAll(async () => {
  for (const { db } of drivers) await db.close()
  await schema.drop()
})

const NOW = Date.UTC(2026, 10, 28, 23, 59, 59, 123)

async function userWithEverything(db: Db, id: string, email: string, phone: string): Promise<User> {
  await insertUser(db, {
    id,
    aud: 'authenticated',
    role: 'authenticated',
    email,
    phone,
    encryptedPassword: '$2b$10$abcdefghijklmnopqrstuv',
    appMetadata: { provider: 'email', providers: ['email'], nested: { a: [1, 'two', null] } },
    userMetadata: { full_name: 'Zoë "Q" Example', n: 1.5 },
    emailConfirmedAt: new Date(NOW - 1000),
    phoneConfirmedAt: new Date(NOW - 2000),
    invitedAt: new Date(NOW - 3000),
    createdAt: new Date(NOW - 4000),
    isSsoUser: true,
  })
  // Microseconds, which neither read keeps, and every other timestamp column set.
  await db.query(
    `UPDATE users SET last_sign_in_at = '2026-11-28 10:00:00.123456+00',
       recovery_sent_at = $2, email_change_sent_at = $2, phone_change_sent_at = $2,
       reauthentication_sent_at = $2, confirmation_sent_at = $2, banned_until = $2,
       deleted_at = $2, email_change_confirm_status = 1, recovery_token = 'r-' || id
     WHERE id = $1`,
    [id, new Date(NOW + 86_400_000)],
  )
  return getUserById(db, id)
}

describe.each(['pg', 'PGlite'])('the user as one json value (%s)', (driver) => {
  const dbOf = (): Db => (drivers.find((d) => d.name === driver) as { db: Db }).db

  it('is the user and session the columns give, under a non-UTC session time zone', async () => {
    const db = dbOf()
    const id = '11111111-1111-4111-8111-111111111111'
    const byColumns = await userWithEverything(db, id, 'everything@example.com', '15550001111')
    expect(byColumns.lastSignInAt?.toISOString()).toBe('2026-11-28T10:00:00.123Z')

    const context = await findUserContext(db, id, null)
    expect(context?.user).toEqual(byColumns)

    const session = await insertSession(
      db,
      { id: '22222222-2222-4222-8222-222222222222', userId: id },
      { userAgent: '', ip: '' },
      NOW,
    )
    // Every session field set; refreshed_at is stored without a time zone, as upstream does.
    await db.query(
      `UPDATE sessions SET refreshed_at = '2026-11-28 11:00:00.654321', not_after = $2,
         tag = 'phone', aal = 'aal2', scopes = 'openid email'
       WHERE id = $1`,
      [session.id, new Date(NOW + 3_600_000)],
    )
    const sessionByColumns = await findSessionById(db, session.id)
    expect(sessionByColumns?.refreshedAt?.toISOString()).toBe('2026-11-28T11:00:00.654Z')
    expect((await findUserContext(db, id, session.id))?.session).toEqual(sessionByColumns)
    await insertRefreshToken(
      db,
      { token: 'tok-1', userId: id, sessionId: session.id, parent: '' },
      NOW,
    )
    const locked = await lockRefreshToken(db, 'tok-1')
    expect(locked?.user).toEqual(byColumns)
    expect(locked?.session).toEqual(sessionByColumns)
  })

  it('reads a ban until infinity as banned, by either read, and a missing user as none', async () => {
    const db = dbOf()
    const id = '33333333-3333-4333-8333-333333333333'
    await userWithEverything(db, id, 'forever@example.com', '15550002222')
    await db.query(
      `UPDATE users SET banned_until = 'infinity', deleted_at = '-infinity' WHERE id = $1`,
      [id],
    )
    const context = await findUserContext(db, id, null)
    expect(context?.user.bannedUntil?.getTime()).toBe(8.64e15)
    expect(context?.user.deletedAt?.getTime()).toBe(-8.64e15)
    expect(isBanned(context?.user as User, NOW)).toBe(true)
    // The column reads alike (both drivers gave the number Infinity, which crashed isBanned).
    const byColumns = await getUserById(db, id)
    expect(byColumns).toEqual(context?.user)
    expect(isBanned(byColumns, NOW)).toBe(true)

    expect(await findUserContext(db, '44444444-4444-4444-8444-444444444444', null)).toBeUndefined()
  })
})
