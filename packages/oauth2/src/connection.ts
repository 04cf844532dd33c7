import type { Dispatcher } from 'undici'
import { invalidType, invalidValue } from './args.js'
import { debugEnabled, type Configuration } from './config.js'
import { debugLogging, type Logger } from './debug.js'
import { ConnectionError, libraryError, OAuth2Error, TimeoutError } from './error.js'

/** HTTP request methods the client sends. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD' | 'OPTIONS'

/** A request as it goes to the transport. Header names are lowercase. */
export interface HttpRequest {
  method: HttpMethod
  /** Absolute URL, query included. */
  url: string
  headers: Record<string, string>
  body: string | Uint8Array | undefined
}

/** A response as it comes from the transport. Header names are lowercase. */
export interface HttpResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/**
 * Sends one request and resolves with the response, without following redirects.
 *
 * @throws {ConnectionError} When the connection fails.
 * @throws {TimeoutError} When `connectionOpts.timeout` elapses.
 */
export type Transport = (request: HttpRequest) => Promise<HttpResponse>

/**
 * Wraps the rest of the chain: may change the request, call `next`, change the response, or
 * answer by itself.
 */
export type Middleware = (request: HttpRequest, next: Transport) => Promise<HttpResponse>

/**
 * The subset of the WHATWG `fetch` the client uses (Node's, undici's, a runtime's or a fake). When
 * the response has a `body` stream, it is read chunk by chunk and its size counted against
 * `connectionOpts.maxResponseBytes`; otherwise `text()` is read whole and checked after.
 */
export type FetchLike = (
  input: string,
  init: {
    method: string
    headers: Record<string, string>
    body?: string | Uint8Array | undefined
    redirect: 'manual'
    signal?: AbortSignal | undefined
  },
) => Promise<{
  status: number
  headers: { forEach(fn: (value: string, key: string) => void): void }
  text(): Promise<string>
  body?: {
    getReader(): {
      read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>
      cancel(reason?: unknown): Promise<void>
    }
  } | null
}>

/** The default of `connectionOpts.maxResponseBytes`: 1 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024

/** TLS material for mutual TLS (`tls_client_auth`) and private CAs; PEM strings or buffers. */
export interface TlsOptions {
  /** Client certificate chain (PEM). */
  readonly cert?: string | Uint8Array | undefined
  /** Client private key (PEM). */
  readonly key?: string | Uint8Array | undefined
  /** Trusted CA certificates (PEM), replacing the default ones. */
  readonly ca?: string | Uint8Array | readonly (string | Uint8Array)[] | undefined
}

/** Options of the HTTP connection (the gem's `connection_opts`). */
export interface ConnectionOptions {
  /**
   * Milliseconds to wait for the response headers, and then between body chunks; also the connect
   * timeout when a dedicated agent is used. With `fetch`, the limit for the whole exchange.
   *
   * @default undefined (undici's defaults: 300 s; fetch: none)
   */
  readonly timeout?: number | undefined
  /** Headers sent with every request. */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Proxy URL, e.g. `http://proxy.local:3128` (undici transport only). */
  readonly proxy?: string | undefined
  /** TLS options (undici transport only; with `fetch`, configure the fetch instead). */
  readonly tls?: TlsOptions | undefined
  /**
   * Largest response body read, in bytes (token, revocation, introspection, discovery, JWKS,
   * UserInfo and resource responses alike). A response that declares a larger `Content-Length`
   * is refused before its body is read; one that sends more is cut off as soon as the count
   * passes the limit (the connection is closed), so an oversized or endless body never holds
   * more than this much memory. Either way the request fails with {@link OAuth2Error} code
   * `response_too_large`, whatever `raiseErrors` says (there is no response to return). A
   * positive integer, or `Infinity` for no limit.
   *
   * @default 1048576 ({@link DEFAULT_MAX_RESPONSE_BYTES}, 1 MiB)
   */
  readonly maxResponseBytes?: number | undefined
}

/** Body encoding for object bodies: form (`application/x-www-form-urlencoded`) or JSON. */
export type RequestEncoding = 'form' | 'json'

/**
 * The connection builder handed to the `Client` constructor's callback (the gem's Faraday
 * builder block): choose the request encoding of object bodies, add middleware, or set the
 * adapter (a `fetch` function or a {@link Transport}).
 *
 * @example
 * ```ts
 * import { Client } from '@gatehouse/oauth2'
 * const client = new Client('id', 'secret', { site: 'https://auth.example' }, (connection) => {
 *   connection.request('json').use(async (request, next) => {
 *     request.headers['x-request-id'] = crypto.randomUUID()
 *     return next(request)
 *   })
 * })
 * ```
 */
