import type { Configuration } from './config.js'
import type { HttpRequest, HttpResponse, Middleware } from './connection.js'
import { encodePairs } from './url.js'

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

/** Replaces values of filtered keys in headers, query strings, forms and JSON. @internal */
export class DebugFilter {
  readonly #keys: ReadonlySet<string>
  readonly #label: string

  constructor(config: Configuration) {
    this.#keys = new Set([...config.filteredDebugKeys, 'authorization'].map((k) => k.toLowerCase()))
    this.#label = config.filteredLabel
  }

  #filtered(key: string): boolean {
    return this.#keys.has(key.toLowerCase())
  }

  headers(headers: Readonly<Record<string, string>>): Record<string, string> {
    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries(headers)) out[k] = this.#filtered(k) ? this.#label : v
    return out
  }

  url(url: string): string {
    const parsed = new URL(url)
    if (parsed.search === '') return url
    parsed.search = this.form(parsed.search.slice(1))
    return parsed.href
  }

  form(body: string): string {
    const pairs: [string, string][] = []
    for (const [k, v] of new URLSearchParams(body))
      pairs.push([k, this.#filtered(k) ? this.#label : v])
    return encodePairs(pairs)
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
    if (type === 'application/json' || type.endsWith('+json')) {
      try {
        return JSON.stringify(this.json(JSON.parse(text)))
      } catch {
        return text
      }
    }
    return text
  }
}

/**
 * A middleware that logs each request and response (with bodies) through `logger.debug`, secrets
 * replaced by the filtered label (the gem's Faraday logger with the sanitizer).
 *
 * @internal
 */
export function debugLogging(logger: Logger, config: Configuration): Middleware {
  const filter = new DebugFilter(config)
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
