/**
 * The captcha providers of `SECURITY_CAPTCHA_PROVIDER` and their siteverify endpoints.
 *
 * @module
 */

/** The captcha providers of `SECURITY_CAPTCHA_PROVIDER`. */
export const CAPTCHA_PROVIDERS = ['hcaptcha', 'turnstile'] as const

/** One of {@link CAPTCHA_PROVIDERS}. */
export type CaptchaProviderName = (typeof CAPTCHA_PROVIDERS)[number]

/** Each captcha provider's siteverify endpoint (upstream `security.GetCaptchaURL`). */
export const CAPTCHA_VERIFY_URLS: Readonly<Record<CaptchaProviderName, string>> = {
  hcaptcha: 'https://hcaptcha.com/siteverify',
  turnstile: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
}
