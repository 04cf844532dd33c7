import { createHmac } from 'node:crypto'
import type { Client } from '@gatehouse/oauth2'
import OAuth from 'oauth-1.0a'
import type { Clock } from '../clock.js'
import {
  MalformedProfileError,
  chooseHost,
  profileClaims,
  emailOf,
  idOf,
  oauth2Client,
  record,
  text,
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
 * Twitter (X) with OAuth 1.0a, as upstream: a request token from `api.twitter.com/oauth/request_token`
 * (callback `EXTERNAL_TWITTER_REDIRECT_URI?state=…`), the user sent to `/oauth/authenticate`, and
 * `oauth_token` + `oauth_verifier` exchanged at `/oauth/access_token`; the user from
 * `/1.1/account/verify_credentials.json?include_email=true&include_entities=false&skip_status=true`
 * (`id_str`, `name`, `screen_name`, `email`, `profile_image_url_https`); Twitter returns no
 * address that is not verified ("if the email address is un-verified, null will be returned").
 * Requests are signed HMAC-SHA1 by `oauth-1.0a` and sent through `@gatehouse/oauth2`'s
 * connection. `provider_token` is the access token, `provider_refresh_token` its secret.
 *
 * @see https://developer.x.com/en/docs/authentication/oauth-1-0a/obtaining-user-access-tokens
 */
export class TwitterProvider implements OAuthProvider {
  readonly name = 'twitter'
  /** OAuth 1.0a has no PKCE. */
  readonly pkce = false
  readonly #ctx: ProviderContext
  readonly #host: string
  readonly #oauth: OAuth
  readonly #http: Client
  readonly #secrets: RequestTokenSecrets

  constructor(ctx: ProviderContext) {
    this.#ctx = ctx
    this.#host = chooseHost(ctx.config.url, 'api.twitter.com')
    this.#oauth = new OAuth({
      consumer: { key: ctx.config.clientId, secret: ctx.config.secret },
      signature_method: 'HMAC-SHA1',
      hash_function: (base, key) => createHmac('sha1', key).update(base).digest('base64'),
    })
    this.#http = oauth2Client(ctx, { site: this.#host })
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
        await this.#send('post', `${this.#host}/oauth/request_token`, {
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
    const url = new URL(`${this.#host}/oauth/authenticate`)
    url.searchParams.set('oauth_token', token)
    return url.href
  }

  async exchange(callback: Readonly<Record<string, string>>): Promise<ProviderTokens> {
    const key = callback.oauth_token ?? ''
    try {
      const reply = new URLSearchParams(
        await this.#send(
          'post',
          `${this.#host}/oauth/access_token`,
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

  async getUserData(tokens: ProviderTokens): Promise<ProviderUserData> {
    try {
      const url = `${this.#host}/1.1/account/verify_credentials.json?include_email=true&include_entities=false&skip_status=true`
      const body = await this.#send(
        'get',
        url,
        {},
        {
          key: tokens.accessToken,
          secret: tokens.refreshToken,
        },
      )
      let parsed: unknown
      try {
        parsed = JSON.parse(body)
      } catch {
        throw new MalformedProfileError('is not JSON')
      }
      const profile = record(parsed)
      const id = idOf(profile, 'id_str')
      const name = text(profile, 'name')
      const avatar = text(profile, 'profile_image_url_https')
      return {
        id,
        emails: emailOf(text(profile, 'email'), true),
        claims: profileClaims({
          iss: this.#host,
          id,
          name,
          avatar,
          userName: text(profile, 'screen_name'),
          preferredUsername: text(profile, 'screen_name'),
        }),
      }
    } catch (error) {
      throw new ProviderFailure('user', error)
    }
  }
}

/** Twitter's {@link OAuthProvider}. */
export function twitter(ctx: ProviderContext): OAuthProvider {
  return new TwitterProvider(ctx)
}
