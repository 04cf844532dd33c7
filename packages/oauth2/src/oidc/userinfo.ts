import { AccessToken } from '../access-token.js'
import { assertString, isRecord } from '../args.js'
import type { Client } from '../client.js'
import { libraryError, OAuth2Error } from '../error.js'
import type { Response } from '../response.js'

/**
 * `Client#userinfo`: fetches the user's claims from the UserInfo endpoint (OpenID Connect Core
 * §5.3) with the access token, and checks them (a JSON object; `sub` as expected).
 *
 * @internal
 */
export async function fetchUserinfo(
  client: Client<boolean>,
  token: AccessToken | string,
  options: { expectedSubject?: string },
): Promise<Record<string, unknown>> {
  const url = client.options.userinfoUrl ?? client.options.metadata?.userinfo_endpoint
  if (url === undefined) {
    throw libraryError(
      'invalid_metadata',
      'no UserInfo endpoint: use Client.discover() or options.userinfoUrl',
    )
  }
  let response: Response
  if (token instanceof AccessToken) response = await token.get(url, { raiseErrors: true })
  else {
    assertString('token', token)
    response = await client.request('get', url, {
      headers: { authorization: `Bearer ${token}` },
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
