/**
 * The response schemas Fastify serializes with, for the answers `@supabase/auth-js` reads by
 * shape: the user or session of `POST /signup`, the session (or message) of `POST /verify`, the
 * session of `POST /token` and `POST /factors/{factor_id}/verify`, the user of `GET`/`PUT /user`
 * and the users of the admin API. Each is the
 * documented component of {@link COMPONENT_SCHEMAS} (written once, in `openapi.ts`) with its
 * references inlined and `additionalProperties: true`, so that a field the document lacks is
 * kept, never dropped. A required field missing from an answer makes the serializer throw (the
 * request fails with 500 `unexpected_failure`): a broken shape is an error, never a silently
 * different answer.
 *
 * @module
 */
import { COMPONENT_SCHEMAS } from './openapi.js'

/** A JSON schema, as the components write it. */
type Schema = Record<string, unknown>

const COMPONENT_REF = '#/components/schemas/'

/** The components an answer is checked against (see {@link responseSchemaOf}). */
const RESPONSE_COMPONENTS = [
  'Session',
  'User',
  'UserList',
  'UserOrSession',
  'ConfirmationAccepted',
  'SessionOrAccepted',
] as const

/** A component an answer is checked against. */
export type ResponseComponent = (typeof RESPONSE_COMPONENTS)[number]

function isResponseComponent(name: string): name is ResponseComponent {
  return (RESPONSE_COMPONENTS as readonly string[]).includes(name)
}

/**
 * `name`'s component as a serializer schema: references to the {@link RESPONSE_COMPONENTS}
 * become their schemas, other references (factors, identities) objects kept as they are.
 */
function inline(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(inline)
  if (schema === null || typeof schema !== 'object') return schema
  const ref = (schema as Schema).$ref
  if (typeof ref === 'string' && ref.startsWith(COMPONENT_REF)) {
    const name = ref.slice(COMPONENT_REF.length)
    return isResponseComponent(name)
      ? responseSchemaOf(name)
      : { type: 'object', additionalProperties: true }
  }
  const copy: Schema = {}
  for (const [key, value] of Object.entries(schema as Schema)) copy[key] = inline(value)
  return copy
}

/**
 * The serializer schema of the component `name` (`Session`, `User`, `UserList`,
 * `ConfirmationAccepted`, or one of two of them, `UserOrSession` and `SessionOrAccepted`, told
 * apart by their required fields).
 *
 * @throws {Error} When the component does not exist (a programming error, at start-up).
 */
export function responseSchemaOf(name: ResponseComponent): Schema {
  const component = COMPONENT_SCHEMAS[name]
  if (component === undefined) throw new Error(`no component schema ${name}`)
  const schema = inline(component) as Schema
  return 'oneOf' in schema ? schema : { ...schema, additionalProperties: true }
}

/** The session auth-js reads from `POST /token` and `POST /factors/{factor_id}/verify`. */
export const SESSION_RESPONSE: Schema = responseSchemaOf('Session')

/**
 * The user auth-js reads from `GET /user`, `PUT /user`, `POST /admin/users` and
 * `GET`/`PUT /admin/users/{user_id}`.
 */
export const USER_RESPONSE: Schema = responseSchemaOf('User')

/** `POST /signup`'s answer: the user, or a session when sign-ups are confirmed at once. */
export const USER_OR_SESSION_RESPONSE: Schema = responseSchemaOf('UserOrSession')

/**
 * `POST /verify`'s answer: a session (with the verified `type`), or `{msg, code}` when the first
 * of two email change confirmations is accepted.
 */
export const SESSION_OR_ACCEPTED_RESPONSE: Schema = responseSchemaOf('SessionOrAccepted')

/** `GET /admin/users`' page of users (auth-js `admin.listUsers` reads `users`). */
export const USER_LIST_RESPONSE: Schema = responseSchemaOf('UserList')
