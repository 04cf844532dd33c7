import {
  assertKnownKeys,
  assertOptionalBoolean,
  invalidType,
  invalidValue,
  isRecord,
  show,
} from './args.js'
import type { Client } from './client.js'
import { invalidTokenResponse, libraryError } from './error.js'
import type { IdTokenClaims, VerifyIdTokenOptions } from './oidc/id-token.js'
import type { NonceExpectation } from './oidc/sent-nonces.js'
import {
  REQUEST_OPTION_KEYS,
  type HttpVerb,
  type RequestOptions,
  type RequestSigner,
} from './requester.js'
import { parseForm, type Response } from './response.js'
import { snakeCase } from './snaky-hash.js'
import { sleepFor } from './clock.js'
import { checkTokenStoreOptions, type TokenStoreOptions } from './token-store.js'
import { challengeError } from './www-authenticate.js'

/** Where a token goes on a resource request. */
export type TokenMode = 'header' | 'query' | 'body'

/**
 * How a token is sent: one {@link TokenMode} for every verb, a function of the verb, or a map
 * from verb to mode (verbs not in the map use `'header'`).
 */
export type ModeOption =
  TokenMode | ((verb: HttpVerb) => TokenMode) | Readonly<Partial<Record<HttpVerb, TokenMode>>>

/**
 * Options and fields of an {@link AccessToken}. Wire fields keep their RFC names (`refresh_token`,
 * `expires_in`, `expires_at`); library options are camelCase; every other key is an extra field of
 * the token response and ends up in {@link AccessToken.params}.
 */
export interface AccessTokenOptions {
  /** The refresh token. */
  readonly refresh_token?: string | null | undefined
  /** Lifetime in seconds from now (number or numeric string); `0` means it never expires. */
  readonly expires_in?: number | string | null | undefined
  /** Expiry as epoch seconds, or an ISO-8601 timestamp; wins over `expires_in`. */
  readonly expires_at?: number | string | null | undefined
  /** Legacy name of `expires_in` (some providers send `expires`). */
  readonly expires?: number | string | null | undefined
  /** Seconds subtracted from the expiry, so the token counts as expired that much earlier. */
  readonly expiresLatency?: number | undefined
  /** The field of a token response that holds the token, when it is not `access_token`. */
  readonly tokenName?: string | undefined
  /** How the token is sent. @default 'header' */
  readonly mode?: ModeOption | undefined
  /** The `Authorization` value; `%s` is replaced by the token. @default 'Bearer %s' */
  readonly headerFormat?: string | undefined
  /** The query or body parameter of the `query` and `body` modes. @default 'access_token' */
  readonly paramName?: string | undefined
  /**
   * Called after the token refreshed itself (through {@link AccessToken.fetch} or `autoRefresh`),
   * with the token, which now holds the new credentials: persist `token.toHash()` here. The
   * requests that waited for the refresh go on once it has resolved; when it throws, they reject
   * with its error (the token keeps the new credentials all the same). Kept by `refresh()`; not
   * part of `toHash()`.
   */
  readonly onRefresh?: ((token: AccessToken) => void | Promise<void>) | undefined
  /**
   * The resource the token is for (RFC 8707 resource indicator): the token's requests then go
   * only there (a relative path resolves against it; an absolute URL must be on its origin, under
   * its path, else `TypeError`), and its refreshes ask for it again (`resource` in the
   * `refresh_token` grant, RFC 8707 §2.2). `''` is the resource itself and `tools/list` goes
   * under it. Set by `Client.forResource`; kept by `toHash()`.
   */
  readonly resource?: string | undefined
  /**
   * Share this token's refreshes with other processes through a {@link TokenStore} (see
   * {@link TokenStoreOptions}): when it must refresh, the process holding the store's lease for
   * `key` refreshes and stores the result; the others wait for the store (bounded by
   * `waitTimeoutMs`) and take the stored token, so a rotating refresh token is used once. Kept by
   * `refresh()`; not part of `toHash()`.
   */
  readonly store?: TokenStoreOptions | undefined
  readonly [field: string]: unknown
}

/** What {@link AccessToken.toHash} returns and {@link AccessToken.fromHash} reads back. */
export interface AccessTokenHash {
  readonly access_token: string
  readonly refresh_token?: string | undefined
  /** Epoch seconds, `expiresLatency` already subtracted. */
  readonly expires_at?: number | undefined
  readonly mode: ModeOption
  readonly headerFormat: string
  readonly paramName: string
  readonly tokenName?: string | undefined
  /** The resource the token is bound to, if any (see {@link AccessTokenOptions.resource}). */
  readonly resource?: string | undefined
  readonly [field: string]: unknown
}

/** Request options of the {@link AccessToken} request methods. */
export type TokenRequestOptions = Omit<RequestOptions, 'raiseErrors'> & {
  readonly raiseErrors?: boolean
  /**
   * Refresh the token in place when it has expired (`expiresLatency` counted) before sending, and
   * once on a `401` whose `WWW-Authenticate` says `error="invalid_token"` (Bearer or DPoP scheme),
   * then send again; one refresh at a time per token, however many requests wait for it. Needs a
   * refresh token (without one the request goes as it is). See {@link AccessToken.fetch}.
   *
   * @default false (true for `fetch`)
   */
  readonly autoRefresh?: boolean | undefined
}

/** The `init` of {@link AccessToken.fetch}: the request options plus the verb. */
export type TokenFetchInit = TokenRequestOptions & {
  /** HTTP verb, any case. @default 'get' */
  readonly method?: HttpVerb | Uppercase<HttpVerb> | undefined
}

