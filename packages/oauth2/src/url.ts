import { invalidType, invalidValue } from './args.js'

/** A value of a query or form parameter; `undefined` and `null` leave the parameter out. */
export type ParamValue =
  | string
  | number
  | boolean
  | bigint
  | readonly (string | number | boolean | bigint)[]
  | null
  | undefined

/** Query or form parameters, RFC names as keys (`redirect_uri`, `scope`, ...). */
export type Params = Readonly<Record<string, ParamValue>>

/**
 * Percent-encodes like Ruby's `CGI.escape` with `%20` for spaces (Faraday's default): everything
 * but `A-Z a-z 0-9 - . _ ~ *` is escaped.
 *
 * @internal
 */
export function encodeComponent(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
}

/**
 * Encodes per `application/x-www-form-urlencoded` (RFC 6749 Appendix B): like
 * {@link encodeComponent}, also escaping `*`, with `+` for spaces. Used for HTTP Basic
 * credentials (RFC 6749 §2.3.1).
 *
 * @internal
 */
export function formUrlEncode(value: string): string {
  return encodeComponent(value).replaceAll('*', '%2A').replaceAll('%20', '+')
}

function scalar(name: string, value: unknown): string {
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return String(value)
  }
  throw invalidType(name, 'a string, number, boolean or an array of them', value)
}

/**
 * Flattens parameters into `[key, value]` pairs (arrays repeat the key), dropping `null` and
 * `undefined`.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE` naming the parameter when a value is an object.
 * @internal
 */
export function paramPairs(
  params: Readonly<Record<string, unknown>>,
  prefix = 'params',
): [string, string][] {
  const pairs: [string, string][] = []
  for (const key of Object.keys(params)) {
    const value = params[key]
    if (value === undefined || value === null) continue
    if (Array.isArray(value)) {
      for (const item of value as unknown[]) pairs.push([key, scalar(`${prefix}.${key}`, item)])
    } else {
      pairs.push([key, scalar(`${prefix}.${key}`, value)])
    }
  }
  return pairs
}

/** Orders `[key, value]` pairs by key, by UTF-16 code units (Faraday's sort). @internal */
export function byKey(a: readonly [string, string], b: readonly [string, string]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0
}

/**
 * Encodes pairs as a query string or form body, sorted by key (Faraday's default encoder), spaces
 * as `%20`.
 *
 * @internal
 */
export function encodePairs(pairs: [string, string][]): string {
  pairs.sort(byKey)
  let out = ''
  for (const [key, value] of pairs) {
    if (out !== '') out += '&'
    out += `${encodeComponent(key)}=${encodeComponent(value)}`
  }
  return out
}

/** Encodes parameters as a sorted query string or form body. @internal */
export function encodeParams(params: Readonly<Record<string, unknown>>, prefix?: string): string {
  return encodePairs(paramPairs(params, prefix))
}

const ABSOLUTE = /^[a-z][a-z\d+.-]*:/i
/** Characters the WHATWG URL parser strips or treats as `/` (tested first to keep the common case cheap). */
// eslint-disable-next-line no-control-regex -- the C0 controls the WHATWG parser strips
const PARSER_IGNORED = /[\u0000-\u0020\\]/
/** Two leading slashes after WHATWG's normalisation (`\` counts as `/` in special URLs). */
const PROTOCOL_RELATIVE = /^[/\\]{2}/

/**
 * What the WHATWG URL parser actually reads of a reference: leading and trailing C0 controls and
 * spaces stripped, every tab and newline removed. So `' //host'` and `'/\t/host'` are seen as
 * `//host` by the checks below, as the parser will see them.
 *
 * @internal
 */
export function whatwgTrim(ref: string): string {
  if (!PARSER_IGNORED.test(ref)) return ref
  // eslint-disable-next-line no-control-regex -- the C0 controls the WHATWG parser strips
  return ref.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '').replace(/[\t\n\r]/g, '')
}

/**
 * Resolves `path` against `base` with the gem's (Faraday's) rules: an absolute URL is used as
 * given; a path with a leading `/` starts at the host root; any other path goes under the path of
 * `base` (a `/` is added to it first). A protocol-relative `//host/path` stays on the origin of
 * `base`, also when spelled so that the WHATWG parser reads it as one (`/\host`, `/\t/host`,
 * `\\host`, leading spaces).
 *
 * @param name The option or argument `path` came from, for the error message.
 * @throws {TypeError} `ERR_INVALID_ARG_VALUE` for an absolute `path` or a `base` that is not a URL;
 *   `ERR_INVALID_ARG_TYPE` for a relative `path` without `base`.
 * @internal
 */
export function resolveUrl(base: string | undefined, path: string, name = 'url'): URL {
  const ref = whatwgTrim(path)
  if (ABSOLUTE.test(ref)) {
    try {
      return new URL(ref)
    } catch {
      // Neither shown nor kept as the cause (Node's error holds it): its query may carry a secret.
      throw invalidValue(name, 'is not a valid absolute URL')
    }
  }
  if (base === undefined || base === '') {
    throw invalidType('site', 'set (a base URL) to use the relative URL', path)
  }
  let root: URL
  try {
    root = new URL(base)
  } catch (error) {
    throw invalidValue('site', `must be an absolute URL (got '${base}')`, error)
  }
  if (PROTOCOL_RELATIVE.test(ref)) return new URL(`${root.origin}/${ref}`)
  if (ref.startsWith('/') || ref.startsWith('\\')) return new URL(ref, root)
  if (!root.pathname.endsWith('/')) root.pathname += '/'
  return new URL(ref, root)
}

/**
 * Resolves a redirect's `Location` against the current URL; a protocol-relative `//host/path`
 * (in any spelling the WHATWG parser reads as one) stays on the current origin, as in the gem.
 *
 * @returns The URL, or `undefined` when `location` is not a valid URL reference.
 * @internal
 */
export function resolveLocation(location: string, current: URL): URL | undefined {
  const ref = whatwgTrim(location)
  try {
    return PROTOCOL_RELATIVE.test(ref) ? new URL(`${current.origin}/${ref}`) : new URL(ref, current)
  } catch {
    return undefined
  }
}

/**
 * Adds `params` to the query of `url`: the URL's own parameters are kept unless `params` has the
 * same key; the result is sorted by key.
 *
 * @internal
 */
export function withQuery(url: URL, params: Readonly<Record<string, unknown>> | undefined): string {
  if (params === undefined) return url.href
  const extra = paramPairs(params)
  if (extra.length === 0) return url.href
  const overridden = new Set(extra.map(([k]) => k))
  const pairs: [string, string][] = []
  for (const [k, v] of url.searchParams) if (!overridden.has(k)) pairs.push([k, v])
  url.search = encodePairs([...pairs, ...extra])
  return url.href
}
