/**
 * Route schemas: TypeBox builders for the request parts of a route (`body`, `querystring`,
 * `params`), compiled by Fastify's Ajv (no type coercion, `verbose` errors), and the one mapping
 * of a schema failure to upstream's error.
 *
 * - A body is decoded as upstream's Go structs are: an object whose fields are strings, booleans
 *   or objects, where `null` means absent and unknown fields are ignored (no
 *   `additionalProperties: false`). A wrong type is 400 `bad_json` with Go's text ("json: cannot
 *   unmarshal number into field email of type string"); a missing body is "unexpected end of
 *   JSON input". Meaning (an email's format, a password's strength) is checked by the services,
 *   in upstream's order.
 * - A query-string parameter or a path parameter may carry an `errorMessage` annotation: the
 *   text of 400 `validation_failed` (path parameters: 404, as upstream answers a malformed id),
 *   where `%s` is replaced by the value and `%q` by the value in double quotes.
 *
 * @module
 */
import Type, {
  type Static,
  type TObject,
  type TOptional,
  type TProperties,
  type TUnsafe,
} from 'typebox'
import { BadRequestError, NotFoundError, type AuthError } from '../../errors.js'
import type { JsonObject } from '../../models/json.js'

/** The annotation keyword with a parameter's error text (registered with Fastify's Ajv). */
export const ERROR_MESSAGE = 'errorMessage'

/** Options of the Ajv that compiles route schemas (Fastify's `ajv.customOptions`). */
export const AJV_OPTIONS = {
  // A number where a string belongs is an error, as in Go, never "coerced" into one.
  coerceTypes: false,
  // Errors carry the value and the field's schema, for the texts below.
  verbose: true,
  // A bool field of a form body is a string: `type: ['boolean', 'string', 'null']`.
  allowUnionTypes: true,
  keywords: [ERROR_MESSAGE],
} as const

/** A body field of type string: absent or `null` is Go's zero value, see {@link str}. */
export function StringField(): TOptional<TUnsafe<string | null>> {
  return Type.Optional(Type.Unsafe<string | null>({ type: ['string', 'null'] }))
}

/**
 * A body field of type bool: `true`, `false`, `null` (absent), or the strings `"true"` and
 * `"false"` of a form-encoded body; see {@link bool}.
 */
export function BoolField(): TOptional<TUnsafe<boolean | 'true' | 'false' | null>> {
  return Type.Optional(
    Type.Unsafe<boolean | 'true' | 'false' | null>({
      type: ['boolean', 'string', 'null'],
      enum: [true, false, 'true', 'false', null],
    }),
  )
}

/** A body field holding a JSON object (metadata); `null` is absent, see {@link obj}. */
export function ObjectField(): TOptional<TUnsafe<JsonObject | null>> {
  return Type.Optional(Type.Unsafe<JsonObject | null>({ type: ['object', 'null'] }))
}

/** A required body: a JSON object (or form fields) with these fields. */
export function Body<T extends TProperties>(fields: T): TObject<T> {
  return Type.Object(fields)
}

/** An optional body: none at all is `undefined`, anything else as {@link Body}. */
export function OptionalBody<T extends TProperties>(
  fields: T,
): TUnsafe<Static<TObject<T>> | undefined> {
  return Type.Unsafe({ ...Type.Object(fields), type: ['object', 'null'] })
}

/** The query string of a route: these parameters, each a string (see {@link Param}). */
export function Query<T extends TProperties>(parameters: T): TObject<T> {
  return Type.Object(parameters)
}

/** The path parameters of a route (see {@link Param}); a failure is 404, as for a missing resource. */
export function Params<T extends TProperties>(parameters: T): TObject<T> {
  return Type.Object(parameters)
}

/** A query-string or path parameter; `errorMessage` is the text when it does not validate. */
export function Param(
  options: { pattern?: string; enum?: readonly string[]; errorMessage?: string } = {},
): TUnsafe<string> {
  return Type.Unsafe<string>({ type: 'string', ...options })
}

