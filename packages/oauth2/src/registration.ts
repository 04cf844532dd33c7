/**
 * Dynamic client registration (RFC 7591): the client metadata a client sends, the registration
 * response it gets back, and how that response configures a {@link Client}.
 *
 * @module
 */
import type { AuthScheme } from './authenticator.js'
import { OAuth2Error, responseObject } from './error.js'
import { isSecureUrl } from './oidc/metadata.js'
import type { Response } from './response.js'

/**
 * Client metadata (RFC 7591 §2, OpenID Connect Dynamic Client Registration §2), as sent to the
 * registration endpoint; field names as on the wire. Any other field is sent as given.
 */
export interface ClientMetadata {
  /** Redirection URIs (RFC 7591 §2). */
  readonly redirect_uris?: readonly string[] | undefined
  /**
   * How the client authenticates at the token endpoint: `client_secret_basic` (the default),
   * `client_secret_post`, `client_secret_jwt`, `private_key_jwt`, `tls_client_auth`, `none`.
   */
  readonly token_endpoint_auth_method?: string | undefined
  /** Grant types the client uses (RFC 7591 §2). @default ['authorization_code'] */
  readonly grant_types?: readonly string[] | undefined
  /** Response types the client uses (RFC 7591 §2). @default ['code'] */
  readonly response_types?: readonly string[] | undefined
  /** A name to show the user. */
  readonly client_name?: string | undefined
  /** The client's home page. */
  readonly client_uri?: string | undefined
  /** Space-separated scopes the client may ask for. */
  readonly scope?: string | undefined
  /** The client's public keys, by reference (for `private_key_jwt`, JAR). */
  readonly jwks_uri?: string | undefined
  /** The client's public keys, by value: `{ keys: [...] }`. */
  readonly jwks?: { readonly keys: readonly Record<string, unknown>[] } | undefined
  /** Where the provider may send the browser after logout (RP-Initiated Logout §3.1). */
  readonly post_logout_redirect_uris?: readonly string[] | undefined
  /** `web` or `native` (OpenID Connect Dynamic Client Registration §2). */
  readonly application_type?: string | undefined
  readonly [field: string]: unknown
}

/**
 * A registration response (RFC 7591 §3.2.1, RFC 7592 §3): the issued `client_id` (and
 * `client_secret`), the registered metadata, and the credentials to manage the registration.
 */
export interface ClientRegistration extends ClientMetadata {
  /** The issued client identifier. */
  readonly client_id: string
  /** The issued secret, for confidential clients. */
  readonly client_secret?: string | undefined
  /** When `client_id` was issued, epoch seconds. */
  readonly client_id_issued_at?: number | undefined
  /** When `client_secret` expires, epoch seconds; `0`: never. Required with a secret. */
  readonly client_secret_expires_at?: number | undefined
  /** RFC 7592 §3: the bearer token that reads, updates and deletes this registration. */
  readonly registration_access_token?: string | undefined
  /** RFC 7592 §3: where this registration is managed. */
  readonly registration_client_uri?: string | undefined
}

/** The `AuthScheme` of each `token_endpoint_auth_method` (OpenID Connect Core §9). */
const AUTH_SCHEME_OF: Readonly<Record<string, AuthScheme>> = {
  client_secret_basic: 'basic_auth',
  client_secret_post: 'request_body',
  client_secret_jwt: 'client_secret_jwt',
  private_key_jwt: 'private_key_jwt',
  tls_client_auth: 'tls_client_auth',
  none: 'none',
}

/**
 * The {@link AuthScheme} of a registered `token_endpoint_auth_method` (`client_secret_basic` when
 * absent, RFC 7591 §2); `undefined` for a method this library does not speak.
 *
 * @internal
 */
export function authSchemeOf(method: unknown): AuthScheme | undefined {
  if (method === undefined) return 'basic_auth'
  return typeof method === 'string' && Object.hasOwn(AUTH_SCHEME_OF, method)
    ? AUTH_SCHEME_OF[method]
    : undefined
}

/**
 * Reads a registration response: status 201 (RFC 7591 §3.2.1), a JSON object with a non-empty
 * `client_id`; `client_secret` a string and then `client_secret_expires_at` a number;
 * `registration_access_token` and `registration_client_uri` strings, the latter https (http on a
 * loopback host), as RFC 7592 §3 has them.
 *
 * @throws {OAuth2Error} `invalid_registration_response` naming the problem.
 * @internal
 */
export function readRegistration(response: Response): ClientRegistration {
  const what = 'registration response'
  const section = 'RFC 7591 §3.2.1'
  if (response.status !== 201) {
    throw new OAuth2Error(response, {
      code: 'invalid_registration_response',
      description: `the ${what} has status ${String(response.status)}, not 201 (${section})`,
    })
  }
  const fields = responseObject(response, 'invalid_registration_response', what, section, (f) => {
    if (typeof f.client_id !== 'string' || f.client_id === '') return 'has no client_id string'
    if (f.client_secret !== undefined) {
      if (typeof f.client_secret !== 'string') return 'has a client_secret not a string'
      if (typeof f.client_secret_expires_at !== 'number') {
        return 'has a client_secret without a client_secret_expires_at number'
      }
    }
    for (const name of ['registration_access_token', 'registration_client_uri']) {
      if (f[name] !== undefined && typeof f[name] !== 'string') {
        return `has a ${name} that is not a string`
      }
    }
    const uri = f.registration_client_uri
    if (typeof uri === 'string' && !isSecureUrl(uri)) {
      return 'has a registration_client_uri that is not https (http only on loopback)'
    }
    return undefined
  })
  return fields as ClientRegistration
}
