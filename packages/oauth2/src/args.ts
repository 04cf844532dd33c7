/**
 * Node-style argument errors: a `TypeError` with `code` `ERR_INVALID_ARG_TYPE` or
 * `ERR_INVALID_ARG_VALUE` whose message quotes the parameter (oauth4webapi's convention).
 *
 * @internal
 */

/** Codes carried by the argument errors of this package. */
export type ArgumentErrorCode = 'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE'

/** A `TypeError` with a Node-style `code`. @internal */
export type ArgumentError = TypeError & { code: ArgumentErrorCode }

function coded(message: string, code: ArgumentErrorCode, cause?: unknown): ArgumentError {
  const error = new TypeError(message, cause === undefined ? undefined : { cause }) as ArgumentError
  error.code = code
  return error
}

/** Describes a value for an error message without printing it (it may be a secret). */
function describe(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object' : `type ${typeof value}`
}

/** `"name" must be <expected> (got <type>)`, code `ERR_INVALID_ARG_TYPE`. @internal */
export function invalidType(name: string, expected: string, actual: unknown): ArgumentError {
  return coded(`"${name}" must be ${expected} (got ${describe(actual)})`, 'ERR_INVALID_ARG_TYPE')
}

/**
 * `"name" <problem>`, code `ERR_INVALID_ARG_VALUE`; `cause` is the error that showed the problem
 * (for example jose's, for a key it cannot use).
 *
 * @internal
 */
export function invalidValue(name: string, problem: string, cause?: unknown): ArgumentError {
  return coded(`"${name}" ${problem}`, 'ERR_INVALID_ARG_VALUE', cause)
}

/** True for `{}`-like objects (not arrays, not null). @internal */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Throws unless `value` is `undefined` or a plain object (does not narrow). @internal */
export function assertRecord(name: string, value: unknown): void {
  if (value !== undefined && !isRecord(value)) throw invalidType(name, 'an object', value)
}

/**
 * The keys of an options interface, from an object that names each of them (so that adding an
 * option to the interface without adding it here fails to compile).
 *
 * @internal
 */
export function optionKeys<T>(keys: {
  readonly [K in keyof Required<T>]: true
}): readonly string[] {
  return Object.freeze(Object.keys(keys))
}

/** A key's spelling without case and separators, to find what a misspelt key meant. */
function folded(key: string): string {
  return key.toLowerCase().replace(/[_-]/g, '')
}

/**
 * Throws for an own key of the options object `value` that is not one of `known`: an option that
 * is not understood is an error, never silently ignored. The message names the key, lists the
 * accepted ones, and says what was meant: `hints[key]` (a phrase) when given, else the known key
 * spelt the same but for case and `_` (`redirectUri` for `redirect_uri`). Does nothing for
 * `undefined` or a value that is not a plain object (the caller's type check reports those).
 *
 * @throws {TypeError} `ERR_INVALID_ARG_VALUE` naming `name.key`.
 * @internal
 */
export function assertKnownKeys(
  name: string,
  value: unknown,
  known: readonly string[],
  hints: Readonly<Record<string, string>> = {},
): void {
  if (!isRecord(value)) return
  for (const key of Object.keys(value)) {
    if (known.includes(key)) continue
    const alike = known.find((k) => folded(k) === folded(key))
    const hint = Object.hasOwn(hints, key)
      ? ` (${String(hints[key])})`
      : alike === undefined
        ? ''
        : ` (did you mean ${alike}?)`
    throw invalidValue(
      `${name}.${key}`,
      `is not understood${hint}: ${name} takes ${known.join(', ')}`,
    )
  }
}

/** Shows a non-secret value in an error message: strings quoted, others by type or value. @internal */
export function show(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return describe(value)
}

/** Asserts a string argument. @internal */
export function assertString(name: string, value: unknown): asserts value is string {
  if (typeof value !== 'string') throw invalidType(name, 'a string', value)
}

/** Asserts an optional boolean argument. @internal */
export function assertOptionalBoolean(
  name: string,
  value: unknown,
): asserts value is boolean | undefined {
  if (value !== undefined && typeof value !== 'boolean') throw invalidType(name, 'a boolean', value)
}

/** Asserts that `value` is one of `allowed`. @internal */
export function assertOneOf<T extends string>(
  name: string,
  value: unknown,
  allowed: readonly T[],
): asserts value is T {
  if (typeof value !== 'string') throw invalidType(name, 'a string', value)
  if (!(allowed as readonly string[]).includes(value)) {
    throw invalidValue(
      name,
      `must be one of ${allowed.map((a) => `'${a}'`).join(', ')} (got '${value}')`,
    )
  }
}
