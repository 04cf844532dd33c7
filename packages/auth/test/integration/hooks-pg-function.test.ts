import { createTestSchema, type TestDatabase } from '@gatehouse/testing'
import { HookAnswerError, openDb } from '@gatehouse/auth'
import { callPgFunctionHook } from '#internal/hooks/pg-function.js'
import type { Db } from '#internal/storage/db.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

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
        const output = await callPgFunctionHook(target('remember'), '{"user_id":"u1"}', db, tx)
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
      await callPgFunctionHook(target('nothing'), '{}', db, tx)
      const { rows } = await tx.query(`SELECT current_setting('statement_timeout') AS t`)
      expect(rows[0]).toEqual({ t: '7s' })
    })
  })

  it('answers no output for SQL null, and the error object as the hook set it', async () => {
    await expect(
      callPgFunctionHook(target('nothing'), '{}', db, undefined),
    ).resolves.toBeUndefined()
    const error = await callPgFunctionHook(target('refuse'), '{}', db, undefined).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(HookAnswerError)
    expect(error).toMatchObject({ status: 422, code: 'unknown', message: 'Not this one' })
  })

  it('answers 500 naming the URI when the function fails or runs past its timeout', async () => {
    await expect(callPgFunctionHook(target('broken'), '{}', db, undefined)).rejects.toMatchObject({
      code: 'unexpected_failure',
      message: `Error running hook URI: ${target('broken').uri}`,
    })
    const started = Date.now()
    await expect(
      callPgFunctionHook(target('slow'), '{}', db, undefined, 100),
    ).rejects.toMatchObject({ code: 'unexpected_failure' })
    expect(Date.now() - started).toBeLessThan(3000)
  })
})
