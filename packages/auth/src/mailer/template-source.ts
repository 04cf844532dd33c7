/**
 * Where mail bodies come from: `MAILER_TEMPLATES_<KIND>` URLs, fetched with a timeout and a size
 * cap and cached, or the built-in template when a kind has no URL or its URL is unavailable.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/mailer/templatemailer/templatemailer.go
 * @module
 */
import type { Clock } from '../clock.js'
import { DEFAULT_TEMPLATES } from './default-templates.js'
import type { MailKind } from './mailer.js'
import { compileTemplate } from './template.js'

/** Options of {@link TemplateSource}. */
export interface TemplateSourceOptions {
  /** `MAILER_TEMPLATES_<KIND>` by kind; `''` for the built-in template. */
  readonly urls: Readonly<Record<MailKind, string>>
  /** `MAILER_TEMPLATES_<KIND>_<LOCALE>` by kind, then canonical language tag. @default none */
  readonly localeUrls?: Readonly<Record<MailKind, Readonly<Record<string, string>>>>
  /** Base of relative template URLs (`SITE_URL`, as upstream). */
  readonly siteUrl: string
  /** Time of the cache (epoch milliseconds). */
  readonly clock: Clock
  /** How long a fetched template is used before it is fetched again, in milliseconds. @default 600000 (10 min, upstream) */
  readonly cacheTtlMs?: number
  /**
   * Longest wait for a template's response, headers and body, in milliseconds (well within the
   * request deadline, `API_MAX_REQUEST_DURATION`). @default 5000
   */
  readonly timeoutMs?: number
  /**
   * After a failed fetch, how long the fallback is used before the URL is tried again, in
   * milliseconds, so that a template server that is down does not slow every mail. @default 60000
   */
  readonly retryAfterMs?: number
  /** Largest template accepted, in bytes; a larger one is unavailable. @default 1048576 (1 MiB, upstream) */
  readonly maxBytes?: number
  /** Told why a template URL could not be used (the built-in template is used instead). */
  readonly onFallback?: (kind: MailKind, url: string, reason: Error) => void
}

interface CacheEntry {
  readonly body: string
  readonly expiresAt: number
}

/** Why a template URL could not be used; reported through {@link TemplateSourceOptions.onFallback}. */
export class TemplateFetchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'TemplateFetchError'
  }
}

/**
 * Reads a response body as UTF-8, giving up past `maxBytes`.
 *
 * @throws {TemplateFetchError} When the body is larger than `maxBytes`.
 */
async function readCapped(response: Response, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN)
  if (declared > maxBytes) {
    await response.body?.cancel()
    throw new TemplateFetchError(`template is ${String(declared)} bytes, over ${String(maxBytes)}`)
  }
  const chunks: Uint8Array[] = []
  let size = 0
  if (!response.body) return ''
  // Leaving the loop early cancels the stream (the rest is never downloaded).
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > maxBytes) {
      throw new TemplateFetchError(`template is over ${String(maxBytes)} bytes`)
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * The body template of each kind of mail. A kind with a URL gets it fetched (`GET`, at most
 * {@link TemplateSourceOptions.maxBytes}, within {@link TemplateSourceOptions.timeoutMs}) and
 * cached for {@link TemplateSourceOptions.cacheTtlMs}; concurrent sends share one fetch. When the
 * fetch fails (network error, timeout, a status other than 2xx, oversize body, a template that
 * does not parse as a Go template) the last good copy is used if there is one, else the built-in
 * template, for
 * {@link TemplateSourceOptions.retryAfterMs}; then the URL is tried again.
 */
export class TemplateSource {
  readonly #options: TemplateSourceOptions
  /** By URL: each template URL is fetched once, whatever kinds and languages use it. */
  readonly #cache = new Map<string, CacheEntry>()
  readonly #inFlight = new Map<string, Promise<string>>()
  /** URLs whose last fetch failed: when they may be tried again (epoch ms). */
  readonly #retryAt = new Map<string, number>()

  constructor(options: TemplateSourceOptions) {
    this.#options = options
  }

  /**
   * The URL of `kind`'s template in `locale` (its `MAILER_TEMPLATES_<KIND>_<LOCALE>`, else
   * `MAILER_TEMPLATES_<KIND>`); `''` for the built-in template.
   *
   * @param kind The kind of mail.
   * @param locale A canonical language tag, or `undefined` for the default language.
   */
  url(kind: MailKind, locale?: string): string {
    const localized = locale === undefined ? undefined : this.#options.localeUrls?.[kind][locale]
    return localized ?? this.#options.urls[kind]
  }

  /**
   * The template of `kind` (in `locale` when it has one there). Never throws: any failure falls
   * back as described on the class.
   *
   * @param kind The kind of mail.
   * @param locale A canonical language tag, or `undefined` for the default language.
   */
  async get(kind: MailKind, locale?: string): Promise<string> {
    const url = this.url(kind, locale)
    if (url === '') return DEFAULT_TEMPLATES[kind]
    const now = this.#options.clock.now()
    const cached = this.#cache.get(url)
    if (cached && now < cached.expiresAt) return cached.body
    if (now < (this.#retryAt.get(url) ?? 0)) return cached?.body ?? DEFAULT_TEMPLATES[kind]
    let pending = this.#inFlight.get(url)
    if (!pending) {
      pending = this.#fetch(kind, url).finally(() => this.#inFlight.delete(url))
      this.#inFlight.set(url, pending)
    }
    return pending
  }

  async #fetch(kind: MailKind, url: string): Promise<string> {
    const { clock, cacheTtlMs = 600_000, timeoutMs = 5_000, maxBytes = 1_048_576 } = this.#options
    const { retryAfterMs = 60_000 } = this.#options
    try {
      const target = new URL(url, this.#options.siteUrl)
      const signal = AbortSignal.timeout(timeoutMs)
      const response = await fetch(target, { signal, headers: { accept: 'text/html, */*' } })
      if (!response.ok) {
        await response.body?.cancel()
        throw new TemplateFetchError(`template URL answered ${String(response.status)}`)
      }
      const body = await readCapped(response, maxBytes)
      try {
        compileTemplate(body)
      } catch (error) {
        // Refused at load time, as upstream: the last good copy or the built-in one is used.
        throw new TemplateFetchError(
          `template does not parse: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        )
      }
      this.#cache.set(url, { body, expiresAt: clock.now() + cacheTtlMs })
      this.#retryAt.delete(url)
      return body
    } catch (error) {
      const reason =
        error instanceof TemplateFetchError
          ? error
          : new TemplateFetchError(
              `template URL could not be fetched: ${error instanceof Error ? error.message : String(error)}`,
              { cause: error },
            )
      this.#options.onFallback?.(kind, url, reason)
      this.#retryAt.set(url, clock.now() + retryAfterMs)
      return this.#cache.get(url)?.body ?? DEFAULT_TEMPLATES[kind]
    }
  }
}
