/**
 * The outbound HTTP call of the third-party APIs the server speaks (SMS providers, captcha
 * siteverify): one form-encoded POST, bounded in time and in the size of the answer, whose JSON
 * body is returned for the caller to judge.
 *
 * @module
 */

/** Largest answer read from a third-party API, in bytes; a longer one is an error. */
export const MAX_REPLY_BYTES = 1_048_576

/** A form-encoded POST to a third-party API. */
export interface FormPost {
  /** Who is called, for error messages (`twilio`, `hcaptcha`, …). */
  readonly service: string
  readonly url: string
  /** The form fields, sent as `application/x-www-form-urlencoded` in this order. */
  readonly fields: Readonly<Record<string, string>>
  /** Extra request headers (`Authorization`). */
  readonly headers?: Readonly<Record<string, string>>
  /** Milliseconds the whole call (connect, send, answer) may take. */
  readonly timeoutMs: number
}

/** What a third-party API answered. */
export interface FormReply {
  /** The HTTP status. */
  readonly status: number
  /** The body parsed as JSON, or `undefined` when it is empty or not JSON. */
  readonly json: unknown
}

/** The `fetch` the calls go through (tests and proxies may pass their own). */
export type Fetch = typeof fetch

/**
 * Reads a response body as UTF-8 text, at most `maxBytes`.
 *
 * @throws {Error} "answer larger than … bytes" beyond it (leaving the loop cancels the rest).
 */
export async function readBounded(
  response: Response,
  maxBytes: number = MAX_REPLY_BYTES,
): Promise<string> {
  if (!response.body) return ''
  const decoder = new TextDecoder()
  let size = 0
  let text = ''
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > maxBytes) {
      throw new Error(`answer larger than ${String(maxBytes)} bytes`)
    }
    text += decoder.decode(chunk, { stream: true })
  }
  return text + decoder.decode()
}

/**
 * Posts `post.fields` form-encoded to `post.url` and reads the answer (any status).
 *
 * @returns The status and the JSON body (`undefined` when not JSON).
 * @throws {Error} With a message naming `post.service` when the call fails, takes longer than
 *   `post.timeoutMs` or answers more than {@link MAX_REPLY_BYTES}.
 */
export async function postForm(post: FormPost, fetchImpl: Fetch = fetch): Promise<FormReply> {
  const signal = AbortSignal.timeout(post.timeoutMs)
  try {
    const response = await fetchImpl(post.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        ...post.headers,
      },
      body: new URLSearchParams(post.fields).toString(),
      redirect: 'error',
      signal,
    })
    const text = await readBounded(response)
    let json: unknown
    try {
      json = text === '' ? undefined : JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: response.status, json }
  } catch (error) {
    if (signal.aborted) {
      throw new Error(
        `${post.service} did not answer within ${String(post.timeoutMs / 1000)} seconds`,
        { cause: error },
      )
    }
    const reason = error instanceof Error ? error.message : String(error)
    throw new Error(`${post.service} could not be reached: ${reason}`, { cause: error })
  }
}

/**
 * `path` on the scheme, host and port of `base` (a provider's base-URL setting replaces only
 * those parts of its default URL).
 */
export function onOrigin(base: string, path: string): string {
  return new URL(path, new URL(base).origin).toString()
}

/** A JSON value as an object whose fields may be read (anything else: an empty object). */
export function jsonObject(value: unknown): Readonly<Record<string, unknown>> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {}
}

/** A JSON value as an array (anything else: empty). */
export function jsonArray(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : []
}

/** A JSON scalar as text (`''` for anything else): ids and codes come as strings or numbers. */
export function jsonText(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' ? String(value) : ''
}
