/**
 * Captcha protection (upstream `internal/security/captcha.go`): the token the client got from
 * hCaptcha or Turnstile is checked with the provider's siteverify API. Both providers speak the
 * same protocol, so one {@link SiteverifyCaptcha} serves both, at the URL the settings give.
 *
 * @see https://docs.hcaptcha.com/#verify-the-user-response-server-side
 * @see https://developers.cloudflare.com/turnstile/get-started/server-side-validation/
 * @module
 */
import type { CaptchaSettings } from '../conf/settings.js'
import { jsonArray, jsonObject, postForm, type Fetch } from '../form-post.js'

/** Outcome of a captcha check. */
export interface CaptchaResult {
  readonly success: boolean
  /** Provider error codes when rejected (`error-codes`). */
  readonly errorCodes: readonly string[]
}

/**
 * Verifies the captcha token of a request (`captcha_token` or
 * `gotrue_meta_security.captcha_token`). {@link NoCaptcha} accepts every request.
 */
export interface CaptchaVerifier {
  /** Whether a token is required at all (`SECURITY_CAPTCHA_ENABLED`). */
  readonly enabled: boolean
  /**
   * Verifies a token for a client IP.
   *
   * @throws {Error} When the provider cannot be reached or answers something else than a
   *   siteverify reply.
   */
  verify(token: string, remoteIp: string): Promise<CaptchaResult>
}

/** A {@link CaptchaVerifier} for `SECURITY_CAPTCHA_ENABLED=false`. */
export class NoCaptcha implements CaptchaVerifier {
  readonly enabled = false
  verify(): Promise<CaptchaResult> {
    return Promise.resolve({ success: true, errorCodes: [] })
  }
}

/**
 * Checks tokens with a siteverify endpoint (hCaptcha's or Turnstile's): a form-encoded POST of
 * `secret`, `response` and `remoteip`, answered by `{"success": bool, "error-codes": [...]}`.
 */
export class SiteverifyCaptcha implements CaptchaVerifier {
  readonly enabled = true
  readonly #settings: CaptchaSettings
  readonly #fetch: Fetch | undefined

  /**
   * @param settings `SECURITY_CAPTCHA_*` (provider, secret, timeout in milliseconds, URL).
   * @param fetchImpl @default the global `fetch`
   */
  constructor(settings: CaptchaSettings, fetchImpl?: Fetch) {
    this.#settings = settings
    this.#fetch = fetchImpl
  }

  /**
   * @returns `success` and the provider's `error-codes`.
   * @throws {Error} When the call fails or times out (`SECURITY_CAPTCHA_TIMEOUT`), or the answer
   *   is not a JSON object with a boolean `success`.
   */
  async verify(token: string, remoteIp: string): Promise<CaptchaResult> {
    const { provider, secret, timeoutMs, verifyUrl } = this.#settings
    const reply = await postForm(
      {
        service: provider,
        url: verifyUrl,
        fields: { secret, response: token, remoteip: remoteIp },
        timeoutMs,
      },
      this.#fetch,
    )
    const body = jsonObject(reply.json)
    if (typeof body.success !== 'boolean') {
      throw new Error(
        `${provider} answered HTTP ${String(reply.status)} without a siteverify reply`,
      )
    }
    return {
      success: body.success,
      errorCodes: jsonArray(body['error-codes']).filter(
        (code): code is string => typeof code === 'string',
      ),
    }
  }
}
