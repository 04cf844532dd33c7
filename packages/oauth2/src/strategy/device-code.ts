import type { AccessToken, AccessTokenOptions } from '../access-token.js'
import { assertKnownKeys, assertRecord, invalidType, optionKeys } from '../args.js'
import type { Client } from '../client.js'
import { sleepFor } from '../clock.js'
import { libraryError, OAuth2Error, responseObject } from '../error.js'
import type { Response } from '../response.js'
import type { TokenParams, TokenResult } from '../token-endpoint.js'

/** `grant_type` of the device authorization grant (RFC 8628 §3.4). */
export const DEVICE_CODE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code'

/** Seconds between polls when the server gives no `interval` (RFC 8628 §3.2). */
const DEFAULT_INTERVAL = 5
/** Seconds added to the interval on `slow_down` (RFC 8628 §3.5). */
const SLOW_DOWN_STEP = 5
/**
 * The shortest wait between polls, seconds, whatever `interval` the server sends: RFC 8628 §3.5's
 * default (the default of {@link DevicePollOptions.minimumIntervalSeconds}).
 */
export const MINIMUM_POLL_INTERVAL_SECONDS = 5
/**
 * The longest `poll()` keeps polling, seconds: a larger `expires_in` is capped to this (RFC 8628
 * §3.2 suggests 1800 s; Google sends 1800, GitHub, Microsoft and Auth0 900, Okta 600).
 */
export const MAXIMUM_POLL_SECONDS = 1800

/** Options of {@link DeviceAuthorization.poll}. */
export interface DevicePollOptions {
  /**
   * Stops polling: the promise rejects with `signal.reason` (an `AbortError` `DOMException` by
   * default) while waiting, or once the request in flight returns.
   */
  readonly signal?: AbortSignal | undefined
  /** Extra parameters and `headers` of each token request. */
  readonly params?: TokenParams | undefined
  /** Options of the token. */
  readonly accessTokenOpts?: AccessTokenOptions | undefined
  /**
   * The shortest wait between polls, seconds: a server `interval` below it is raised to it (the
   * `slow_down` steps are added to the raised value). Lower it only to test against a local
   * server; `0` polls at the server's `interval`.
   *
   * @default 5 ({@link MINIMUM_POLL_INTERVAL_SECONDS}, RFC 8628 §3.5)
   */
  readonly minimumIntervalSeconds?: number | undefined
}

const POLL_OPTION_KEYS = optionKeys<DevicePollOptions>({
  signal: true,
  params: true,
  accessTokenOpts: true,
  minimumIntervalSeconds: true,
})

/**
 * A device authorization (RFC 8628 §3.2): what to show the user, and {@link DeviceAuthorization.poll}
 * to wait for the token. Wire fields keep their RFC names. `device_code` is not shown by
 * `util.inspect` or `JSON.stringify`.
 */
export class DeviceAuthorization<RaiseErrors extends boolean = true> {
  /** The code the user types at `verification_uri`. Show it. */
  readonly user_code: string
  /**
   * Where the user goes (on another device) to enter `user_code`. Show it. (Read from
   * `verification_url` when the server uses that draft spelling, as Google does.)
   */
  readonly verification_uri: string
  /** `verification_uri` with the code in it (for a QR code), when the server gives one. */
  readonly verification_uri_complete: string | undefined
  /** Lifetime of the codes, seconds, as the server sent it. */
  readonly expires_in: number
  /**
   * Seconds between polls as the server sent it, or 5 when it gives none (RFC 8628 §3.2). `poll()`
   * never waits less than `minimumIntervalSeconds` (5 s by default).
   */
  readonly interval: number
  /**
   * When `poll()` stops, epoch milliseconds by the client's clock: `expires_in` after the
   * authorization, capped at {@link MAXIMUM_POLL_SECONDS} (1800 s).
   */
  readonly expiresAt: number
  /** The response of the device authorization request. */
  readonly response: Response
  readonly #deviceCode: string
  readonly #client: Client<RaiseErrors>

  /** @internal */
  constructor(client: Client<RaiseErrors>, response: Response, fields: Record<string, unknown>) {
    this.#client = client
    this.response = response
    this.#deviceCode = fields.device_code as string
    this.user_code = fields.user_code as string
    this.verification_uri = fields.verification_uri as string
    this.verification_uri_complete = fields.verification_uri_complete as string | undefined
    this.expires_in = fields.expires_in as number
    this.interval = (fields.interval as number | undefined) ?? DEFAULT_INTERVAL
    this.expiresAt = client.clock.now() + Math.min(this.expires_in, MAXIMUM_POLL_SECONDS) * 1000
  }

