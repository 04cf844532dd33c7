import { createHmac } from 'node:crypto'
import type { Client } from '@gatehouse/oauth2'
import OAuth from 'oauth-1.0a'
import type { Clock } from '../clock.js'
import { PROVIDER_PRESETS, type ProviderEndpoints } from '@gatehouse/oauth2/providers'
import {
  MalformedProfileError,
  endpointsOf,
  oauth2Client,
  userDataOf,
  type ProviderContext,
} from './base.js'
import {
  ProviderFailure,
  type AuthorizeRequest,
  type OAuthProvider,
  type ProviderTokens,
  type ProviderUserData,
} from './oauth-provider.js'

/** How long a request token's secret is kept for its access-token exchange, milliseconds. */
const REQUEST_TOKEN_TTL = 10 * 60_000
/** Request tokens kept at most (older ones are dropped first). */
const MAX_REQUEST_TOKENS = 10_000

/**
 * Request-token secrets between `/authorize` and `/callback`, per provider instance (the
 * access-token request is signed with it), bounded in count and age.
 */
class RequestTokenSecrets {
  readonly #secrets = new Map<string, { secret: string; until: number }>()
  readonly #clock: Clock

  constructor(clock: Clock) {
    this.#clock = clock
  }

  put(token: string, secret: string): void {
    const now = this.#clock.now()
    for (const [key, entry] of this.#secrets) {
      if (entry.until > now && this.#secrets.size < MAX_REQUEST_TOKENS) break
      this.#secrets.delete(key)
    }
    this.#secrets.set(token, { secret, until: now + REQUEST_TOKEN_TTL })
  }

  /** The secret of `token`, once (`''` when unknown or expired). */
  take(token: string): string {
    const entry = this.#secrets.get(token)
    this.#secrets.delete(token)
    return entry !== undefined && entry.until > this.#clock.now() ? entry.secret : ''
  }
}

/**
 * Twitter (X) with OAuth 1.0a, as upstream, from the `twitter` preset of
 * `@gatehouse/oauth2/providers`: a request token from its request token endpoint (callback
 * `EXTERNAL_TWITTER_REDIRECT_URI?state=…`), the user sent to its authorization endpoint, and
 * `oauth_token` + `oauth_verifier` exchanged at its access token endpoint; the user from the
 * preset's profile request, mapped by the preset. Requests are signed HMAC-SHA1 by `oauth-1.0a`
 * and sent through `@gatehouse/oauth2`'s connection. `provider_token` is the access token,
 * `provider_refresh_token` its secret.
 *
 * @see https://developer.x.com/en/docs/authentication/oauth-1-0a/obtaining-user-access-tokens
 */
export class TwitterProvider implements OAuthProvider {
  readonly name = 'twitter'
  /** OAuth 1.0a has no PKCE. */
  readonly pkce = false
  readonly #ctx: ProviderContext
  readonly #endpoints: ProviderEndpoints
  readonly #oauth: OAuth
  readonly #http: Client
  readonly #secrets: RequestTokenSecrets

  constructor(ctx: ProviderContext) {
    this.#ctx = ctx
    this.#endpoints = endpointsOf(ctx, PROVIDER_PRESETS.twitter)
    this.#oauth = new OAuth({
      consumer: { key: ctx.config.clientId, secret: ctx.config.secret },
      signature_method: 'HMAC-SHA1',
      hash_function: (base, key) => createHmac('sha1', key).update(base).digest('base64'),
    })
    this.#http = oauth2Client(ctx, { site: this.#endpoints.api })
    this.#secrets = new RequestTokenSecrets(ctx.clock)
  }

  /** Sends one signed OAuth 1.0a request; answers the body. */
  async #send(
    method: 'get' | 'post',
    url: string,
    data: Record<string, string>,
    token?: OAuth.Token,
  ): Promise<string> {
    const signed = this.#oauth.toHeader(
      this.#oauth.authorize({ url, method: method.toUpperCase(), data }, token),
    )
    const response = await this.#http.request(method, url, {
      headers: { authorization: signed.Authorization },
      ...(method === 'post' ? { body: data } : {}),
      raiseErrors: true,
    })
    return response.body
  }

  async authorizeUrl(request: AuthorizeRequest): Promise<string> {
    const callback = new URL(this.#ctx.config.redirectUri)
    callback.searchParams.set('state', request.state)
    let reply: URLSearchParams
    try {
      reply = new URLSearchParams(
        await this.#send('post', this.#endpoints.requestTokenUrl ?? '', {
          oauth_callback: callback.href,
        }),
      )
    } catch (error) {
      throw new ProviderFailure('authorize', error)
    }
    const token = reply.get('oauth_token') ?? ''
    if (token === '' || reply.get('oauth_callback_confirmed') !== 'true') {
      throw new ProviderFailure('authorize', new Error('request token response without a token'))
    }
    this.#secrets.put(token, reply.get('oauth_token_secret') ?? '')
    const url = new URL(this.#endpoints.authorizeUrl)
    url.searchParams.set('oauth_token', token)
    return url.href
  }

  async exchange(callback: Readonly<Record<string, string>>): Promise<ProviderTokens> {
    const key = callback.oauth_token ?? ''
    try {
      const reply = new URLSearchParams(
        await this.#send(
          'post',
          this.#endpoints.tokenUrl,
          { oauth_verifier: callback.oauth_verifier ?? '' },
          { key, secret: this.#secrets.take(key) },
        ),
      )
      const accessToken = reply.get('oauth_token') ?? ''
      if (accessToken === '') throw new Error('access token response without oauth_token')
      return {
        accessToken,
        refreshToken: reply.get('oauth_token_secret') ?? '',
        params: Object.fromEntries(reply),
      }
    } catch (error) {
      throw new ProviderFailure('token', error)
    }
  }

  async getUserData(
    tokens: ProviderTokens,
    callback: Readonly<Record<string, string>>,
  ): Promise<ProviderUserData> {
    const preset = PROVIDER_PRESETS.twitter
    try {
      const responses: Record<string, unknown> = {}
      const requests = preset.profileRequests(this.#endpoints, {
        clientId: this.#ctx.config.clientId,
        clientSecret: this.#ctx.config.secret,
        accessToken: tokens.accessToken,
      })
      for (const [name, request] of Object.entries(requests)) {
        const url = new URL(request.url)
        for (const [key, value] of Object.entries(request.params ?? {})) {
          url.searchParams.set(key, value)
        }
        const body = await this.#send(
          'get',
          url.href,
          {},
          {
            key: tokens.accessToken,
            secret: tokens.refreshToken,
          },
        )
        try {
          responses[name] = JSON.parse(body)
        } catch {
          throw new MalformedProfileError('is not JSON')
        }
      }
      return userDataOf(
        this.#ctx,
        preset.profile({
          responses,
          tokenResponse: tokens.params,
          callback,
          endpoints: this.#endpoints,
        }),
      )
    } catch (error) {
      throw new ProviderFailure('user', error)
    }
  }
}

/** Twitter's {@link OAuthProvider}. */
export function twitter(ctx: ProviderContext): OAuthProvider {
  return new TwitterProvider(ctx)
}