/** Token-like fields, in the order {@link AccessToken.fromHash} picks from them. */
const TOKEN_KEYS = ['access_token', 'id_token', 'token', 'accessToken', 'idToken'] as const
const MODES: readonly TokenMode[] = ['header', 'query', 'body']
const VERBS: readonly HttpVerb[] = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options']
const TOKEN_REQUEST_OPTION_KEYS = [...REQUEST_OPTION_KEYS, 'autoRefresh']
const FETCH_INIT_KEYS = [...TOKEN_REQUEST_OPTION_KEYS, 'method']
const OPTION_KEYS = new Set([
  'refresh_token',
  'expires_in',
  'expires_at',
  'expires',
  'expiresLatency',
  'tokenName',
  'mode',
  'headerFormat',
  'paramName',
  'onRefresh',
  'resource',
  'store',
])

/** Ruby's `to_i`: leading integer of a string, else 0. */
function toInt(value: unknown): number {
  if (typeof value === 'number') return Math.trunc(value)
  if (typeof value === 'string') {
    const n = Number.parseInt(value.trim(), 10)
    return Number.isNaN(n) ? 0 : n
  }
  return 0
}

/** Epoch seconds from epoch seconds or an ISO-8601 timestamp (the gem's `convert_expires_at`). */
function toEpochSeconds(value: unknown): number {
  if (typeof value === 'string' && !/^\s*-?\d+(\.\d+)?\s*$/.test(value)) {
    const ms = Date.parse(value)
    if (!Number.isNaN(ms)) return Math.floor(ms / 1000)
  }
  return toInt(value)
}

function checkMode(mode: unknown): ModeOption {
  if (typeof mode === 'function') return mode as (verb: HttpVerb) => TokenMode
  if (typeof mode === 'string') {
    if (!(MODES as readonly string[]).includes(mode)) {
      throw invalidValue(
        'opts.mode',
        `must be 'header', 'query', 'body', a function or a map (got '${mode}')`,
      )
    }
    return mode as TokenMode
  }
  if (isRecord(mode)) {
    assertKnownKeys('opts.mode', mode, VERBS)
    for (const [verb, m] of Object.entries(mode)) {
      if (!(MODES as readonly unknown[]).includes(m)) {
        throw invalidValue(`opts.mode.${verb}`, `must be 'header', 'query' or 'body'`)
      }
    }
    return mode
  }
  throw invalidType('opts.mode', "'header', 'query', 'body', a function or a map", mode)
}

/**
 * An access token bound to a {@link Client} (the gem's `OAuth2::AccessToken`): sends itself on
 * resource requests, tracks its expiry, refreshes and revokes itself.
 *
 * The token and refresh token are never shown by `util.inspect` or `JSON.stringify`; use
 * {@link AccessToken.toHash} to persist a token.
 *
 * @example
 * ```ts
 * import { AccessToken, type Client } from '@gatehouse/oauth2'
 * let client!: Client
 * const stored = { access_token: 'abc', refresh_token: 'def', expires_at: 1_900_000_000 }
 * let token = AccessToken.fromHash(client, stored)
 * if (token.expired()) token = await token.refresh()
 * const me = await token.get('/api/me')
 * ```
 */
export class AccessToken {
  /** The client the token was issued to (used for requests, refresh and revocation). */
  readonly client: Client<boolean>
  /** Seconds subtracted from the expiry. */
  readonly expiresLatency: number | undefined
  /** How the token is sent on requests. */
  readonly mode: ModeOption
  /** `Authorization` header template (`%s` = token). */
  readonly headerFormat: string
  /** Parameter name of the `query` and `body` modes. */
  readonly paramName: string
  /** The response field the token was read from, when given. */
  readonly tokenName: string | undefined
  /** The resource the token's requests are bound to (see {@link AccessTokenOptions.resource}). */
  readonly resource: string | undefined
  /**
   * The token response this token was built from (set by `Client#getToken`; replaced when the
   * token refreshes itself).
   */
  response: Response | undefined
  #token: string
  #refreshToken: string | undefined
  #params: Record<string, unknown>
  #expiresIn: number | undefined
  #expiresAt: number | undefined
  readonly #onRefresh: ((token: AccessToken) => void | Promise<void>) | undefined
  /** The DPoP signer of `token` (it holds the proof's `ath`), made on the first DPoP request. */
  #dpopSigner: { token: string; signer: RequestSigner } | undefined
  /** Counts the refreshes in place, so a request knows whether its 401 is already dealt with. */
  #generation = 0
  #refreshing: Promise<void> | undefined
  /** The store its refreshes are shared through, if any. */
  readonly #store: ReturnType<typeof checkTokenStoreOptions> | undefined
  /** The nonce the ID token must carry, for a token of an authorization code exchange. */
  #nonceExpectation: NonceExpectation | undefined

