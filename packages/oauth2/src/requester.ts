import {
  assertKnownKeys,
  assertRecord,
  invalidType,
  invalidValue,
  isRecord,
  optionKeys,
  show,
} from './args.js'
import type {
  Connection,
  HttpMethod,
  HttpRequest,
  HttpResponse,
  RequestEncoding,
  Transport,
} from './connection.js'
import { OAuth2Error } from './error.js'
import { Response, type ParseOption } from './response.js'
import type { SnakyHash } from './snaky-hash.js'
import { encodeParams, resolveLocation, resolveUrl, withQuery } from './url.js'

/** HTTP verbs of {@link Client.request}, lowercase (uppercase is accepted too). */
export type HttpVerb = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head' | 'options'

/** Options of {@link Client.request}. */
export interface RequestOptions {
  /** Query parameters, added to the URL's own (sorted, `%20` for spaces). */
  readonly params?: Readonly<Record<string, unknown>> | undefined
  /** Body: a string or bytes as is, an object encoded as form (default) or JSON. */
  readonly body?: string | Uint8Array | Readonly<Record<string, unknown>> | undefined
  /** Request headers (case-insensitive names). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Overrides the client's `raiseErrors` for this request. */
  readonly raiseErrors?: boolean | undefined
  /** How to parse the body (see {@link Response}). */
  readonly parse?: ParseOption | undefined
  /** snake_case parsed objects. @default true */
  readonly snaky?: boolean | undefined
  /** Class of parsed objects. @default SnakyHash */
  readonly snakyHashClass?: typeof SnakyHash | undefined
}

/** The keys of {@link RequestOptions}. @internal */
export const REQUEST_OPTION_KEYS = optionKeys<RequestOptions>({
  params: true,
  body: true,
  headers: true,
  raiseErrors: true,
  parse: true,
  snaky: true,
  snakyHashClass: true,
})

const VERBS: Readonly<Record<string, HttpMethod>> = {
  get: 'GET',
  post: 'POST',
  put: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  head: 'HEAD',
  options: 'OPTIONS',
}
const REDIRECTS = new Set([301, 302, 303, 307])

/**
 * An endpoint whose requests carry credentials (never redirected), and the option that sets its
 * URL, for the error message.
 *
 * @internal
 */
export interface Endpoint {
  readonly name: string
  readonly option: string
  /**
   * Why the redirect is refused and what to do, for the error message. Default: the request
   * carries credentials; set `option` to the endpoint's final URL.
   */
  readonly refusal?: string
}

/** ` (Location: <origin><path>)`, without query or fragment (they may carry secrets). */
function describeLocation(location: string | undefined, current: string): string {
  const url = location === undefined ? undefined : resolveLocation(location, new URL(current))
  return url === undefined ? '' : ` (Location: ${url.origin}${url.pathname})`
}

/**
 * Credentials computed for each request sent (a DPoP proof is bound to method and URL), and a
 * resend when the server asks for one (a DPoP nonce). Only requests to the origin of the first
 * request get them.
 *
 * @internal
 */
export interface RequestSigner {
  /** Headers for a request to `url`, computed right before it is sent. */
  headers(method: HttpMethod, url: string): Record<string, string> | Promise<Record<string, string>>
  /**
   * Reads a response (keeping its `DPoP-Nonce`); `true` when the server asks for the request again
   * with its nonce.
   */
  retry(request: HttpRequest, response: HttpResponse): boolean
  /** The error for a server that asks for a nonce again after the retry with the one it sent. */
  refused(response: Response): OAuth2Error
}

/** Throws `error`; with `raiseErrors` off, sets it as `response.error` and returns the response. */
function raiseOrSet(response: Response, error: OAuth2Error, raiseErrors: boolean): Response {
  if (raiseErrors) throw error
  response.error = error
  return response
}

/**
 * Copies `headers` into `into` with lowercase names.
 *
 * @throws {TypeError} `ERR_INVALID_ARG_TYPE` naming `name` (or `name.<header>`) for a value that
 *   is not an object of strings.
 * @internal
 */