  /** The device code (RFC 8628 §3.2), a credential of this client: keep it out of logs. */
  get device_code(): string {
    return this.#deviceCode
  }

  /**
   * Polls the token endpoint until the user approves or denies, or the codes expire (RFC 8628
   * §3.4, §3.5): waits `interval` seconds before each request, never less than
   * `minimumIntervalSeconds` (5 s by default, RFC 8628 §3.5; on the client's `clock`, so a test
   * clock with `sleep` makes it instant), keeps polling on `authorization_pending`, adds 5 seconds
   * to the interval on `slow_down`, and stops at `expiresAt` (`expires_in`, at most 1800 s) without
   * another request: however the server answers, a poll sends at most one request per 5 s for at
   * most 30 minutes. Each request carries the client authentication, and a DPoP proof when the
   * client has DPoP.
   *
   * @param options `signal` to stop, `params` and `accessTokenOpts` of the token request,
   *   `minimumIntervalSeconds`.
   * @returns The token. With the client's `raiseErrors: false`, an `access_denied` or
   *   `expired_token` answer resolves as `getToken` does (a token whose `response.error` is set).
   * @throws {OAuth2Error} `access_denied` (the user refused), `expired_token` (from the server, or
   *   set here when `expires_in` has passed), or another error of the server (with `raiseErrors`,
   *   the default, except the local `expired_token`, which is always thrown).
   * @throws {DOMException} `signal.reason` when `signal` aborts.
   * @throws {ConnectionError} When the connection fails.
   * @throws {TimeoutError} When `connectionOpts.timeout` elapses.
   * @see https://www.rfc-editor.org/rfc/rfc8628#section-3.4
   */
  async poll(options: DevicePollOptions = {}): Promise<TokenResult<RaiseErrors>> {
    assertRecord('options', options)
    assertKnownKeys('options', options, POLL_OPTION_KEYS)
    const {
      signal,
      params = {},
      accessTokenOpts,
      minimumIntervalSeconds = MINIMUM_POLL_INTERVAL_SECONDS,
    } = options
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw invalidType('options.signal', 'an AbortSignal', signal)
    }
    assertRecord('options.params', params)
    if (
      typeof minimumIntervalSeconds !== 'number' ||
      !(minimumIntervalSeconds >= 0) ||
      minimumIntervalSeconds === Infinity
    ) {
      throw invalidType(
        'options.minimumIntervalSeconds',
        'a non-negative number of seconds',
        minimumIntervalSeconds,
      )
    }
    const client = this.#client
    let interval = Math.max(this.interval, minimumIntervalSeconds)
    for (;;) {
      const remaining = this.expiresAt - client.clock.now()
      await sleepFor(client.clock, Math.max(0, Math.min(interval * 1000, remaining)), signal)
      if (client.clock.now() >= this.expiresAt) {
        throw libraryError(
          'expired_token',
          `the device code expired (expires_in ${String(this.expires_in)} s` +
            (this.expires_in > MAXIMUM_POLL_SECONDS
              ? `, polling capped at ${String(MAXIMUM_POLL_SECONDS)} s`
              : '') +
            `) before the user approved it at ${this.verification_uri}: call deviceCode.start() again`,
        )
      }
      let token: AccessToken | undefined
      let error: OAuth2Error | undefined
      let thrown = false
      try {
        ;({ token } = await client.requestToken(
          { ...params, grant_type: DEVICE_CODE_GRANT_TYPE, device_code: this.#deviceCode },
          accessTokenOpts,
        ))
        error = token?.response?.error
      } catch (caught) {
        if (!(caught instanceof OAuth2Error)) throw caught
        ;[error, thrown] = [caught, true]
      }
      signal?.throwIfAborted()
      if (error?.code === 'authorization_pending') continue
      if (error?.code === 'slow_down') {
        interval += SLOW_DOWN_STEP
        continue
      }
      // With raiseErrors: false the server's answer is returned as getToken returns it; what
      // the library throws whatever raiseErrors (unhandled_status, ...) is thrown here too.
      if (error !== undefined && (thrown || client.options.raiseErrors)) throw error
      return token as TokenResult<RaiseErrors>
    }
  }

