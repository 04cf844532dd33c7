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
 * - The schema also decodes the body, once, while it validates it (the `x-go-decode` keyword and
 *   Ajv's defaults): a handler reads a string field as a string (Go's zero value `''` when absent
 *   or `null`), a bool field as `true`, `false` or `undefined` (absent; a form body's `"true"` and
 *   `"false"` become booleans) and an object field as an object or `undefined`.
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

/** The keyword that decodes a body field once it validated (see {@link GO_DECODE_KEYWORD}). */
export const GO_DECODE = 'x-go-decode'

/** What a body field holds, for {@link GO_DECODE}. */
type GoKind = 'string' | 'pointer' | 'bool' | 'object' | 'list'

/** Where a value sits, as Ajv (8) tells a keyword's `validate`. */
interface DataCxt {
  readonly parentData: Record<string | number, unknown>
  readonly parentDataProperty: string | number
}

/**
 * Decodes a body field as Go's `encoding/json` fills a struct field: `null` is the zero value
 * (`''` for a string, absent for a bool or an object), and a form body's `"true"`/`"false"`
 * are booleans. Absent string fields get their `''` from the schema's `default`.
 */
const GO_DECODE_KEYWORD = {
  keyword: GO_DECODE,
  modifying: true,
  schemaType: 'string' as const,
  validate: (kind: GoKind, data: unknown, _schema?: unknown, cxt?: DataCxt): boolean => {
    if (cxt === undefined) return true
    const fields = cxt.parentData
    const key = cxt.parentDataProperty
    if (data === null) {
      if (kind === 'string') fields[key] = ''
      else Reflect.deleteProperty(fields, key)
    } else if (kind === 'bool' && typeof data === 'string') {
      fields[key] = data === 'true'
    }
    return true
  },
}

/** Options of the Ajv that compiles route schemas (Fastify's `ajv.customOptions`). */
export const AJV_OPTIONS = {
  // A number where a string belongs is an error, as in Go, never "coerced" into one.
  coerceTypes: false,
  // Errors carry the value and the field's schema, for the texts below.
  verbose: true,
  // A bool field of a form body is a string: `type: ['boolean', 'string', 'null']`.
  allowUnionTypes: true,
  // An absent string field is `''` (its `default`).
  useDefaults: true,
  keywords: [ERROR_MESSAGE, GO_DECODE_KEYWORD],
} as const

/**
 * A body field of type string: a handler reads `''` (Go's zero value) when it is absent or
 * `null`.
 */
export function StringField(): TUnsafe<string> {
  return Type.Unsafe<string>({ type: ['string', 'null'], default: '', [GO_DECODE]: 'string' })
}

/**
 * A body field of type `*string` (a pointer in upstream's struct, where absent and `''` differ,
 * as for a new password): a handler reads `undefined` when it is absent or `null`.
 */
export function PointerStringField(): TOptional<TUnsafe<string>> {
  return Type.Optional(Type.Unsafe<string>({ type: ['string', 'null'], [GO_DECODE]: 'pointer' }))
}

/**
 * A body field of type bool: `true`, `false`, `null` (absent), or the strings `"true"` and
 * `"false"` of a form-encoded body; a handler reads `true`, `false` or `undefined` (absent).
 */
export function BoolField(): TOptional<TUnsafe<boolean>> {
  return Type.Optional(
    Type.Unsafe<boolean>({
      type: ['boolean', 'string', 'null'],
      enum: [true, false, 'true', 'false', null],
      [GO_DECODE]: 'bool',
    }),
  )
}

/** A body field holding a JSON object (metadata); a handler reads `undefined` for `null`. */
export function ObjectField(): TOptional<TUnsafe<JsonObject>> {
  return Type.Optional(Type.Unsafe<JsonObject>({ type: ['object', 'null'], [GO_DECODE]: 'object' }))
}

/**
 * A body field holding an array of strings (a Go `[]string`); a handler reads `undefined` for
 * `null` or absent (upstream tells those from `[]`).
 */
export function StringListField(): TOptional<TUnsafe<string[]>> {
  return Type.Optional(
    Type.Unsafe<string[]>({
      type: ['array', 'null'],
      items: { type: 'string' },
      [GO_DECODE]: 'list',
    }),
  )
}

/**
 * The object schema of a body: no field is required (Go fills absent ones with zero values: a
 * {@link StringField} gets `''` from its default).
 */
function bodyObject<T extends TProperties>(fields: T): TObject<T> {
  const { required: _required, ...schema } = Type.Object(fields)
  return schema as TObject<T>
}

/** A required body: a JSON object (or form fields) with these fields. */
export function Body<T extends TProperties>(fields: T): TObject<T> {
  return bodyObject(fields)
}

/** An optional body: none at all is `undefined`, anything else as {@link Body}. */
export function OptionalBody<T extends TProperties>(
  fields: T,
): TUnsafe<Static<TObject<T>> | undefined> {
  return Type.Unsafe({ ...bodyObject(fields), type: ['object', 'null'] })
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
  if (types.includes('array')) return '[]string'
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
