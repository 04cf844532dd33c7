import { createTestSchema, type TestDatabase } from '@gatehouse/testing'
import { HookAnswerError, openDb, systemClock } from '@gatehouse/auth'
import { callPgFunctionHook } from '#internal/hooks/pg-function.js'
import type { Db } from '#internal/storage/db.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'
import { createHookSchema, hookEnv, type HookSchema } from '../support/fake-hook.js'

let schema: TestDatabase
let db: Db
const target = (name: string) => ({
  uri: `pg-functions://postgres/${schema.name}/${name}`,
  schema: schema.name,
  name,
})

beforeAll(async () => {
  schema = await createTestSchema('hook_pg_transport')
  db = await openDb(schema.url, '', 2)
  await db.exec(`
    CREATE TABLE "${schema.name}".seen (payload jsonb);
    CREATE FUNCTION "${schema.name}".remember(event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO "${schema.name}".seen VALUES (event);
        RETURN jsonb_build_object('decision', 'continue', 'got', event->'user_id');
      END $$;
    CREATE FUNCTION "${schema.name}".refuse(event jsonb) RETURNS jsonb LANGUAGE sql AS $$
      SELECT '{"error":{"http_code":422,"message":"Not this one"}}'::jsonb $$;
    CREATE FUNCTION "${schema.name}".broken(event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'boom'; END $$;
    CREATE FUNCTION "${schema.name}".slow(event jsonb) RETURNS jsonb LANGUAGE sql AS $$
      SELECT pg_sleep(5); SELECT '{}'::jsonb $$;
    CREATE FUNCTION "${schema.name}".nothing(event jsonb) RETURNS jsonb LANGUAGE sql AS $$
      SELECT NULL::jsonb $$;
  `)
})
afterAll(async () => {
  await db.close()
  await schema.drop()
})

describe('callPgFunctionHook', () => {
  it("runs inside the caller's transaction: its writes roll back with it", async () => {
    const rolledBack = new Error('roll back')
    await expect(
      db.transaction(async (tx) => {
        const output = await callPgFunctionHook(target('remember'), '{"user_id":"u1"}', tx)
        expect(output).toEqual({ decision: 'continue', got: 'u1' })
        const { rows } = await tx.query(`SELECT count(*)::int AS n FROM "${schema.name}".seen`)
        expect(rows[0]).toEqual({ n: 1 })
        throw rolledBack
      }),
    ).rejects.toBe(rolledBack)
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM "${schema.name}".seen`)
    expect(rows[0]).toEqual({ n: 0 })
  })

  it('restores the transaction statement_timeout after the call', async () => {
    await db.transaction(async (tx) => {
      await tx.query(`SET LOCAL statement_timeout = '7s'`)
      await callPgFunctionHook(target('nothing'), '{}', tx)
      const { rows } = await tx.query(`SELECT current_setting('statement_timeout') AS t`)
      expect(rows[0]).toEqual({ t: '7s' })
    })
  })

  it('answers no output for SQL null, and the error object as the hook set it', async () => {
    await expect(callPgFunctionHook(target('nothing'), '{}', db)).resolves.toBeUndefined()
    const error = await callPgFunctionHook(target('refuse'), '{}', db).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(HookAnswerError)
    expect(error).toMatchObject({ status: 422, code: 'unknown', message: 'Not this one' })
  })

  it('answers 500 naming the URI when the function fails or runs past its timeout', async () => {
    await expect(callPgFunctionHook(target('broken'), '{}', db)).rejects.toMatchObject({
      code: 'unexpected_failure',
      message: `Error running hook URI: ${target('broken').uri}`,
    })
    const started = Date.now()
    await expect(callPgFunctionHook(target('slow'), '{}', db, 100)).rejects.toMatchObject({
      code: 'unexpected_failure',
    })
    expect(Date.now() - started).toBeLessThan(3000)
  })
})

describe('HOOK_CUSTOM_ACCESS_TOKEN as a function runs in the issuing transaction', () => {
  let functions: HookSchema
  let server: TestServer
  const PASSWORD = 'a long enough password'

  /** Decodes an access token's claims. */
  const claimsOf = (token: string | undefined): Record<string, unknown> =>
    JSON.parse(Buffer.from(token?.split('.')[1] ?? '', 'base64url').toString()) as Record<
      string,
      unknown
    >
  const count = async (table: string, userId: string | undefined): Promise<number> => {
    const { rows } = await functions.client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${server.database.name}".${table} WHERE user_id::text = $1`,
      [userId],
    )
    return rows[0]?.n ?? -1
  }

  beforeAll(async () => {
    functions = await createHookSchema(
      'hook_cat_tx',
      (schema) => `
        CREATE TABLE "${schema}".failing (since timestamptz);
        -- Whether the session's newest refresh token was written by the transaction the function
        -- runs in; fails while "failing" has a row. Tables resolve through the server's
        -- search_path.
        CREATE FUNCTION "${schema}".claims(event jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
          DECLARE here boolean;
          BEGIN
            IF EXISTS (SELECT 1 FROM "${schema}".failing) THEN
              RAISE EXCEPTION 'no tokens now';
            END IF;
            SELECT EXISTS (
              SELECT 1 FROM refresh_tokens r
              WHERE r.session_id::text = event->'claims'->>'session_id'
                AND r.xmin = pg_current_xact_id_if_assigned()::xid
            ) INTO here;
            RETURN jsonb_build_object('claims',
              (event->'claims') || jsonb_build_object('token_written_here', here));
          END $$`,
    )
    server = await startTestServer(
      'hook_cat_tx',
      hookEnv('CUSTOM_ACCESS_TOKEN', functions.uri('claims')),
      systemClock,
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
    await functions.close()
  })

  it('sees the session and refresh token written before it, on sign-in and refresh', async () => {
    const auth = authJsClient(server.url)
    const signUp = await auth.signUp({ email: 'in-tx-1@example.com', password: PASSWORD })
    expect(signUp.error).toBeNull()
    expect(claimsOf(signUp.data.session?.access_token)).toMatchObject({
      token_written_here: true,
    })
    const refreshed = await auth.refreshSession()
    expect(refreshed.error).toBeNull()
    expect(claimsOf(refreshed.data.session?.access_token)).toMatchObject({
      token_written_here: true,
    })
  })

  it("rolls the sign-in's and the refresh's writes back when it fails", async () => {
    const auth = authJsClient(server.url)
    const signUp = await auth.signUp({ email: 'in-tx-2@example.com', password: PASSWORD })
    expect(signUp.error).toBeNull()
    const userId = signUp.data.user?.id
    const before = [await count('sessions', userId), await count('refresh_tokens', userId)]
    expect(before).toEqual([1, 1])
    await functions.client.query(`INSERT INTO "${functions.name}".failing VALUES (now())`)
    try {
      const refreshed = await auth.refreshSession()
      expect(refreshed.error).toMatchObject({ status: 500, code: 'unexpected_failure' })
      const signIn = await authJsClient(server.url).signInWithPassword({
        email: 'in-tx-2@example.com',
        password: PASSWORD,
      })
      expect(signIn.error).toMatchObject({
        status: 500,
        code: 'unexpected_failure',
        message: `Error running hook URI: ${functions.uri('claims')}`,
      })
      expect([await count('sessions', userId), await count('refresh_tokens', userId)]).toEqual(
        before,
      )
    } finally {
      await functions.client.query(`DELETE FROM "${functions.name}".failing`)
    }
  })
})