  /** The authorization without the device code, for `JSON.stringify`. */
  toJSON(): Record<string, unknown> {
    return {
      device_code: this.#client.config.filteredLabel,
      user_code: this.user_code,
      verification_uri: this.verification_uri,
      verification_uri_complete: this.verification_uri_complete,
      expires_in: this.expires_in,
      interval: this.interval,
      expiresAt: this.expiresAt,
    }
  }

  /** `util.inspect` output without the device code. */
  [Symbol.for('nodejs.util.inspect.custom')](): unknown {
    return Object.assign(
      Object.create({ constructor: DeviceAuthorization }) as object,
      this.toJSON(),
    )
  }
}

/** What is wrong with a device authorization response's fields, if anything. */
function invalidField(fields: Record<string, unknown>): string | undefined {
  // Google answers with the draft's spelling, verification_url.
  if (fields.verification_uri === undefined && typeof fields.verification_url === 'string') {
    fields.verification_uri = fields.verification_url
  }
  for (const key of ['device_code', 'user_code', 'verification_uri']) {
    const value = fields[key]
    if (typeof value !== 'string' || value === '') return `has no ${key} string`
  }
  const complete = fields.verification_uri_complete
  if (complete !== undefined && typeof complete !== 'string') {
    return 'has a verification_uri_complete that is not a string'
  }
  const expiresIn = fields.expires_in
  if (typeof expiresIn !== 'number' || !(expiresIn > 0) || !Number.isFinite(expiresIn)) {
    return 'has no positive expires_in number'
  }
  const interval = fields.interval
  if (
    interval !== undefined &&
    (typeof interval !== 'number' || !(interval > 0) || !Number.isFinite(interval))
  ) {
    return 'has an interval that is not a positive number'
  }
  return undefined
}

/**
 * The Device Authorization Grant (RFC 8628): sign-in on devices without a browser or keyboard
 * (TVs, command lines); reach it as `client.deviceCode`. {@link DeviceCode.start} asks for the
 * codes, the user approves on another device, {@link DeviceAuthorization.poll} gets the token.
 *
 * A public client (no secret) uses `authScheme: 'request_body'`, which sends only `client_id`.
 *
 * @example
 * ```ts
 * import type { Client } from '@gatehouse/oauth2'
 * let client!: Client
 * const device = await client.deviceCode.start({ scope: 'openid offline_access' })
 * console.log(`Open ${device.verification_uri} and enter ${device.user_code}`)
 * const token = await device.poll({ signal: AbortSignal.timeout(10 * 60_000) })
 * ```
 *
 * @see https://www.rfc-editor.org/rfc/rfc8628
 */
export class DeviceCode<RaiseErrors extends boolean = true> {
  readonly #client: Client<RaiseErrors>

  /** @param client The client. */
  constructor(client: Client<RaiseErrors>) {
    this.#client = client
  }

  /**
   * Asks the device authorization endpoint for a device code and a user code (RFC 8628 §3.1),
   * with client authentication and `client_id`.
   *
   * @param params `scope`, `headers`, extra parameters.
   * @returns The authorization: `user_code`, `verification_uri`, `verification_uri_complete`,
   *   `expires_in`, `interval`, and `poll()`.
   * @throws {OAuth2Error} The server's error (always, whatever `raiseErrors`: there is nothing to
   *   poll); `invalid_device_authorization_response` when a required field is missing or mistyped;
   *   `invalid_metadata` when the client has no `deviceAuthorizationUrl` (use `Client.discover()`
   *   or set it).
   * @throws {ConnectionError} When the connection fails.
   * @throws {TimeoutError} When `connectionOpts.timeout` elapses.
   * @see https://www.rfc-editor.org/rfc/rfc8628#section-3.1
   */
  async start(params: TokenParams = {}): Promise<DeviceAuthorization<RaiseErrors>> {
    assertRecord('params', params)
    const client = this.#client
    const response = await client.authorizeDevice({ client_id: client.id, ...params })
    const fields = responseObject(
      response,
      'invalid_device_authorization_response',
      'device authorization response',
      'RFC 8628 §3.2',
      invalidField,
    )
    return new DeviceAuthorization(client, response, fields)
  }
}