export class ConnectionBuilder {
  /** @internal */
  encoding: RequestEncoding = 'form'
  /** @internal */
  readonly middleware: Middleware[] = []
  /** @internal */
  fetch: FetchLike | undefined

  /** Sets how object bodies are encoded. @default 'form' */
  request(encoding: RequestEncoding): this {
    const value: unknown = encoding
    if (value !== 'form' && value !== 'json') {
      throw invalidValue('encoding', "must be 'form' or 'json'")
    }
    this.encoding = encoding
    return this
  }

  /** Appends a middleware; the first added sees the request first. */
  use(middleware: Middleware): this {
    if (typeof middleware !== 'function') {
      throw invalidType('middleware', 'a function', middleware)
    }
    this.middleware.push(middleware)
    return this
  }

  /** Sends requests with `fetch` (any WHATWG-compatible implementation). */
  adapter(fetch: FetchLike): this {
    if (typeof fetch !== 'function') {
      throw invalidType('fetch', 'a function', fetch)
    }
    this.fetch = fetch
    return this
  }
}

function isTimeout(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  const code = (error as { code?: unknown }).code
  return (
    error.name === 'TimeoutError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'ETIMEDOUT'
  )
}

/**
 * Maps a transport failure to {@link ConnectionError} or {@link TimeoutError} (an
 * {@link OAuth2Error} of the transport's own, such as `response_too_large`, passes as it is).
 *
 * @internal
 */
export function transportError(error: unknown): Error {
  if (
    error instanceof ConnectionError ||
    error instanceof TimeoutError ||
    error instanceof OAuth2Error
  ) {
    return error
  }
  // fetch wraps the socket error: report the cause's message when there is one.
  const inner = error instanceof TypeError && error.cause instanceof Error ? error.cause : error
  const message = inner instanceof Error ? inner.message : String(inner)
  if (isTimeout(error) || isTimeout(inner)) return new TimeoutError(message, { cause: error })
  return new ConnectionError(message, { cause: error })
}

/** The `response_too_large` error of a body over `max` bytes. */
function tooLarge(max: number): OAuth2Error {
  return libraryError(
    'response_too_large',
    `the response body is larger than ${String(max)} bytes (connectionOpts.maxResponseBytes)`,
  )
}

/** Refuses a response whose `Content-Length` is over `max` before any of its body is read. */
function checkDeclaredLength(length: string | undefined, max: number): void {
  if (length !== undefined && /^\d+$/.test(length.trim()) && Number(length) > max) {
    throw tooLarge(max)
  }
}

/** Reads chunks until the end, failing (and calling `stop`) once more than `max` bytes came. */
async function readCapped(
  chunks: AsyncIterable<Uint8Array> | (() => Promise<Uint8Array | undefined>),
  max: number,
  stop: () => void,
): Promise<string> {
  const parts: Uint8Array[] = []
  let size = 0
  const add = (chunk: Uint8Array): void => {
    size += chunk.byteLength
    if (size > max) {
      stop()
      throw tooLarge(max)
    }
    parts.push(chunk)
  }
  if (typeof chunks === 'function') {
    for (let chunk = await chunks(); chunk !== undefined; chunk = await chunks()) add(chunk)
  } else {
    for await (const chunk of chunks) add(chunk)
  }
  // As fetch's and undici's text(): UTF-8, a leading BOM dropped, bad bytes replaced.
  return new TextDecoder().decode(Buffer.concat(parts, size))
}

/** A transport over a WHATWG `fetch`. @internal */
export function fetchTransport(
  fetch: FetchLike,
  timeout: number | undefined,
  maxResponseBytes: number = DEFAULT_MAX_RESPONSE_BYTES,
): Transport {
  return async (request) => {
    let response
    let body: string
    try {
      response = await fetch(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        redirect: 'manual',
        signal: timeout === undefined ? undefined : AbortSignal.timeout(timeout),
      })
      let length: string | undefined
      response.headers.forEach((value, key) => {
        if (key.toLowerCase() === 'content-length') length = value
      })
      const stream = response.body
      if (stream) {
        const reader = stream.getReader()
        try {
          checkDeclaredLength(length, maxResponseBytes)
        } catch (error) {
          void reader.cancel().catch(() => undefined)
          throw error
        }
        body = await readCapped(
          async () => {
            const { done, value } = await reader.read()
            return done ? undefined : (value ?? new Uint8Array(0))
          },
          maxResponseBytes,
          () => void reader.cancel().catch(() => undefined),
        )
      } else {
        checkDeclaredLength(length, maxResponseBytes)
        body = await response.text()
        if (Buffer.byteLength(body) > maxResponseBytes) throw tooLarge(maxResponseBytes)
      }
    } catch (error) {
      throw transportError(error)
    }
    const headers: Record<string, string> = {}
    response.headers.forEach((value, key) => {
      headers[key.toLowerCase()] = value
    })
    return { status: response.status, headers, body }
  }
}

