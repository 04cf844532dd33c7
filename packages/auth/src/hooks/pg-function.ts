import { AuthError, InternalServerError } from '../errors.js'
import type { Db, Queryable } from '../storage/db.js'
import { checkHookError } from './answer.js'

/** Upstream's `statement_timeout` of a hook function (`hookspgfunc`), in milliseconds. */
export const PG_FUNCTION_HOOK_TIMEOUT_MS = 2000

/** A PostgreSQL function hook: `"<schema>"."<name>"(payload jsonb)`. */
export interface PgFunctionTarget {
  /** The `pg-functions://` URI (errors name it). */
  readonly uri: string
  readonly schema: string
  readonly name: string
}

/**
 * Calls a hook function with the JSON payload, as upstream's `hookspgfunc` does: inside `tx` when
 * the caller has one (the request's transaction: what the function writes commits or rolls back
 * with it), else in a transaction of its own; the call's `statement_timeout` is `timeoutMs`,
 * and the transaction's own is restored after it.
 *
 * @param payload The JSON text passed as the function's `jsonb` argument.
 * @returns The function's result (`undefined` for SQL `null`).
 * @throws {@link InternalServerError} 500 `unexpected_failure` "Error running hook URI: …" when
 *   the function fails or runs past `timeoutMs`; `HookAnswerError` for an error object.
 */
export async function callPgFunctionHook(
  target: PgFunctionTarget,
  payload: string,
  on: Db | Queryable,
  timeoutMs: number = PG_FUNCTION_HOOK_TIMEOUT_MS,
): Promise<unknown> {
  const call = async (q: Queryable): Promise<unknown> => {
    const { rows } = await q.query<{ previous: string }>(
      `SELECT current_setting('statement_timeout') AS previous,
              set_config('statement_timeout', $1, true)`,
      [`${String(Math.max(1, Math.floor(timeoutMs)))}ms`],
    )
    // The identifiers were checked to be plain (`parseHookUri`); quoting keeps their case.
    const result = await q.query<{ output: unknown }>(
      `SELECT "${target.schema}"."${target.name}"($1::jsonb) AS output`,
      [payload],
    )
    await q.query(`SELECT set_config('statement_timeout', $1, true)`, [rows[0]?.previous ?? '0'])
    return result.rows[0]?.output ?? undefined
  }
  let output: unknown
  try {
    output = 'transaction' in on ? await on.transaction(call) : await call(on)
  } catch (error) {
    // The request's deadline or a lost database answers as it always does.
    if (error instanceof AuthError) throw error
    throw new InternalServerError('unexpected_failure', `Error running hook URI: ${target.uri}`, {
      cause: error,
    })
  }
  checkHookError(output)
  return output
}
