import { AccessToken } from '../access-token.js'
import { assertKnownKeys, assertRecord, assertString, isRecord, optionKeys } from '../args.js'
import type { Client } from '../client.js'
import { libraryError, OAuth2Error } from '../error.js'
import type { Response } from '../response.js'

/** Options of `Client#userinfo`. */
export interface UserinfoOptions {
  /** The `sub` of the ID token, which the response must match (OIDC Core §5.3.2). */
  readonly expectedSubject?: string | undefined
  /**
   * The user-info URL, for providers whose profile endpoint is not an OIDC UserInfo endpoint
   * (GitHub's `/user`, Discord's `/users/@me`); relative URLs resolve against the site.
   * @default `options.userinfoUrl`, else the metadata's `userinfo_endpoint`
   */
  readonly url?: string | undefined
  /** Extra request headers (Notion's `Notion-Version`, Twitch's `Client-Id`). */
  readonly headers?: Readonly<Record<string, string>> | undefined
  /** Query parameters (Facebook's `fields` and `appsecret_proof`). */
  readonly params?: Readonly<Record<string, string>> | undefined
  /**
   * snake_case the claims (a SnakyHash); `false` keeps the provider's own keys (LinkedIn's
   * `emailAddress`, Snapchat's `externalId`). @default true
   */
  readonly snaky?: boolean | undefined
}

const USERINFO_OPTION_KEYS = optionKeys<UserinfoOptions>({
  expectedSubject: true,
  url: true,
  headers: true,
  params: true,
  snaky: true,
})

/**
 * `Client#userinfo`: fetches the user's claims from the UserInfo endpoint (OpenID Connect Core
 * §5.3), or a provider's own profile endpoint, with the access token, and checks them (a JSON
 * object; `sub` as expected).
 *
 * @internal
 */
export async function fetchUserinfo(
  client: Client<boolean>,
  token: AccessToken | string,
  options: UserinfoOptions,
): Promise<Record<string, unknown>> {
  assertRecord('options', options)
  assertKnownKeys('options', options, USERINFO_OPTION_KEYS)
  if (options.url !== undefined) assertString('options.url', options.url)
  assertRecord('options.headers', options.headers)
  assertRecord('options.params', options.params)
  const url =
    options.url ?? client.options.userinfoUrl ?? client.options.metadata?.userinfo_endpoint
  if (url === undefined) {
    throw libraryError(
      'invalid_metadata',
      'no UserInfo endpoint: use Client.discover() or options.userinfoUrl',
    )
  }
  let response: Response
  const extra = {
    ...(options.snaky === undefined ? {} : { snaky: options.snaky }),
    ...(options.headers === undefined ? {} : { headers: options.headers }),
    ...(options.params === undefined ? {} : { params: options.params }),
  }
  if (token instanceof AccessToken) {
    response = await token.get(url, { ...extra, raiseErrors: true })
  } else {
    assertString('token', token)
    response = await client.request('get', url, {
      ...extra,
      headers: { ...options.headers, authorization: `Bearer ${token}` },
      raiseErrors: true,
    })
  }
  let claims: unknown
  try {
    claims = response.parsed
  } catch (error) {
    throw new OAuth2Error(response, {
      code: 'invalid_userinfo',
      description: 'not JSON',
      cause: error,
    })
  }
  if (!isRecord(claims))
    throw new OAuth2Error(response, {
      code: 'invalid_userinfo',
      description: 'not a JSON object',
    })
  if (options.expectedSubject !== undefined && claims.sub !== options.expectedSubject) {
    throw new OAuth2Error(response, {
      code: 'invalid_userinfo',
      description: 'sub does not match the ID token',
    })
  }
  return claims
}