/**
 * A transport over undici's `request` (the default on Node: much cheaper per request than
 * `fetch`). undici is imported on first use, so runtimes that inject `fetch` never load it.
 *
 * @internal
 */
export function undiciTransport(options: ConnectionOptions): {
  transport: Transport
  close: () => Promise<void>
} {
  let ready: Promise<Transport> | undefined
  let send: Transport | undefined
  let dispatcher: Dispatcher | undefined
  const load = async (): Promise<Transport> => {
    const undici = await import('undici')
    const { timeout, tls, proxy } = options
    const max = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
    const connect =
      tls === undefined && timeout === undefined
        ? undefined
        : { ...(tls as Record<string, unknown> | undefined), timeout }
    if (proxy !== undefined) {
      dispatcher = new undici.ProxyAgent({
        uri: proxy,
        requestTls: connect,
        proxyTls: connect,
      })
    } else if (tls !== undefined) {
      dispatcher = new undici.Agent({ connect })
    }
    send = async (request) => {
      try {
        // undici's own header/body timeouts tick at about one second; a signal is exact.
        const response = await undici.request(request.url, {
          dispatcher,
          headersTimeout: timeout,
          bodyTimeout: timeout,
          method: request.method,
          headers: request.headers,
          body: request.body,
          signal: timeout === undefined ? undefined : AbortSignal.timeout(timeout),
        })
        // Destroying an unfinished body emits undici's "Request aborted" on it: expected here.
        response.body.on('error', () => undefined)
        const declared = response.headers['content-length']
        if (typeof declared === 'string') {
          try {
            checkDeclaredLength(declared, max)
          } catch (error) {
            response.body.destroy()
            throw error
          }
        }
        // Leaving the loop early (over the limit) destroys the body, closing the connection.
        const body = await readCapped(response.body, max, () => undefined)
        const headers: Record<string, string> = {}
        for (const key of Object.keys(response.headers)) {
          const value = response.headers[key]
          if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(', ') : value
        }
        return { status: response.statusCode, headers, body }
      } catch (error) {
        throw transportError(error)
      }
    }
    return send
  }
  return {
    transport: (request) => {
      if (send !== undefined) return send(request)
      ready ??= load()
      return ready.then((s) => s(request))
    },
    close: async () => {
      await dispatcher?.close()
    },
  }
}

/** Composes middleware around a transport (first middleware outermost). @internal */
export function compose(middleware: readonly Middleware[], transport: Transport): Transport {
  return middleware.reduceRight<Transport>((next, mw) => (request) => mw(request, next), transport)
}

/** A client's connection, opened once by the `Client` constructor. @internal */
export interface Connection {
  /** The transport inside the middleware (the builder's, then debug logging). */
  readonly send: Transport
  /** Releases the connection pool the client created (undici with `tls` or `proxy`). */
  readonly close: () => Promise<void>
  /** How object bodies are encoded. */
  readonly encoding: RequestEncoding
}

/**
 * Opens a client's connection (the gem's Faraday connection): runs `buildConnection` on a
 * {@link ConnectionBuilder}; the transport is the builder's adapter, else `options.fetch`, else
 * undici; the builder's middleware wraps it, with debug logging innermost when `OAUTH_DEBUG` is on.
 *
 * @internal
 */
export function openConnection(
  options: {
    readonly connectionOpts: ConnectionOptions
    readonly fetch: FetchLike | undefined
    readonly logger: Logger
    readonly config: Configuration
    /** Names of `connectionOpts.headers`: their values are filtered from debug output. */
    readonly configuredHeaders: readonly string[]
  },
  buildConnection: ((connection: ConnectionBuilder) => void) | undefined,
): Connection {
  const builder = new ConnectionBuilder()
  buildConnection?.(builder)
  const max = options.connectionOpts.maxResponseBytes
  let transport: Transport
  let close = async (): Promise<void> => {}
  if (builder.fetch !== undefined) {
    transport = fetchTransport(builder.fetch, undefined, max)
  } else {
    if (options.fetch !== undefined) {
      transport = fetchTransport(options.fetch, options.connectionOpts.timeout, max)
    } else {
      const undici = undiciTransport(options.connectionOpts)
      transport = undici.transport
      close = undici.close
    }
  }
  const middleware = [...builder.middleware]
  if (debugEnabled()) {
    middleware.push(debugLogging(options.logger, options.config, options.configuredHeaders))
  }
  return { send: compose(middleware, transport), close, encoding: builder.encoding }
}