export function lowerHeaders(name: string, headers: unknown, into: Record<string, string>): void {
  if (headers === undefined) return
  if (!isRecord(headers)) throw invalidType(name, 'an object', headers)
  for (const key of Object.keys(headers)) {
    const value = headers[key]
    if (typeof value !== 'string') throw invalidType(`${name}.${key}`, 'a string', value)
    into[key.toLowerCase()] = value
  }
}

/** What a {@link Requester} reads from its client on every request. @internal */
export interface RequestHost {
  /** The base URL of relative paths (it may change). */
  readonly site: string | undefined
  readonly options: { readonly raiseErrors: boolean; readonly maxRedirects: number }
}

/**
 * Sends the client's requests through its {@link Connection}: URL resolution, headers and body
 * encoding, the redirect rules, and the status rules (a {@link Response}, or an
 * {@link OAuth2Error} raised or set as `response.error`).
 *
 * @internal
 */
export class Requester {
  readonly #host: RequestHost
  readonly #send: Transport
  readonly #encoding: RequestEncoding
  readonly #defaultHeaders: Readonly<Record<string, string>>

  /**
   * @param host The client: its site and its `raiseErrors` and `maxRedirects` options.
   * @param connection The transport and the encoding of object bodies.
   * @param defaultHeaders `connectionOpts.headers`, lowercase names.
   */
  constructor(
    host: RequestHost,
    connection: Connection,
    defaultHeaders: Readonly<Record<string, string>>,
  ) {
    this.#host = host
    this.#send = connection.send
    this.#encoding = connection.encoding
    this.#defaultHeaders = defaultHeaders
  }

