import { AccessToken, type AccessTokenOptions } from '../access-token.js'
import { assertRecord, invalidType, invalidValue, isRecord } from '../args.js'
import type { Client } from '../client.js'
import { OAuth2Error } from '../error.js'
import type { TokenParams, TokenResult } from '../token-endpoint.js'

/** `grant_type` of token exchange (RFC 8693 §2.1). */
export const TOKEN_EXCHANGE_GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange'

/**
 * The token type identifiers of RFC 8693 §3, keyed by their last segment: values of
 * `subjectTokenType`, `actorTokenType`, `requestedTokenType` and of the response's
 * `issued_token_type`.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8693#section-3
 */
export const TOKEN_TYPES = Object.freeze({
  access_token: 'urn:ietf:params:oauth:token-type:access_token',
  refresh_token: 'urn:ietf:params:oauth:token-type:refresh_token',
  id_token: 'urn:ietf:params:oauth:token-type:id_token',
  saml1: 'urn:ietf:params:oauth:token-type:saml1',
  saml2: 'urn:ietf:params:oauth:token-type:saml2',
  jwt: 'urn:ietf:params:oauth:token-type:jwt',
} as const)

/** A token type identifier of RFC 8693 §3 (other URIs are accepted too). */
export type TokenTypeUri = (typeof TOKEN_TYPES)[keyof typeof TOKEN_TYPES]

/**
 * What to exchange (RFC 8693 §2.1), camelCase here, sent with the RFC's names (`subject_token`,
 * `subject_token_type`, ...).
 */
export interface TokenExchangeRequest {
  /** The token that represents the party on whose behalf the request is made. */
  readonly subjectToken: string | AccessToken
  /**
   * Its type; required with a string `subjectToken`, {@link TOKEN_TYPES}`.access_token` by default
   * for an {@link AccessToken}.
   */
  readonly subjectTokenType?: TokenTypeUri | (string & {}) | undefined
  /** The token of the acting party (delegation); requires `actorTokenType`. */
  readonly actorToken?: string | AccessToken | undefined
  /** The type of `actorToken`; required with a string `actorToken`, and only with one. */
  readonly actorTokenType?: TokenTypeUri | (string & {}) | undefined
  /** The type of token wanted (the server's default when absent). */
  readonly requestedTokenType?: TokenTypeUri | (string & {}) | undefined
  /** Logical names of the target services. */
  readonly audience?: string | readonly string[] | undefined
  /** Absolute URIs of the target resources (RFC 8707). */
  readonly resource?: string | readonly string[] | undefined
  /** The scope wanted, space-separated. */
  readonly scope?: string | undefined
}

const FIELDS: Readonly<Record<keyof TokenExchangeRequest, string>> = {
  subjectToken: 'subject_token',
  subjectTokenType: 'subject_token_type',
  actorToken: 'actor_token',
  actorTokenType: 'actor_token_type',
  requestedTokenType: 'requested_token_type',
  audience: 'audience',
  resource: 'resource',
  scope: 'scope',
}

/** The string of a token argument: the string itself or an {@link AccessToken}'s token. */
function tokenValue(name: string, value: unknown): string {
  const token = value instanceof AccessToken ? value.token : value
  if (typeof token !== 'string') throw invalidType(name, 'a string or an AccessToken', value)
  if (token === '') throw invalidValue(name, 'must not be empty')
  return token
}

function typeUri(name: string, value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'string') throw invalidType(name, 'a token type URI string', value)
  if (!URL.canParse(value)) {
    throw invalidValue(
      name,
      `must be a URI such as TOKEN_TYPES.access_token ('${TOKEN_TYPES.access_token}') (got '${value}')`,
    )
  }
  return value
}

function stringList(name: string, value: unknown, absoluteUri: boolean): readonly string[] {
  const list: readonly unknown[] = Array.isArray(value) ? value : [value]
  for (const item of list) {
    if (typeof item !== 'string' || item === '') {
      throw invalidType(name, 'a non-empty string or an array of them', value)
    }
    if (absoluteUri && (!URL.canParse(item) || item.includes('#'))) {
      throw invalidValue(name, `must hold absolute URIs without a fragment (got '${item}')`)
    }
  }
  return list as readonly string[]
}

/**
 * A token of the request (`subject` or `actor`) and its type: the given type, or `access_token`
 * for an {@link AccessToken}; required with a string token (RFC 8693 §2.1).
 */
function tokenAndType(role: 'subject' | 'actor', token: unknown, type: unknown): [string, string] {
  const value = tokenValue(`request.${role}Token`, token)
  const uri =
    typeUri(`request.${role}TokenType`, type) ??
    (token instanceof AccessToken ? TOKEN_TYPES.access_token : undefined)
  if (uri === undefined) {
    throw invalidValue(
      `request.${role}TokenType`,
      `is required with a string ${role}Token (RFC 8693 §2.1): for example TOKEN_TYPES.access_token`,
    )
  }
  return [value, uri]
}

