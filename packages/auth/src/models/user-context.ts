import { statementFor, type Queryable } from '../storage/db.js'
import { factorsFromJson, factorsJsonSql, type Factor } from './factor.js'
import { identitiesFromJson, identitiesJsonSql, type Identity } from './identity.js'
import { SESSION_JSON_OF_S, sessionFromJson, type Session } from './session.js'
import { userFromJson, userJsonSql, type User } from './user.js'

/** A user with its identities, MFA factors and, when asked for, one of its sessions. */
export interface UserContext {
  readonly user: User
  readonly identities: Identity[]
  /** The user's MFA factors, oldest first. */
  readonly factors: Factor[]
  /** The session named in the lookup, or `undefined` when none was named or it does not exist. */
  readonly session: Session | undefined
}

/** The statement of {@link findUserContext}. */
const contextSql = statementFor(
  (t) =>
    `SELECT ${userJsonSql('u')} AS user_json, ${identitiesJsonSql(t.identities, 'u.id')} AS identities_json,
       ${factorsJsonSql(t.mfaFactors, 'u.id')} AS factors_json,
       ${SESSION_JSON_OF_S} AS session_json
     FROM ${t.users} u LEFT JOIN ${t.sessions} s ON s.id = $2::uuid
     WHERE u.id = $1`,
)

interface Row {
  user_json: unknown
  session_json: unknown
  identities_json: unknown
  factors_json: unknown
}

/**
 * Loads what an authenticated request needs in one round trip: the user, its identities, its MFA
 * factors and the session of the token's `session_id`.
 *
 * @param sessionId The token's `session_id`, or `null`.
 * @returns `undefined` when the user does not exist.
 */
export async function findUserContext(
  q: Queryable,
  userId: string,
  sessionId: string | null,
): Promise<UserContext | undefined> {
  const { rows } = await q.query<Row>(contextSql(q.t), [userId, sessionId])
  const row = rows[0]
  const user = row && userFromJson(row.user_json)
  if (!row || !user) return undefined
  return {
    user,
    identities: identitiesFromJson(row.identities_json),
    factors: factorsFromJson(row.factors_json),
    session: sessionFromJson(row.session_json),
  }
}