  /**
   * Sends a request and wraps the response (the gem's `Client#request`); for an `endpoint`
   * (token, revocation, introspection) no redirect is followed: the request carries client
   * credentials, grants or tokens.
   *
   * - URLs: relative to `site` (no leading `/`: under its path; leading `/`: from the host root),
   *   or absolute (used as given, no allow-list: never pass untrusted URLs to a token-bearing
   *   request).
   * - Redirects: 301, 302, 303 and 307 are followed up to `maxRedirects` (then the 3xx is
   *   returned); 303 becomes a GET without body. 308 is returned as is. Unlike the gem, a hop to
   *   another origin carries no header that was configured or given (`Authorization`,
   *   `Proxy-Authorization`, `Cookie`, `connectionOpts.headers`, `opts.headers`), and these
   *   redirects are not followed (`redirect_not_followed`): to another origin with a body (307, or
   *   301/302 of a request with a body), from `https:` to `http:`, or to a scheme other than
   *   `http:`/`https:`.
   * - Status: 200-399 resolve; 400-599 throw {@link OAuth2Error} (or set `response.error` with
   *   `raiseErrors: false`, also for redirects not followed); anything else throws
   *   `unhandled_status`.
   *
   * @param verb HTTP verb.
   * @param url Path or absolute URL.
   * @param opts Query, body, headers, parsing and error options.
   * @param endpoint The client-authenticated endpoint the request goes to, if any.
   * @param signer Credentials computed for each request to the first request's origin (DPoP), and
   *   one resend when the server asks for it (a DPoP nonce).
   * @returns The response.
   * @throws {OAuth2Error} As described above; `missing_location` for a redirect without a valid
   *   Location.
   * @throws {ConnectionError} When the connection fails.
   * @throws {TimeoutError} When `connectionOpts.timeout` elapses.
   */
  async send(
    verb: HttpVerb | Uppercase<HttpVerb>,
    url: string | URL,
    opts: RequestOptions,
    endpoint: Endpoint | undefined,
    signer?: RequestSigner,
  ): Promise<Response> {
    let method = typeof verb === 'string' ? VERBS[verb.toLowerCase()] : undefined
    if (method === undefined) {
      throw invalidValue(
        'verb',
        `must be one of ${Object.keys(VERBS).join(', ')} (got ${show(verb)})`,
      )
    }
    if (typeof url !== 'string' && !(url instanceof URL))
      throw invalidType('url', 'a string or URL', url)
    assertRecord('opts', opts)
    assertKnownKeys('opts', opts, REQUEST_OPTION_KEYS)
    let target = withQuery(
      url instanceof URL ? new URL(url) : resolveUrl(this.#host.site, url),
      opts.params,
    )
    let headers: Record<string, string> = { ...this.#defaultHeaders }
    lowerHeaders('opts.headers', opts.headers, headers)
    let body = this.#encodeBody(opts.body, headers)
    const raiseErrors = opts.raiseErrors ?? this.#host.options.raiseErrors
    const responseOptions = {
      parse: opts.parse,
      snaky: opts.snaky,
      snakyHashClass: opts.snakyHashClass,
    }
    let resent = false
    for (let redirects = 0; ; redirects++) {
      if (signer !== undefined) {
        const signed = signer.headers(method, target)
        Object.assign(headers, signed instanceof Promise ? await signed : signed)
      }
      const request: HttpRequest = { method, url: target, headers, body }
      const raw = await this.#send(request)
      const response = new Response(raw, responseOptions)
      if (signer?.retry(request, raw) === true) {
        if (!resent) {
          resent = true
          redirects--
          continue
        }
        return raiseOrSet(response, signer.refused(response), raiseErrors)
      }
      const status = raw.status
      if (status >= 200 && status < 300) return response
      if (status >= 300 && status < 400) {
        const refuse = (description: string): Response =>
          raiseOrSet(
            response,
            new OAuth2Error(response, { code: 'redirect_not_followed', description }),
            raiseErrors,
          )
        if (endpoint !== undefined) {
          return refuse(
            `the ${endpoint.name} answered ${String(status)}${describeLocation(raw.headers.location, target)}; ` +
              (endpoint.refusal ??
                `requests that carry client credentials, grants or tokens are never redirected: ` +
                  `set ${endpoint.option} to the endpoint's final URL`),
          )
        }
        if (!REDIRECTS.has(status) || redirects >= this.#host.options.maxRedirects) return response
        const location = raw.headers.location
        if (location === undefined || location === '') {
          throw new OAuth2Error(response, {
            code: 'missing_location',
            message: `Got ${String(status)} status code, but no Location header was present`,
          })
        }
        const current = new URL(target)
        const next = resolveLocation(location, current)
        if (next === undefined) {
          throw new OAuth2Error(response, {
            code: 'missing_location',
            message: `Got ${String(status)} status code, but the Location header is not a valid URL`,
          })
        }
        if (next.protocol !== 'http:' && next.protocol !== 'https:') {
          return refuse(`${String(status)} to a ${next.protocol} URL: only http(s) is followed`)
        }
        if (current.protocol === 'https:' && next.protocol === 'http:') {
          return refuse(
            `${String(status)} from ${current.origin} to ${next.origin} would leave https: ` +
              `never followed`,
          )
        }
        if (status === 303) {
          method = 'GET'
          body = undefined
          headers = { ...headers }
          delete headers['content-type']
          delete headers['content-length']
        }
        if (next.origin !== current.origin) {
          if (body !== undefined) {
            return refuse(
              `${String(status)} to ${next.origin} would send the request body to another ` +
                `origin: not followed (send the request there yourself if you trust it)`,
            )
          }
          // Nothing configured or given travels to another origin: credentials, cookies,
          // connectionOpts.headers, opts.headers, DPoP. Middleware runs again for the new request.
          headers = {}
          signer = undefined
        }
        target = next.href
        continue
      }
      if (status >= 400 && status < 600) {
        return raiseOrSet(response, new OAuth2Error(response), raiseErrors)
      }
      throw new OAuth2Error(response, {
        code: 'unhandled_status',
        message: `Unhandled status code value of ${String(status)}`,
      })
    }
  }

  #encodeBody(
    body: RequestOptions['body'],
    headers: Record<string, string>,
  ): string | Uint8Array | undefined {
    if (body === undefined || typeof body === 'string' || body instanceof Uint8Array) return body
    if (!isRecord(body)) throw invalidType('opts.body', 'a string, bytes or an object', body)
    const type = headers['content-type']
    if (type === undefined ? this.#encoding === 'json' : /[/+]json\b/i.test(type)) {
      headers['content-type'] ??= 'application/json'
      return JSON.stringify(body)
    }
    headers['content-type'] ??= 'application/x-www-form-urlencoded'
    return encodeParams(body, 'body')
  }
}