/** The wire parameters of a token exchange request, checked. */
function wireParams(request: TokenExchangeRequest): Record<string, string | readonly string[]> {
  if (!isRecord(request)) throw invalidType('request', 'an object', request)
  for (const key of Object.keys(request)) {
    if (!Object.hasOwn(FIELDS, key)) {
      const camel = Object.entries(FIELDS).find(([, wire]) => wire === key)?.[0]
      throw invalidValue(
        `request.${key}`,
        camel === undefined
          ? `is not a token exchange field (they are ${Object.keys(FIELDS).join(', ')}; ` +
              'other parameters go in the second argument)'
          : `is spelled ${camel} here (it is sent as ${key})`,
      )
    }
  }
  const wire: Record<string, string | readonly string[]> = {}
  ;[wire.subject_token, wire.subject_token_type] = tokenAndType(
    'subject',
    request.subjectToken,
    request.subjectTokenType,
  )
  if (request.actorToken !== undefined) {
    ;[wire.actor_token, wire.actor_token_type] = tokenAndType(
      'actor',
      request.actorToken,
      request.actorTokenType,
    )
  } else if (request.actorTokenType !== undefined) {
    throw invalidValue(
      'request.actorTokenType',
      'must not be given without actorToken (RFC 8693 §2.1)',
    )
  }
  const requested = typeUri('request.requestedTokenType', request.requestedTokenType)
  if (requested !== undefined) wire.requested_token_type = requested
  if (request.audience !== undefined) {
    wire.audience = stringList('request.audience', request.audience, false)
  }
  if (request.resource !== undefined) {
    wire.resource = stringList('request.resource', request.resource, true)
  }
  if (request.scope !== undefined) {
    if (typeof request.scope !== 'string')
      throw invalidType('request.scope', 'a string', request.scope)
    wire.scope = request.scope
  }
  return wire
}

/**
 * OAuth 2.0 Token Exchange (RFC 8693); reach it as `client.tokenExchange`. A service exchanges
 * the token it received (the subject) for one to call another service with, on the subject's
 * behalf (impersonation) or with its own identity as actor (delegation).
 *
 * @example
 * ```ts
 * import { TOKEN_TYPES, type Client } from '@gatehouse/oauth2'
 * let client!: Client
 * const token = await client.tokenExchange.getToken({
 *   subjectToken: 'token-the-caller-sent',
 *   subjectTokenType: TOKEN_TYPES.access_token,
 *   audience: 'billing-service',
 * })
 * console.log(token.params.issued_token_type)
 * ```
 *
 * @see https://www.rfc-editor.org/rfc/rfc8693
 */
export class TokenExchange<RaiseErrors extends boolean = true> {
  readonly #client: Client<RaiseErrors>

  /** @param client The client. */
  constructor(client: Client<RaiseErrors>) {
    this.#client = client
  }

  /**
   * Exchanges a token (RFC 8693 §2.1): `grant_type` token-exchange, the request's fields with
   * their RFC names, client authentication, a DPoP proof when the client has DPoP. The response's
   * `issued_token_type` (required, RFC 8693 §2.2.1) is kept in `token.params` (and in `toHash()`).
   *
   * @param request `subjectToken`, `subjectTokenType`, `actorToken`, `actorTokenType`,
   *   `requestedTokenType`, `audience`, `resource`, `scope`.
   * @param params Other parameters and `headers`.
   * @param accessTokenOpts Options of the token.
   * @returns The token; with `raiseErrors: false`, see {@link Client.getToken}.
   * @throws {OAuth2Error} The server's error (`invalid_request`, `invalid_target`, ...);
   *   `invalid_token_response` when the response has no `issued_token_type` (with `raiseErrors`,
   *   the default; else set as `response.error`).
   * @throws {TypeError} `ERR_INVALID_ARG_TYPE`/`ERR_INVALID_ARG_VALUE` naming the field: a missing
   *   `subjectTokenType`, `actorToken` and `actorTokenType` not given together, a type that is not
   *   a URI, a `resource` that is not an absolute URI, an unknown or snake_case field.
   * @see https://www.rfc-editor.org/rfc/rfc8693#section-2
   */
  async getToken(
    request: TokenExchangeRequest,
    params: TokenParams = {},
    accessTokenOpts?: AccessTokenOptions,
  ): Promise<TokenResult<RaiseErrors>> {
    const wire = wireParams(request)
    assertRecord('params', params)
    const client = this.#client
    const token = await client.getToken(
      { ...params, ...wire, grant_type: TOKEN_EXCHANGE_GRANT_TYPE },
      accessTokenOpts,
    )
    const response = token?.response
    if (
      response !== undefined &&
      response.error === undefined &&
      typeof token?.params.issued_token_type !== 'string'
    ) {
      const error = new OAuth2Error(response, {
        code: 'invalid_token_response',
        description: 'the token exchange response has no issued_token_type (RFC 8693 §2.2.1)',
      })
      if (client.options.raiseErrors) throw error
      response.error = error
    }
    return token
  }
}