/** An optional query-string parameter (see {@link Param}). */
export function OptionalParam(
  options: { pattern?: string; enum?: readonly string[]; errorMessage?: string } = {},
): TOptional<TUnsafe<string>> {
  return Type.Optional(Param(options))
}

/** A string body field: Go's zero value `''` for absent or `null`. */
export function str(value: string | null | undefined): string {
  return value ?? ''
}

/** A bool body field: `undefined` for absent or `null`; form bodies say `"true"`/`"false"`. */
export function bool(value: boolean | 'true' | 'false' | null | undefined): boolean | undefined {
  return value === null || value === undefined ? undefined : value === true || value === 'true'
}

/** An object body field: `undefined` for absent or `null`. */
export function obj(value: JsonObject | null | undefined): JsonObject | undefined {
  return value ?? undefined
}

/** Where a schema failed: the request part Fastify names in `validationContext`. */
export type SchemaPart = 'body' | 'querystring' | 'params' | 'headers'

/** The fields of an Ajv error that {@link schemaError} reads (Ajv runs with `verbose`). */
export interface SchemaFailure {
  readonly keyword: string
  /** JSON pointer of the failing value, `''` for the whole part. */
  readonly instancePath: string
  /** The value that failed. */
  readonly data?: unknown
  /** The schema of the failing value. */
  readonly parentSchema?: { readonly type?: unknown; readonly errorMessage?: unknown }
  readonly message?: string
}

/** Go's name of a JSON value's type, as `encoding/json` reports it. */
function jsonKind(value: unknown): string {
  return Array.isArray(value) ? 'array' : typeof value
}

/** Go's name of the type a body field was declared with. */
function goType(schema: SchemaFailure['parentSchema']): string {
  const types: unknown[] = Array.isArray(schema?.type) ? schema.type : [schema?.type]
  if (types.includes('boolean')) return 'bool'
  if (types.includes('object')) return 'object'
  return 'string'
}

function bodyError(failure: SchemaFailure): AuthError {
  const badJson = (detail: string) =>
    new BadRequestError('bad_json', `Could not parse request body as JSON: ${detail}`)
  if (failure.instancePath === '') {
    return failure.data === null || failure.data === undefined
      ? badJson('unexpected end of JSON input')
      : badJson(`cannot unmarshal ${jsonKind(failure.data)} into an object`)
  }
  const field = failure.instancePath.slice(1).split('/')[0] ?? ''
  return badJson(
    `json: cannot unmarshal ${jsonKind(failure.data)} into field ${field} of type ${goType(failure.parentSchema)}`,
  )
}

function parameterText(failure: SchemaFailure, part: SchemaPart): string {
  const template = failure.parentSchema?.errorMessage
  if (typeof template !== 'string') {
    return `${part}${failure.instancePath} ${failure.message ?? 'is invalid'}`
  }
  const value = typeof failure.data === 'string' ? failure.data : JSON.stringify(failure.data)
  return template.replace(/%[sq]/g, (verb) => (verb === '%q' ? JSON.stringify(value) : value))
}

/**
 * The error of a request that failed its route's schema: for the body, upstream's JSON decoding
 * errors (400 `bad_json`); for the query string, 400 `validation_failed`; for path parameters,
 * 404 `validation_failed`; the text from the parameter's `errorMessage`.
 *
 * @param failures Ajv's errors (the first one counts, as Ajv stops at it).
 */
export function schemaError(part: SchemaPart, failures: readonly SchemaFailure[]): AuthError {
  const failure = failures[0] ?? { keyword: 'unknown', instancePath: '' }
  if (part === 'body') return bodyError(failure)
  const text = parameterText(failure, part)
  return part === 'params'
    ? new NotFoundError('validation_failed', text)
    : new BadRequestError('validation_failed', text)
}