  /**
   * @param client The client the token belongs to.
   * @param token The access token string (`null`/`undefined` give `''`).
   * @param opts Wire fields, options and extra fields (see {@link AccessTokenOptions}).
   * @throws {OAuth2Error} `no_token` when both token and refresh token are empty and the client's
   *   `raiseErrors` is on.
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` for bad arguments.
   */
  constructor(
    client: Client<boolean>,
    token: string | null | undefined,
    opts: AccessTokenOptions = {},
  ) {
    if (!isRecord(client) || typeof (client as { request?: unknown }).request !== 'function') {
      throw invalidType('client', 'a Client', client)
    }
    if (token !== null && token !== undefined && typeof token !== 'string') {
      throw invalidType('token', 'a string', token)
    }
    if (!isRecord(opts)) throw invalidType('opts', 'an object', opts)
    this.client = client
    this.#token = token ?? ''
    const refresh = opts.refresh_token
    if (refresh !== undefined && refresh !== null && typeof refresh !== 'string') {
      throw invalidType('opts.refresh_token', 'a string', refresh)
    }
    this.#refreshToken = refresh ?? undefined
    const expiresIn = opts.expires_in ?? opts.expires
    this.#expiresIn = expiresIn === undefined || expiresIn === null ? undefined : toInt(expiresIn)
    const latency = opts.expiresLatency
    if (latency !== undefined && (typeof latency !== 'number' || !Number.isFinite(latency))) {
      throw invalidType('opts.expiresLatency', 'a number of seconds', latency)
    }
    this.expiresLatency = latency === undefined ? undefined : Math.trunc(latency)
    let expiresAt =
      opts.expires_at === undefined || opts.expires_at === null
        ? undefined
        : toEpochSeconds(opts.expires_at)
    if (expiresAt === undefined && this.#expiresIn !== undefined && this.#expiresIn !== 0) {
      expiresAt = this.#now() + this.#expiresIn
    }
    if (expiresAt !== undefined && this.expiresLatency !== undefined)
      expiresAt -= this.expiresLatency
    this.#expiresAt = expiresAt
    this.mode = checkMode(opts.mode ?? 'header')
    this.headerFormat = optionalString('opts.headerFormat', opts.headerFormat) ?? 'Bearer %s'
    this.paramName = optionalString('opts.paramName', opts.paramName) ?? 'access_token'
    this.tokenName = optionalString('opts.tokenName', opts.tokenName)
    this.resource = optionalString('opts.resource', opts.resource)
    if (this.resource !== undefined && !URL.canParse(this.resource)) {
      throw invalidValue('opts.resource', 'must be an absolute URL (RFC 8707 §2)')
    }
    const onRefresh = opts.onRefresh
    if (onRefresh !== undefined && typeof onRefresh !== 'function') {
      throw invalidType('opts.onRefresh', 'a function (token) => void | Promise<void>', onRefresh)
    }
    this.#onRefresh = onRefresh
    this.#store = opts.store === undefined ? undefined : checkTokenStoreOptions(opts.store)
    this.response = undefined
    const params: Record<string, unknown> = {}
    for (const key of Object.keys(opts)) if (!OPTION_KEYS.has(key)) params[key] = opts[key]
    this.#params = params
    if (this.dpopBound && typeof this.mode === 'string' && this.mode !== 'header') {
      throw invalidValue(
        'opts.mode',
        `is '${this.mode}', but the token is DPoP-bound (token_type DPoP): it is sent in the ` +
          'Authorization header only (RFC 9449 §7.1)',
      )
    }
    if (this.#token === '' && (this.#refreshToken ?? '') === '') {
      if (client.options.raiseErrors) {
        throw libraryError(
          'no_token',
          `AccessToken has no token; fields are: ${Object.keys(opts).join(', ') || 'none'}`,
        )
      }
      if (!client.config.silenceNoTokensWarning) {
        client.logger.warn('AccessToken has no token and no refresh token')
      }
    }
  }

  /** The access token string. */
  get token(): string {
    return this.#token
  }

  /** The refresh token, if any. */
  get refreshToken(): string | undefined {
    return this.#refreshToken
  }

  /** Extra fields of the token response (`scope`, `token_type`, `id_token`, ...). */
  get params(): Record<string, unknown> {
    return this.#params
  }

  /** Lifetime in seconds as given by the server, if any. */
  get expiresIn(): number | undefined {
    return this.#expiresIn
  }

  /** Expiry as epoch seconds (`expiresLatency` already subtracted), if the token expires. */
  get expiresAt(): number | undefined {
    return this.#expiresAt
  }

  /**
   * Whether the token is DPoP-bound (`token_type` `DPoP`, RFC 9449 §5): it is then always sent as
   * `Authorization: DPoP <token>` with a DPoP proof from its client's key, never as a bearer
   * token, and only in the header.
   */
  get dpopBound(): boolean {
    const type = this.#params.token_type
    return typeof type === 'string' && type.toLowerCase() === 'dpop'
  }

