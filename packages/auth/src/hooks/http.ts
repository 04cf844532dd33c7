import { setTimeout as sleep } from 'node:timers/promises'
import { Webhook } from 'standardwebhooks'
import type { Clock } from '../clock.js'
import {
  BadRequestError,
  InternalServerError,
  UnprocessableEntityError,
  type AuthError,
} from '../errors.js'
import { readBounded, type Fetch } from '../form-post.js'
import type { Random } from '../random.js'
import { readHookAnswer } from './answer.js'

/** Limits of HTTP hook calls; the defaults are upstream's (`hookshttp`). */
export interface HttpHookLimits {
  /** Longest a whole call may take, every attempt and wait included. @default 5000 */
  readonly timeoutMs: number
  /** Attempts at most (a 429/503 with `Retry-After`, or a connection failure). @default 3 */
  readonly attempts: number
  /** Wait before another attempt. @default 2000 */
  readonly backoffMs: number
  /** Largest answer read, in bytes. @default 204800 */
  readonly maxResponseBytes: number
}

/** Upstream's limits of HTTP hook calls. */
export const HTTP_HOOK_LIMITS: HttpHookLimits = Object.freeze({
  timeoutMs: 5000,
  attempts: 3,
  backoffMs: 2000,
  maxResponseBytes: 200 * 1024,
})

/** What an HTTP hook call needs besides its target. */
export interface HttpHookDeps {
  readonly fetch: Fetch
  readonly clock: Clock
  readonly random: Random
  readonly limits: HttpHookLimits
}

/**
 * Signs a payload per Standard Webhooks with every secret (a rotation signs with old and new):
 * the `webhook-signature` header's value, `v1,<base64>` entries separated by `, `.
 */
export function signHookPayload(
  secrets: readonly string[],
  id: string,
  at: Date,
  payload: string,
): string {
  return secrets.map((secret) => new Webhook(secret).sign(id, at, payload)).join(', ')
}

/**
 * POSTs a hook payload to an HTTP(S) endpoint, signed per Standard Webhooks, and reads its
 * answer as upstream's `hookshttp` does: 204 is no output; 200/202 must be `application/json`
 * of at most `maxResponseBytes`; a 429 or 503 with `Retry-After` and a failed connection are
 * tried again (at most `attempts` times, `backoffMs` apart); redirects are not followed.
 *
 * @param payload The JSON text sent (and signed).
 * @returns The output (`undefined` for 204).
 * @throws {@link UnprocessableEntityError} 422 `hook_timeout` past `timeoutMs`,
 *   `hook_timeout_after_retry` when every attempt failed to connect,
 *   `hook_payload_over_size_limit` for a larger answer; {@link BadRequestError} 400
 *   `hook_payload_invalid_content_type`; {@link InternalServerError} 500 `unexpected_failure`
 *   for other statuses; `HookAnswerError` for an error object.
 */
export async function callHttpHook(
  url: string,
  secrets: readonly string[],
  payload: string,
  deps: HttpHookDeps,
): Promise<unknown> {
  const { limits } = deps
  const signal = AbortSignal.timeout(limits.timeoutMs)
  const timeout = (): AuthError =>
    new UnprocessableEntityError(
      'hook_timeout',
      `Failed to reach hook within maximum time of ${(limits.timeoutMs / 1000).toFixed(6)} seconds`,
    )
  const unavailable = (): AuthError =>
    new InternalServerError('unexpected_failure', 'Service currently unavailable due to hook')
  for (let attempt = 0; attempt < limits.attempts; attempt++) {
    if (attempt > 0) {
      try {
        await sleep(limits.backoffMs, undefined, { signal })
      } catch {
        throw timeout()
      }
    }
    const id = deps.random.uuid()
    const at = new Date(deps.clock.now())
    let response: Response
    try {
      response = await deps.fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signHookPayload(secrets, id, at, payload),
        },
        body: payload,
        redirect: 'manual',
        signal,
      })
    } catch (error) {
      if (signal.aborted) throw timeout()
      if (attempt < limits.attempts - 1) continue
      throw new UnprocessableEntityError(
        'hook_timeout_after_retry',
        'Failed to reach hook after maximum retries',
        { cause: error },
      )
    }
    const status = response.status
    if (status !== 200 && status !== 202) await response.body?.cancel().catch(() => undefined)
    switch (status) {
      case 204:
        return undefined
      case 200:
      case 202:
        return readHookAnswer(
          await readJsonBody(response, limits.maxResponseBytes, signal, timeout),
        )
      case 429:
      case 503:
        if (response.headers.get('retry-after')) continue
        throw unavailable()
      case 400:
        throw new InternalServerError('unexpected_failure', 'Invalid payload sent to hook')
      case 401:
        throw new InternalServerError('unexpected_failure', 'Hook requires authorization token')
      default:
        throw new InternalServerError(
          'unexpected_failure',
          `Unexpected status code returned from hook: ${String(status)}`,
        )
    }
  }
  throw unavailable()
}

/** The body of a 200/202 answer, checked to be JSON by its `Content-Type` and bounded. */
async function readJsonBody(
  response: Response,
  maxBytes: number,
  signal: AbortSignal,
  timeout: () => AuthError,
): Promise<string> {
  const contentType = response.headers.get('content-type')
  const refuse = (message: string): AuthError => {
    void response.body?.cancel().catch(() => undefined)
    return new BadRequestError('hook_payload_invalid_content_type', message)
  }
  if (contentType === null || contentType === '') {
    throw refuse('Invalid Content-Type: Missing Content-Type header')
  }
  const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase()
  if (mediaType !== 'application/json') {
    throw refuse(`Invalid JSON response. Received content-type: ${contentType}`)
  }
  try {
    return await readBounded(response, maxBytes)
  } catch (error) {
    if (signal.aborted) throw timeout()
    if (response.bodyUsed && isOverLimit(error)) {
      throw new UnprocessableEntityError(
        'hook_payload_over_size_limit',
        `Payload size exceeded size limit of ${String(maxBytes)} bytes`,
        { cause: error },
      )
    }
    throw new InternalServerError('unexpected_failure', 'Error reading the hook answer', {
      cause: error,
    })
  }
}

/** Whether {@link readBounded} stopped at its limit (rather than at a broken connection). */
function isOverLimit(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('answer larger than')
}
