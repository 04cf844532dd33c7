import type { Configuration } from './config.js'
import type { HttpRequest, HttpResponse, Middleware } from './connection.js'
import { byKey, encodeComponent } from './url.js'

/**
 * Where debug output and warnings go: any value with callable `debug` and `warn` (an object, a
 * class instance, or a function with those methods). `console` and pino loggers fit. The methods
 * are called on the logger (`logger.debug(line)`), so class methods keep their `this`.
 *
 * The library writes nothing unless `OAUTH_DEBUG=true` (debug output) or a warning is enabled with
 * {@link configure} (`silenceExtraTokensWarning` / `silenceNoTokensWarning`).
 */
export interface Logger {
  /** Receives one debug line (request or response, secrets filtered). */
  debug(message: string): void
  /** Receives a warning about a token response. */
  warn(message: string): void
}

/**
 * Headers whose values never appear in debug output, whatever the configuration: credentials
 * (`Authorization`, `Proxy-Authorization`, a `DPoP` proof) and cookies.
 */
const ALWAYS_FILTERED_HEADERS = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'dpop',
]
/** Response headers that carry a URL (its userinfo, query and fragment are filtered). */
const URL_HEADERS = new Set(['location', 'content-location'])
/** A body that looks like a form (`k=v&k2=v2`), for types that are neither form nor JSON. */
const FORM_LIKE = /^[\w.~%+-]+=[^&\s]*(?:&[\w.~%+-]+=[^&\s]*)*$/
/** The userinfo of an absolute URL: `scheme://` then everything up to `@` before the host ends. */
const USERINFO = /^([a-z][a-z\d+.-]*:\/\/)[^/?#]*@/i

/**
 * Replaces secrets in debug output (the gem's sanitizer, extended): values of filtered keys in
 * headers, query strings, fragments, forms and JSON; the userinfo of URLs; the always-filtered
 * headers (`Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie`, `DPoP`) and the headers
 * configured on the connection. Bodies of other types are filtered as JSON or form when they parse
 * as one.
 *
 * @internal
 */
export class DebugFilter {
  readonly #keys: ReadonlySet<string>
  readonly #label: string

  /**
   * @param config `filteredDebugKeys` (keys of headers, parameters and JSON) and `filteredLabel`.
   * @param configuredHeaders Names of the headers configured on the connection
   *   (`connectionOpts.headers`): their values are filtered too.
   */
  constructor(config: Configuration, configuredHeaders: readonly string[] = []) {
    this.#keys = new Set(
      [...config.filteredDebugKeys, ...ALWAYS_FILTERED_HEADERS, ...configuredHeaders].map((k) =>
        k.toLowerCase(),
      ),
    )
    this.#label = config.filteredLabel
  }

  #filtered(key: string): boolean {
    return this.#keys.has(key.toLowerCase())
  }

  headers(headers: Readonly<Record<string, string>>): Record<string, string> {
    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries(headers)) {
      if (this.#filtered(k)) out[k] = this.#label
      else if (URL_HEADERS.has(k.toLowerCase())) out[k] = this.url(v)
      else out[k] = v
    }
    return out
  }

  /** A URL (absolute or relative) with its userinfo, and filtered query and fragment keys, replaced. */
  url(url: string): string {
    let rest = url.replace(USERINFO, `$1${this.#label}@`)
    let fragment = ''
    const hash = rest.indexOf('#')
    if (hash !== -1) {
      fragment = `#${this.form(rest.slice(hash + 1))}`
      rest = rest.slice(0, hash)
    }
    const query = rest.indexOf('?')
    if (query === -1) return rest + fragment
    return `${rest.slice(0, query)}?${this.form(rest.slice(query + 1))}${fragment}`
  }

  /** A form or query string, sorted, with filtered values replaced by the (unencoded) label. */
  form(body: string): string {
    const pairs: [string, string][] = []
    for (const [k, v] of new URLSearchParams(body)) pairs.push([k, v])
    pairs.sort(byKey)
    return pairs
      .map(
        ([k, v]) => `${encodeComponent(k)}=${this.#filtered(k) ? this.#label : encodeComponent(v)}`,
      )
      .join('&')
  }

  json(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.json(v))
    if (typeof value !== 'object' || value === null) return value
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value))
      out[k] = this.#filtered(k) ? this.#label : this.json(v)
    return out
  }

  body(body: string | Uint8Array | undefined, contentType: string | undefined): string {
    if (body === undefined || body === '') return ''
    const text = typeof body === 'string' ? body : new TextDecoder().decode(body)
    const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? ''
    if (type === 'application/x-www-form-urlencoded') return this.form(text)
    const json = type === 'application/json' || type.endsWith('+json')
    // Providers send tokens as text/plain or text/html too: filter whatever parses.
    const start = text.trimStart()[0]
    if (json || start === '{' || start === '[') {
      try {
        return JSON.stringify(this.json(JSON.parse(text)))
      } catch {
        if (json) return text
      }
    }
    if (FORM_LIKE.test(text.trim())) return this.form(text.trim())
    return text
  }
}

/**
 * A middleware that logs each request and response (with bodies) through `logger.debug`, secrets
 * replaced by the filtered label (the gem's Faraday logger with the sanitizer).
 *
 * @internal
 */
export function debugLogging(
  logger: Logger,
  config: Configuration,
  configuredHeaders: readonly string[] = [],
): Middleware {
  const filter = new DebugFilter(config, configuredHeaders)
  const logRequest = (request: HttpRequest): void => {
    logger.debug(`request: ${request.method} ${filter.url(request.url)}`)
    logger.debug(`request: ${JSON.stringify(filter.headers(request.headers))}`)
    const body = filter.body(request.body, request.headers['content-type'])
    if (body !== '') logger.debug(`request: ${body}`)
  }
  const logResponse = (response: HttpResponse): void => {
    logger.debug(`response: Status ${String(response.status)}`)
    logger.debug(`response: ${JSON.stringify(filter.headers(response.headers))}`)
    const body = filter.body(response.body, response.headers['content-type'])
    if (body !== '') logger.debug(`response: ${body}`)
  }
  return async (request, next) => {
    logRequest(request)
    const response = await next(request)
    logResponse(response)
    return response
  }
}
