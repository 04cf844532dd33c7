import { assertKnownKeys, invalidType, invalidValue, optionKeys } from './args.js'
import {
  parserByKey,
  parserByMime,
  registerParser,
  type Parser,
  type ParserEntry,
} from './config.js'
import type { OAuth2Error } from './error.js'
import { isPlainObject, SnakyHash } from './snaky-hash.js'

/** Response headers: lowercase names; repeated headers joined with `, `. */
export type ResponseHeaders = Readonly<Record<string, string>>

/**
 * How to parse a body: a {@link Parser} function, the key of a registered parser (`'json'`,
 * `'query'`, `'text'` or one added with {@link Response.registerParser}), or `'automatic'`/`false`
 * to choose by Content-Type (the default).
 */
export type ParseOption = Parser | 'automatic' | false | (string & {})

/** Options of a {@link Response}. */
export interface ResponseOptions {
  /** How to parse the body. @default 'automatic' */
  readonly parse?: ParseOption | undefined
  /**
   * Convert parsed objects to {@link SnakyHash} (snake_case keys). `false` keeps the server's
   * keys in plain objects.
   *
   * @default true
   */
  readonly snaky?: boolean | undefined
  /** The class of parsed objects when `snaky` is on. @default SnakyHash */
  readonly snakyHashClass?: typeof SnakyHash | undefined
}

const RESPONSE_OPTION_KEYS = optionKeys<ResponseOptions>({
  parse: true,
  snaky: true,
  snakyHashClass: true,
})

/** What a {@link Response} is made of. */
export interface ResponseInit {
  /** HTTP status code. */
  readonly status: number
  /** Response headers, lowercase names. */
  readonly headers: ResponseHeaders
  /** The body as a string (`''` when empty). */
  readonly body: string
}

/**
 * An HTTP response from the authorization or resource server (the gem's `OAuth2::Response`):
 * status, headers, the body string and a lazily parsed body.
 *
 * {@link Response.parsed} rules (by Content-Type unless `parse` says otherwise):
 * - `application/json`, `text/javascript`, `application/hal+json`, `application/vnd.collection+json`,
 *   `application/vnd.api+json`, `application/problem+json` and any other `+json` type: JSON. An
 *   object becomes a {@link SnakyHash} (or the `snakyHashClass`), with snake_case keys recursively;
 *   an array stays an array; an empty body gives `''`.
 * - `application/x-www-form-urlencoded`: the form as a SnakyHash (repeated keys give arrays).
 * - `text/plain` and any other type: the body string (the spec's rule).
 * - With `snaky: false` objects are plain, with the server's keys.
 */
export class Response {
  /** HTTP status code. */
  readonly status: number
  /** Response headers, lowercase names. */
  readonly headers: ResponseHeaders
  /** The body as a string (`''` when empty). */
  readonly body: string
  /**
   * The error for a status of 400 or more when the request was made with `raiseErrors: false`;
   * otherwise `undefined`.
   */
  error: OAuth2Error | undefined
  readonly #options: ResponseOptions
  #parsed: { value: unknown } | undefined

  /**
   * @param init Status, headers and body.
   * @param options How to parse the body.
   */
  constructor(init: ResponseInit, options: ResponseOptions = {}) {
    this.status = init.status
    this.headers = init.headers
    this.body = init.body
    assertKnownKeys('options', options, RESPONSE_OPTION_KEYS)
    this.#options = options
    this.error = undefined
  }

  /**
   * The media type of the `Content-Type` header: before any `;`, trimmed, lowercase; `''` when
   * the header is absent.
   */
  get contentType(): string {
    const value = this.headers['content-type']
    if (value === undefined) return ''
    const semi = value.indexOf(';')
    return (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase()
  }

  /**
   * The parsed body (computed once). See the class description for the rules.
   *
   * @throws {SyntaxError} When a JSON body is not valid JSON (as the gem lets `JSON::ParserError`
   *   through).
   */
  get parsed(): unknown {
    if (this.#parsed === undefined) this.#parsed = { value: this.#parse() }
    return this.#parsed.value
  }

  #parse(): unknown {
    const { parse, snaky = true, snakyHashClass = SnakyHash } = this.#options
    let raw: unknown
    if (typeof parse === 'function') {
      raw = parse(this.body, this)
    } else {
      // An unknown key falls back to the Content-Type lookup, as in the gem.
      const entry =
        (typeof parse === 'string' ? entryByKey(parse) : undefined) ?? parserFor(this.contentType)
      raw = entry === undefined ? this.body : entry.parser(this.body, this)
    }
    if (snaky && isPlainObject(raw) && !(raw instanceof SnakyHash)) return new snakyHashClass(raw)
    return raw
  }

  /**
   * Registers a body parser for `mimeTypes`, also reachable as `parse: key` (the gem's
   * `OAuth2::Response.register_parser`). Registering applies to every client in the process.
   *
   * @param key Name for the `parse` option, e.g. `'xml'`.
   * @param mimeTypes Lowercase media types, e.g. `['application/xml', 'text/xml']`.
   * @param parser Receives the body string and the response.
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE` on wrong argument types.
   *
   * @example
   * ```ts
   * import { Response } from '@gatehouse/oauth2'
   * Response.registerParser('csv', ['text/csv'], (body) => body.split('\n').map((l) => l.split(',')))
   * ```
   */
  static registerParser(key: string, mimeTypes: string | readonly string[], parser: Parser): void {
    if (typeof key !== 'string' || key === '') throw invalidType('key', 'a non-empty string', key)
    const list = typeof mimeTypes === 'string' ? [mimeTypes] : mimeTypes
    if (!Array.isArray(list) || !list.every((m) => typeof m === 'string')) {
      throw invalidType('mimeTypes', 'a string or an array of strings', mimeTypes)
    }
    if (typeof parser !== 'function') throw invalidType('parser', 'a function', parser)
    if (key === 'automatic') throw invalidValue('key', "must not be 'automatic'")
    registerParser({ key, mimeTypes: list, parser })
  }
}

/** Parses JSON; an empty body stays `''` (the gem's rule). */
function parseJson(body: string): unknown {
  if (body === '') return ''
  return JSON.parse(body) as unknown
}

/** Parses a form; repeated keys give arrays. @internal */
export function parseForm(body: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null) as Record<
    string,
    string | string[]
  >
  for (const [key, value] of new URLSearchParams(body)) {
    const prev = out[key]
    if (prev === undefined) out[key] = value
    else if (Array.isArray(prev)) prev.push(value)
    else out[key] = [prev, value]
  }
  return out
}

const JSON_ENTRY: ParserEntry = {
  key: 'json',
  mimeTypes: [
    'application/json',
    'text/javascript',
    'application/hal+json',
    'application/vnd.collection+json',
    'application/vnd.api+json',
    'application/problem+json',
  ],
  parser: parseJson,
}
const BUILT_IN: readonly ParserEntry[] = [
  JSON_ENTRY,
  { key: 'query', mimeTypes: ['application/x-www-form-urlencoded'], parser: parseForm },
  { key: 'text', mimeTypes: ['text/plain'], parser: (body) => body },
]

function entryByKey(key: string): ParserEntry | undefined {
  return parserByKey(key) ?? BUILT_IN.find((e) => e.key === key)
}

function parserFor(contentType: string): ParserEntry | undefined {
  const entry = parserByMime(contentType) ?? BUILT_IN.find((e) => e.mimeTypes.includes(contentType))
  if (entry !== undefined) return entry
  return contentType.endsWith('+json') ? JSON_ENTRY : undefined
}
