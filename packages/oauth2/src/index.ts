/**
 * `@gatehouse/oauth2`: an OAuth 2.0 / 2.1 client with the Ruby `oauth2` gem's API in TypeScript,
 * plus PKCE, OpenID Connect sign-in (discovery, ID token validation, UserInfo), DPoP, pushed
 * authorization requests, the device authorization grant, token exchange and self-refreshing
 * tokens.
 *
 * @packageDocumentation
 */
export { Client } from './client.js'
export type { EndSessionOptions, RegisterOptions } from './client.js'
export type { ClientMetadata, ClientRegistration } from './registration.js'
export { discoverResource } from './discover-resource.js'
export type { DiscoverResourceOptions, ProtectedResourceMetadata } from './resource.js'
export type {
  ForResourceOptions,
  RegistrationCache,
  ResourceAuthorization,
} from './for-resource.js'
export type {
  ClientOptions,
  ClientOptionsFor,
  ResolvedClientOptions,
  TokenMethod,
} from './client-options.js'
export type { HttpVerb, RequestOptions } from './requester.js'
export type { TokenParams, TokenResult } from './token-endpoint.js'
export type { Clock } from './clock.js'
export { DPOP_ALGORITHMS } from './dpop.js'
export type { DPoPAlgorithm, DPoPKeyPair, DPoPOptions } from './dpop.js'
export { AccessToken } from './access-token.js'
export type {
  AccessTokenHash,
  AccessTokenOptions,
  ModeOption,
  TokenFetchInit,
  TokenMode,
  TokenRequestOptions,
} from './access-token.js'
export { MemoryTokenStore, RedisTokenStore, TOKEN_STORE_DEFAULTS } from './token-store.js'
export type { RedisClientLike, TokenStore, TokenStoreOptions } from './token-store.js'
export { Response } from './response.js'
export type { ParseOption, ResponseHeaders, ResponseInit, ResponseOptions } from './response.js'
export { ConnectionError, OAuth2Error, TimeoutError } from './error.js'
export type { OAuth2ErrorCode, OAuth2ErrorFields, OAuth2ErrorOptions } from './error.js'
export { SnakyHash, snakeCase } from './snaky-hash.js'
export { configure } from './config.js'
export type { Configuration, Parser } from './config.js'
export { pkce, pkceChallenge } from './pkce.js'
export type { Pkce } from './pkce.js'
export { CLIENT_ASSERTION_TYPE } from './authenticator.js'
export type { AuthScheme, BasicAuthEncoding } from './authenticator.js'
export { ConnectionBuilder, DEFAULT_MAX_RESPONSE_BYTES } from './connection.js'
export type {
  ConnectionOptions,
  FetchLike,
  HttpMethod,
  HttpRequest,
  HttpResponse,
  Middleware,
  RequestEncoding,
  TlsOptions,
  Transport,
} from './connection.js'
export type { Logger } from './debug.js'
export type { SigningAlgorithm, SigningKey, SigningOptions } from './jwt.js'
export type { IdTokenClaims, VerifyIdTokenOptions } from './oidc/id-token.js'
export type { AuthorizationServerMetadata } from './oidc/metadata.js'
export type { UserinfoOptions } from './oidc/userinfo.js'
export { JWT_BEARER_GRANT_TYPE } from './strategy/assertion.js'
export type { Assertion, AssertionClaims } from './strategy/assertion.js'
export type { AuthCode, AuthCodeTokenParams, AuthorizeParams } from './strategy/auth-code.js'
export type { CallbackChecks, CallbackInput } from './callback.js'
export type { ClientCredentials } from './strategy/client-credentials.js'
export {
  DEVICE_CODE_GRANT_TYPE,
  DeviceAuthorization,
  MAXIMUM_POLL_SECONDS,
  MINIMUM_POLL_INTERVAL_SECONDS,
} from './strategy/device-code.js'
export type { DeviceCode, DevicePollOptions } from './strategy/device-code.js'
export { TOKEN_EXCHANGE_GRANT_TYPE, TOKEN_TYPES } from './strategy/token-exchange.js'
export type {
  TokenExchange,
  TokenExchangeRequest,
  TokenTypeUri,
} from './strategy/token-exchange.js'
export type { Implicit } from './strategy/implicit.js'
export type { Password } from './strategy/password.js'
export type { Params, ParamValue } from './url.js'
