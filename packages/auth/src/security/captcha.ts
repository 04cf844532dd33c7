/** Outcome of a captcha check. */
export interface CaptchaResult {
  readonly success: boolean
  /** Provider error codes when rejected. */
  readonly errorCodes: readonly string[]
}

/**
 * Verifies `gotrue_meta_security.captcha_token` with hCaptcha or Turnstile (the captcha issue
 * adds them). {@link NoCaptcha} accepts every request.
 */
export interface CaptchaVerifier {
  /** Whether a token is required at all (`SECURITY_CAPTCHA_ENABLED`). */
  readonly enabled: boolean
  /**
   * Verifies a token for a client IP.
   *
   * @throws {Error} When the provider cannot be reached.
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