  #now(): number {
    return Math.floor(this.client.clock.now() / 1000)
  }

  /**
   * Builds a token from a hash such as a token response or {@link AccessToken.toHash}'s output
   * (the gem's `from_hash`). The token is read from `tokenName` when given, else from the first of
   * `access_token`, `id_token`, `token`, `accessToken`, `idToken`; only that field is removed, the
   * others stay in {@link AccessToken.params}.
   *
   * @param client The client the token belongs to.
   * @param hash Fields and options (see {@link AccessTokenOptions}).
   * @throws {OAuth2Error} `no_token`, as the constructor.
   */
  static fromHash<T extends typeof AccessToken>(
    this: T,
    client: Client<boolean>,
    hash: Readonly<Record<string, unknown>>,
  ): InstanceType<T> {
    if (!isRecord(hash)) throw invalidType('hash', 'an object', hash)
    const fresh: Record<string, unknown> = { ...hash }
    const tokenName = fresh.tokenName
    let key: string | undefined
    if (typeof tokenName === 'string') {
      key = [tokenName, snakeCase(tokenName)].find((k) => Object.hasOwn(fresh, k))
      if (key === undefined && isRecord(client) && !client.config.silenceNoTokensWarning) {
        client.logger.warn(`AccessToken.fromHash: tokenName ${tokenName} was not found`)
      }
    } else {
      const present = TOKEN_KEYS.filter((k) => Object.hasOwn(fresh, k) && fresh[k] != null)
      key = present[0]
      if (present.length > 1 && isRecord(client) && !client.config.silenceExtraTokensWarning) {
        client.logger.warn(
          `AccessToken.fromHash: more than one token-like field (${present.join(', ')}); using ${String(key)}`,
        )
      }
    }
    const { [key ?? '']: token, ...rest } = key === undefined ? { '': undefined, ...fresh } : fresh
    if (token !== undefined && token !== null && typeof token !== 'string') {
      throw invalidType(`hash.${String(key)}`, 'a string', token)
    }
    return new this(client, token, key === undefined ? fresh : rest) as InstanceType<T>
  }

  /**
   * Builds a token from a form-encoded string such as the fragment of an implicit-grant callback
   * (`access_token=...&expires_in=3600`); the gem's `from_kvform`.
   *
   * @throws {OAuth2Error} `no_token`, as the constructor.
   */
  static fromKvform<T extends typeof AccessToken>(
    this: T,
    client: Client<boolean>,
    kvform: string,
  ): InstanceType<T> {
    if (typeof kvform !== 'string') throw invalidType('kvform', 'a string', kvform)
    return this.fromHash(client, parseForm(kvform.replace(/^[#?]/, '')))
  }

  /** Whether the token has an expiry. */
  expires(): boolean {
    return this.#expiresAt !== undefined
  }

  /**
   * Whether the token has expired: its expiry (minus `expiresLatency`) is now or in the past
   * (expiring exactly now counts as expired). Uses the client's clock.
   */
  expired(): boolean {
    return this.#expiresAt !== undefined && this.#expiresAt <= this.#now()
  }

  /**
   * Gets a new token with the refresh token (RFC 6749 §6). The new token keeps this token's
   * options (mode, header format, param name, token name, latency), and this refresh token when
   * the server sends none. This token is not changed.
   *
   * @param params Extra parameters (`scope`, ...) and `headers`.
   * @param accessTokenOpts Options of the new token (override the kept ones).
   * @returns The new token. With the client's `raiseErrors: false` and an error response, the
   *   token built from it (as `getToken`; `response.error` is set, this refresh token is kept).
   * @throws {OAuth2Error} `no_refresh_token` when there is no refresh token; the server's error
   *   (with `raiseErrors`); `invalid_token_response` when the response holds no token, also with
   *   `raiseErrors: false` (there is nothing to return; the gem fails with a `NoMethodError`).
   * @see https://www.rfc-editor.org/rfc/rfc6749#section-6
   */
  async refresh(
    params: Readonly<Record<string, unknown>> = {},
    accessTokenOpts: AccessTokenOptions = {},
  ): Promise<AccessToken> {
    const refreshToken = this.#refreshToken
    if (refreshToken === undefined || refreshToken === '') {
      throw libraryError('no_refresh_token', 'A refresh_token is not available')
    }
    const { response, token: next } = await this.client.requestToken(
      {
        ...(this.resource === undefined ? {} : { resource: this.resource }),
        ...params,
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
      },
      { ...this.#options(), ...accessTokenOpts },
    )
    // Only with raiseErrors: false: there is no token to return (the gem fails on nil here).
    if (next === undefined) throw invalidTokenResponse(response)
    if ((next.#refreshToken ?? '') === '') next.#refreshToken = refreshToken
    return next
  }

  #options(): AccessTokenOptions {
    return {
      mode: this.mode,
      headerFormat: this.headerFormat,
      paramName: this.paramName,
      ...(this.tokenName === undefined ? {} : { tokenName: this.tokenName }),
      ...(this.expiresLatency === undefined ? {} : { expiresLatency: this.expiresLatency }),
      ...(this.#onRefresh === undefined ? {} : { onRefresh: this.#onRefresh }),
      ...(this.resource === undefined ? {} : { resource: this.resource }),
      ...(this.#store === undefined ? {} : { store: this.#store }),
    }
  }

  /**
   * Refreshes this token in place, once for all the requests that want it: a request that saw
   * `generation` (before its 401) joins the refresh in flight, or goes on at once when a refresh
   * has completed since.
   */
  #refreshInPlace(generation: number): Promise<void> {
    if (generation !== this.#generation) return Promise.resolve()
    this.#refreshing ??= (async () => {
      try {
        if (this.#store === undefined) await this.#assume(await this.#refreshed(), true)
        else await this.#refreshShared(this.#store)
      } finally {
        this.#refreshing = undefined
      }
    })()
    return this.#refreshing
  }

  /** The next token from the server (`refresh()`), refusing an error a lenient client returns. */
  async #refreshed(): Promise<AccessToken> {
    const next = await this.refresh()
    // A client with raiseErrors: false hands back the error response's token: keep this one.
    const failed = next.response?.error
    if (failed !== undefined) throw failed
    return next
  }

  /** Takes `next`'s credentials in place; `onRefresh` when this process refreshed. */
  async #assume(next: AccessToken, refreshed: boolean): Promise<void> {
    this.#token = next.#token
    this.#refreshToken = next.#refreshToken
    this.#params = next.#params
    this.#expiresIn = next.#expiresIn
    this.#expiresAt = next.#expiresAt
    this.response = next.response
    // A refreshed ID token is not the one of the authorization request (OIDC Core §12.2).
    this.#nonceExpectation = undefined
    this.#generation++
    if (refreshed) await this.#onRefresh?.(this)
  }

  /**
   * The token a store holds, as a token of this one's options, when it is another one than this
   * (another process refreshed) and usable; else `undefined`.
   */
  #fromStored(stored: Record<string, unknown> | undefined): AccessToken | undefined {
    if (stored === undefined || typeof stored.access_token !== 'string') return undefined
    if (stored.access_token === this.#token) return undefined
    const { access_token: token, ...fields } = stored
    const next = new AccessToken(this.client, token, { ...fields, ...this.#options() })
    return next.expired() ? undefined : next
  }

  /**
   * Refreshes once across the processes sharing the store: takes the stored token when another
   * process has already refreshed; else takes the lease, reads the store again, refreshes with the
   * stored refresh token (the newest), stores the result under the lease's fence and gives the
   * lease back; while another holds the lease, reads the store every `pollIntervalMs` until the
   * new token is there, or the lease can be taken (its holder died and its TTL ran out), for at
   * most `waitTimeoutMs`.
   *
   * @throws {OAuth2Error} `token_store_timeout` when nothing came within `waitTimeoutMs`; the
   *   refresh's error.
   */
  async #refreshShared(options: ReturnType<typeof checkTokenStoreOptions>): Promise<void> {
    const { store, key, leaseTtlMs, waitTimeoutMs, pollIntervalMs } = options
    const clock = this.client.clock
    const deadline = clock.now() + waitTimeoutMs
    for (;;) {
      const stored = this.#fromStored(await store.get(key))
      if (stored !== undefined) {
        await this.#assume(stored, false)
        return
      }
      const fence = await store.acquire(key, leaseTtlMs)
      if (fence !== undefined) {
        try {
          // Another process may have stored its refresh between the read and the lease.
          const current = await store.get(key)
          const fresh = this.#fromStored(current)
          if (fresh !== undefined) {
            await this.#assume(fresh, false)
            return
          }
          // Refresh with the newest refresh token: the stored one, when the store has this token.
          if (typeof current?.refresh_token === 'string' && current.access_token === this.#token) {
            this.#refreshToken = current.refresh_token
          }
          const next = await this.#refreshed()
          await store.set(key, next.#storable(), fence)
          await this.#assume(next, true)
        } finally {
          await store.release(key, fence)
        }
        return
      }
      if (clock.now() >= deadline) {
        throw libraryError(
          'token_store_timeout',
          `no refreshed token appeared in the store under '${key}' within ${String(waitTimeoutMs)} ms ` +
            'while another process held its lease',
        )
      }
      await sleepFor(clock, pollIntervalMs)
    }
  }

  /** What the store keeps: the response fields, tokens and the expiry (latency not subtracted). */
  #storable(): Record<string, unknown> {
    const expiresAt =
      this.#expiresAt === undefined ? undefined : this.#expiresAt + (this.expiresLatency ?? 0)
    return {
      ...this.#params,
      access_token: this.#token,
      ...(this.#refreshToken === undefined ? {} : { refresh_token: this.#refreshToken }),
      ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
    }
  }

  /**
   * Writes this token to its store (the `store` option) unconditionally: after signing in, so that
   * the other processes sharing the key find it.
   *
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when the token has no `store` option.
   */
  async saveToStore(): Promise<void> {
    if (this.#store === undefined) {
      throw invalidValue('opts.store', 'is not set: the token has no store to save to')
    }
    await this.#store.store.set(this.#store.key, this.#storable())
  }

  /**
   * The token stored under `options.key` in `options.store`, bound to the store (its refreshes are
   * shared through it, see {@link AccessTokenOptions.store}).
   *
   * @param client The client the token belongs to.
   * @param options The store, the key and the lease options.
   * @param opts Other options of the token (`expiresLatency`, `onRefresh`, `resource`, ...).
   * @returns The token.
   * @throws {OAuth2Error} `no_token` when nothing is stored under the key.
   */
  static async fromStore<T extends typeof AccessToken>(
    this: T,
    client: Client<boolean>,
    options: TokenStoreOptions,
    opts: AccessTokenOptions = {},
  ): Promise<InstanceType<T>> {
    const checked = checkTokenStoreOptions(options)
    const stored = await checked.store.get(checked.key)
    if (stored === undefined || typeof stored.access_token !== 'string') {
      throw libraryError('no_token', `the store holds no token under '${checked.key}'`)
    }
    const { access_token: token, ...fields } = stored
    return new this(client, token, { ...fields, ...opts, store: options }) as InstanceType<T>
  }

  /** Whether the token can refresh itself. */
  #refreshable(): boolean {
    return (this.#refreshToken ?? '') !== ''
  }

  /**
   * Revokes the token at the client's revocation endpoint (RFC 7009). Without `token_type_hint`
   * the access token is revoked (or the refresh token when there is no access token).
   *
   * @param params `token_type_hint` (`'access_token'` or `'refresh_token'`), extra parameters,
   *   `headers`, `tokenMethod`.
   * @returns The revocation response.
   * @throws {OAuth2Error} `unrevocable_token` for a bad hint or a missing token; or the server's
   *   error.
   * @see https://www.rfc-editor.org/rfc/rfc7009#section-2.1
   */
  async revoke(params: Readonly<Record<string, unknown>> = {}): Promise<Response> {
    const { token_type_hint: hint, ...rest } = params
    let value: string | undefined
    let kind: 'access_token' | 'refresh_token' | undefined
    if (hint === 'access_token') [value, kind] = [this.#token, hint]
    else if (hint === 'refresh_token') [value, kind] = [this.#refreshToken, hint]
    else if (hint === undefined || hint === null) {
      if (this.#token !== '') [value, kind] = [this.#token, 'access_token']
      else if ((this.#refreshToken ?? '') !== '')
        [value, kind] = [this.#refreshToken, 'refresh_token']
    } else {
      throw libraryError(
        'unrevocable_token',
        "token_type_hint must be undefined, 'access_token' or 'refresh_token'",
      )
    }
    if (value === undefined || value === '') {
      throw libraryError(
        'unrevocable_token',
        `${kind ?? 'unknown token type'} is not available for revoking`,
      )
    }
    return this.client.revokeToken(value, kind, rest)
  }

  /** The mode for `verb`, resolving functions and maps. */
  #modeFor(verb: HttpVerb): TokenMode {
    const mode = this.mode
    let resolved: unknown
    if (typeof mode === 'function') resolved = mode(verb)
    else if (typeof mode === 'string') resolved = mode
    else resolved = mode[verb] ?? 'header'
    if (!(MODES as readonly unknown[]).includes(resolved)) {
      throw invalidValue(
        'mode',
        `resolved to ${show(resolved)} for ${verb}; must be 'header', 'query' or 'body'`,
      )
    }
    return resolved as TokenMode
  }

  /**
   * The `Authorization` header this token sends in `header` mode.
   *
   * @throws {OAuth2Error} `dpop_key_required` for a DPoP-bound token: its header is worthless
   *   without a proof for each request; send requests through the token's request methods.
   */
  headers(): Record<string, string> {
    if (this.dpopBound) {
      throw libraryError(
        'dpop_key_required',
        'the token is DPoP-bound: each request needs its own DPoP proof, so there is no fixed ' +
          'Authorization header; send requests with token.fetch(), token.get(), ... instead',
      )
    }
    return { Authorization: this.headerFormat.replace('%s', this.#token) }
  }

  /**
   * Sends a request with this token attached per its mode (the gem's `request`); a DPoP-bound
   * token goes as `Authorization: DPoP` with a proof (RFC 9449 §7.1), whatever `headerFormat`.
   * With `autoRefresh`, the token refreshes itself first when expired, and once on an
   * `invalid_token` 401 (see {@link AccessToken.fetch}).
   *
   * @param verb HTTP verb.
   * @param path Path relative to the client's `site`, or an absolute URL (not checked: never pass
   *   an untrusted URL, the token would go there).
   * @param opts `params` (query), `body`, `headers`, `snaky`, `parse`, `raiseErrors`,
   *   `autoRefresh`.
   * @returns The response.
   * @throws {OAuth2Error} For 400-599 responses when `raiseErrors` is on; `dpop_key_required`
   *   for a DPoP-bound token whose client has no `dpop` option; the refresh's error with
   *   `autoRefresh`; what `onRefresh` throws.
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when the mode of a DPoP-bound token is not
   *   `'header'`.
   */
  async request(
    verb: HttpVerb | Uppercase<HttpVerb>,
    path: string | URL,
    opts: TokenRequestOptions = {},
  ): Promise<Response> {
    if (!isRecord(opts)) throw invalidType('opts', 'an object', opts)
    assertKnownKeys('opts', opts, TOKEN_REQUEST_OPTION_KEYS)
    assertOptionalBoolean('opts.autoRefresh', opts.autoRefresh)
    if (opts.autoRefresh !== true) return this.#send(verb, path, opts)
    if (this.expired() && this.#refreshable()) await this.#refreshInPlace(this.#generation)
    const generation = this.#generation
    const raiseErrors = opts.raiseErrors ?? this.client.options.raiseErrors
    const response = await this.#send(verb, path, { ...opts, raiseErrors: false })
    if (
      response.status === 401 &&
      this.#refreshable() &&
      challengeError(response.headers['www-authenticate'], ['bearer', 'dpop'], 'invalid_token')
    ) {
      await this.#refreshInPlace(generation)
      return this.#send(verb, path, { ...opts, raiseErrors })
    }
    if (response.error !== undefined && raiseErrors) throw response.error
    return response
  }

  /**
   * Sends a request with the token, refreshing it in place when needed: `fetch`-shaped (URL first,
   * the verb in `init.method`, GET by default), resolving with this library's {@link Response}.
   *
   * - Before sending: when the token has expired (by the client's clock, `expiresLatency` counted)
   *   and has a refresh token, it refreshes first.
   * - After: on a `401` whose `WWW-Authenticate` has `error="invalid_token"` (Bearer or DPoP
   *   scheme, RFC 6750 §3.1), it refreshes once and sends the request again.
   * - One refresh at a time: any number of concurrent requests wait for the same refresh
   *   (`refresh_token` grant, DPoP proof included), and a request whose 401 came back after
   *   another refresh completed is just sent again.
   * - The token changes in place (`token`, `refreshToken`, `expiresAt`, `params`, `response`);
   *   `onRefresh(token)` (an {@link AccessTokenOptions} option) is awaited before the waiting
   *   requests go on: persist the new token there.
   *
   * @param url Path relative to the client's `site`, or an absolute URL (never an untrusted one).
   * @param init `method` and the options of {@link AccessToken.request}; `autoRefresh` defaults to
   *   `true` here.
   * @returns The response (of the second attempt when it refreshed after a 401).
   * @throws {OAuth2Error} For 400-599 responses when `raiseErrors` is on (also the 401 that remains
   *   after the refresh); the refresh's own error (`invalid_grant` when the refresh token is no
   *   longer valid: sign the user in again); `dpop_key_required`.
   * @throws {ConnectionError} When the connection fails.
   * @throws {TimeoutError} When `connectionOpts.timeout` elapses.
   * @see https://www.rfc-editor.org/rfc/rfc6749#section-6
   * @see https://www.rfc-editor.org/rfc/rfc6750#section-3.1
   *
   * @example
   * ```ts
   * import { AccessToken, type Client } from '@gatehouse/oauth2'
   * let client!: Client
   * declare const stored: Record<string, unknown>
   * declare function save(hash: object): Promise<void>
   * const token = AccessToken.fromHash(client, {
   *   ...stored,
   *   expiresLatency: 30,
   *   onRefresh: (t: AccessToken) => save(t.toHash()),
   * })
   * const me = await token.fetch('/api/me')
   * const created = await token.fetch('/api/items', { method: 'POST', body: { name: 'n' } })
   * ```
   */
  async fetch(url: string | URL, init: TokenFetchInit = {}): Promise<Response> {
    if (!isRecord(init)) throw invalidType('init', 'an object', init)
    assertKnownKeys('init', init, FETCH_INIT_KEYS)
    const { method = 'get', ...opts } = init
    return this.request(method, url, { autoRefresh: true, ...opts })
  }

  /** Sends the request once, with the token attached per its mode (or as DPoP). */
  #send(
    verb: HttpVerb | Uppercase<HttpVerb>,
    path: string | URL,
    opts: TokenRequestOptions,
  ): Promise<Response> {
    if (typeof verb !== 'string') throw invalidType('verb', 'a string', verb)
    if (this.resource !== undefined) path = this.#withinResource(path, this.resource)
    const mode = this.#modeFor(verb.toLowerCase() as HttpVerb)
    const { autoRefresh: _autoRefresh, ...rest } = opts
    if (this.dpopBound) return this.#sendDpop(verb, path, mode, rest)
    let next: RequestOptions = rest
    switch (mode) {
      case 'header': {
        // The token's header replaces any Authorization the caller passed.
        const headers: Record<string, string> = {}
        for (const [k, v] of Object.entries(opts.headers ?? {})) {
          if (k.toLowerCase() !== 'authorization') headers[k] = v
        }
        headers.authorization = this.headerFormat.replace('%s', this.#token)
        next = { ...rest, headers }
        break
      }
      case 'query':
        next = { ...rest, params: { ...rest.params, [this.paramName]: this.#token } }
        break
      case 'body': {
        const body = rest.body
        if (body === undefined || isRecord(body)) {
          next = { ...rest, body: { ...body, [this.paramName]: this.#token } }
        } else if (typeof body === 'string') {
          next = { ...rest, body: `${body}&${this.paramName}=${this.#token}` }
        } else {
          throw invalidType('opts.body', "an object or string in 'body' mode", body)
        }
        break
      }
    }
    return this.client.request(verb, path, next)
  }

  /**
   * The absolute URL of a request of a token bound to `resource`: `''` is the resource, a relative
   * path goes under it (a leading `/` from its origin's root), and the result must be on its
   * origin, under its path.
   *
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` for a URL outside the resource.
   */
  #withinResource(path: string | URL, resource: string): URL {
    const base = new URL(resource)
    const text = String(path)
    // Relative paths go under the resource (`tools/list` of `…/mcp` is `…/mcp/tools/list`).
    const directory = new URL(base)
    if (!directory.pathname.endsWith('/')) directory.pathname += '/'
    const url = URL.canParse(text) ? new URL(text) : text === '' ? base : new URL(text, directory)
    const prefix = base.pathname.replace(/\/$/, '')
    if (
      url.origin !== base.origin ||
      !(url.pathname === prefix || url.pathname.startsWith(`${prefix}/`) || prefix === '')
    ) {
      throw invalidValue(
        'url',
        `is outside the resource the token is for (${base.origin}${base.pathname}): the token ` +
          'goes nowhere else (RFC 8707)',
      )
    }
    return url
  }

  /** Sends the request as RFC 9449 §7.1 wants: `Authorization: DPoP` and a fresh proof. */
  #sendDpop(
    verb: HttpVerb | Uppercase<HttpVerb>,
    path: string | URL,
    mode: TokenMode,
    opts: RequestOptions,
  ): Promise<Response> {
    const dpop = this.client.dpop
    if (dpop === undefined) {
      throw libraryError(
        'dpop_key_required',
        'the token is DPoP-bound (token_type DPoP) and is never sent as a bearer token, but its ' +
          'client has no DPoP key: use a client created with the dpop option and the key pair ' +
          'the token was issued for',
      )
    }
    if (mode !== 'header') {
      throw invalidValue(
        'mode',
        `resolved to '${mode}' for ${verb}, but the token is DPoP-bound: it is sent in the ` +
          'Authorization header only (RFC 9449 §7.1)',
      )
    }
    let next = opts
    if (opts.headers !== undefined) {
      // The signer's Authorization and DPoP replace any the caller passed.
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(opts.headers)) {
        const name = k.toLowerCase()
        if (name !== 'authorization' && name !== 'dpop') headers[k] = v
      }
      next = { ...opts, headers }
    }
    if (this.#dpopSigner?.token !== this.#token) {
      this.#dpopSigner = { token: this.#token, signer: dpop.signer(this.#token) }
    }
    return this.client.sendSigned(verb, path, next, this.#dpopSigner.signer)
  }

  /** `GET` with the token. See {@link AccessToken.request}. */
  get(path: string | URL, opts?: TokenRequestOptions): Promise<Response> {
    return this.request('get', path, opts)
  }

  /** `POST` with the token. See {@link AccessToken.request}. */
  post(path: string | URL, opts?: TokenRequestOptions): Promise<Response> {
    return this.request('post', path, opts)
  }

  /** `PUT` with the token. See {@link AccessToken.request}. */
  put(path: string | URL, opts?: TokenRequestOptions): Promise<Response> {
    return this.request('put', path, opts)
  }

  /** `PATCH` with the token. See {@link AccessToken.request}. */
  patch(path: string | URL, opts?: TokenRequestOptions): Promise<Response> {
    return this.request('patch', path, opts)
  }

  /** `DELETE` with the token. See {@link AccessToken.request}. */
  delete(path: string | URL, opts?: TokenRequestOptions): Promise<Response> {
    return this.request('delete', path, opts)
  }

  /**
   * Records which nonce the ID token of this token must carry (set by `authCode.getToken`).
   *
   * @internal
   */
  expectNonce(expectation: NonceExpectation): void {
    this.#nonceExpectation = expectation
  }

  /**
   * Verifies the `id_token` of the token response (OpenID Connect Core §3.1.3.7) and returns its
   * claims, checking its `at_hash` (when present) against this access token. See
   * {@link Client.verifyIdToken}.
   *
   * The nonce: `options.nonce` when given (`null`: the authorization request sent none). Without
   * it, a token from `authCode.getToken` expects the nonce its authorization request sent when
   * the same client built that request with a PKCE challenge (or none, if it sent none); when the
   * client does not know the request (another process, no PKCE), `options.nonce` is required, so
   * an ID token whose nonce was stripped from the authorization request is never accepted by
   * default. Other tokens (refreshed, `fromHash`) expect no nonce unless told.
   *
   * @param options `nonce` (required when the client cannot tell which nonce the authorization
   *   request sent), `maxAge`, `clockTolerance`, `code`.
   *
   * @throws {OAuth2Error} `invalid_id_token` when the response has no `id_token` or it is invalid
   *   (a `nonce` other than the expected one, or none when one is expected).
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when `options.nonce` is required and absent.
   */
  async idToken(options: VerifyIdTokenOptions = {}): Promise<IdTokenClaims> {
    const fromParams = this.params.id_token
    const idToken = fromParams ?? (this.tokenName === 'id_token' ? this.#token : undefined)
    if (typeof idToken !== 'string' || idToken === '') {
      throw libraryError('invalid_id_token', 'the token response has no id_token')
    }
    if (!isRecord(options)) throw invalidType('options', 'an object', options)
    let { nonce } = options as VerifyIdTokenOptions
    const expected = this.#nonceExpectation
    if (nonce === undefined && expected !== undefined) {
      if (expected === 'unknown') {
        throw invalidValue(
          'options.nonce',
          'is required: the token comes from authCode.getToken() but this client did not build ' +
            'its authorization request with that code_verifier (another process, or no PKCE), so ' +
            'it cannot tell which nonce the ID token must carry; pass the nonce the request sent ' +
            '(keep it with the state), or null if it sent none',
        )
      }
      nonce = expected.nonce ?? null
    }
    // The access token issued with the ID token is what its at_hash covers.
    const accessToken = fromParams !== undefined && this.#token !== '' ? this.#token : undefined
    return this.client.verifyIdToken(idToken, { accessToken, ...options, nonce })
  }

  /**
   * The token as a plain object for storage (the gem's `to_hash`): extra fields, `access_token`,
   * `refresh_token`, `expires_at` (epoch seconds, latency already subtracted), `mode`,
   * `headerFormat`, `paramName` and `tokenName`. {@link AccessToken.fromHash} restores it.
   */
  toHash(): AccessTokenHash {
    return {
      ...this.params,
      access_token: this.#token,
      ...(this.#refreshToken === undefined ? {} : { refresh_token: this.#refreshToken }),
      ...(this.expiresAt === undefined ? {} : { expires_at: this.expiresAt }),
      mode: this.mode,
      headerFormat: this.headerFormat,
      paramName: this.paramName,
      ...(this.tokenName === undefined ? {} : { tokenName: this.tokenName }),
      ...(this.resource === undefined ? {} : { resource: this.resource }),
    }
  }

  /** A view with secrets filtered, for `JSON.stringify` and `util.inspect`. */
  #safeView(): Record<string, unknown> {
    const label = this.client.config.filteredLabel
    const filtered = new Set(this.client.config.filteredDebugKeys.map((k) => k.toLowerCase()))
    const params: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(this.#params))
      params[k] = filtered.has(k.toLowerCase()) ? label : v
    return {
      token: label,
      refreshToken: this.#refreshToken === undefined ? undefined : label,
      expiresIn: this.expiresIn,
      expiresAt: this.expiresAt,
      expiresLatency: this.expiresLatency,
      mode: typeof this.mode === 'function' ? '[Function]' : this.mode,
      headerFormat: this.headerFormat,
      paramName: this.paramName,
      tokenName: this.tokenName,
      resource: this.resource,
      params,
    }
  }

  /** The token without secrets (token and refresh token filtered). Use {@link AccessToken.toHash} to persist. */
  toJSON(): Record<string, unknown> {
    return this.#safeView()
  }

  /** `util.inspect` output without secrets. */
  [Symbol.for('nodejs.util.inspect.custom')](): unknown {
    return Object.assign(Object.create({ constructor: AccessToken }) as object, this.#safeView())
  }
}

function optionalString(name: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw invalidType(name, 'a string', value)
  return value
}
