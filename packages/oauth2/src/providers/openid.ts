/**
 * The presets of the OpenID providers, whose ID token identifies the user: Apple, Azure (Microsoft
 * Entra ID), Google and Keycloak.
 *
 * @module
 */
import { invalidValue } from '../args.js'
import {
  badProfile,
  baseUrl,
  chooseHost,
  escapeRegExp,
  flag,
  idOf,
  primaryEmail,
  record,
  text,
  withEmails,
  type ProviderPreset,
} from './preset.js'

/** The name in Apple's `user` form field (sent on the first sign-in only), or `''`. */
function nameFromUserField(field: string | undefined): string {
  if (field === undefined || field === '') return ''
  try {
    const user = JSON.parse(field) as { name?: { firstName?: unknown; lastName?: unknown } }
    const first = typeof user.name?.firstName === 'string' ? user.name.firstName : ''
    const last = typeof user.name?.lastName === 'string' ? user.name.lastName : ''
    return `${first} ${last}`.trim()
  } catch {
    return ''
  }
}

/** The ID token's claims, or `invalid_userinfo` (the preset says the provider sends one). */
function idTokenOf(claims: Readonly<Record<string, unknown>> | undefined) {
  if (claims === undefined) throw badProfile('has no id_token')
  return claims
}

/**
 * Sign in with Apple: found by OIDC discovery from `https://appleid.apple.com`; the response is a
 * `form_post` (`response_mode=form_post`, required with the `name`/`email` scopes) with a `user`
 * JSON field (the name) on the first sign-in only; the user from the ID token (`sub`, `email`,
 * `email_verified`, `is_private_email`). The client secret is a JWT the client signs (ES256).
 * Scopes `email name`; refresh tokens; no PKCE (not documented).
 */
export const apple: ProviderPreset = {
  name: 'apple',
  title: 'Apple',
  protocol: 'oauth2',
  endpoints(url) {
    const issuer = baseUrl(url, 'https://appleid.apple.com')
    return {
      issuer,
      authorizeUrl: `${issuer}/auth/authorize`,
      tokenUrl: `${issuer}/auth/token`,
      api: issuer,
    }
  },
  scopes: ['email', 'name'],
  pkce: false,
  refresh: { issued: true },
  authScheme: 'request_body',
  authorizeParams: { response_mode: 'form_post' },
  idToken: { discovery: true, required: true },
  clientSecretJwt: { algorithm: 'ES256', lifetimeSeconds: 300 },
  profileRequests: () => ({}),
  profile({ idToken, callback }) {
    const token = idTokenOf(idToken)
    return withEmails(
      {
        iss: text(token, 'iss'),
        sub: idOf(token, 'sub'),
        name: nameFromUserField(callback.user),
        custom: flag(token, 'is_private_email') ? { is_private_email: true } : undefined,
      },
      primaryEmail(text(token, 'email'), flag(token, 'email_verified')),
    )
  },
  docs: [
    'https://developer.apple.com/documentation/sign_in_with_apple/generate_and_validate_tokens',
  ],
}

/**
 * Azure (Microsoft Entra ID): `<base>/oauth2/v2.0/authorize` and `/token`, the base
 * `https://login.microsoftonline.com/common` or a tenant's (`…/<tenant id>`, `…/organizations`);
 * the user from the ID token, whose issuer is the tenant's (`https://<host>/<tenant id>/v2.0`) and
 * keys at `<base>/discovery/v2.0/keys`. The email counts as verified when `xms_edov` (email
 * domain owner verified) or `email_verified` is true. Scopes `openid email profile`; PKCE;
 * refresh tokens with `offline_access`.
 */
export const azure: ProviderPreset = {
  name: 'azure',
  title: 'Microsoft Entra ID',
  protocol: 'oauth2',
  endpoints(url) {
    const base = baseUrl(url, 'https://login.microsoftonline.com/common')
    const origin = new URL(base).origin
    return {
      authorizeUrl: `${base}/oauth2/v2.0/authorize`,
      tokenUrl: `${base}/oauth2/v2.0/token`,
      issuerPattern: new RegExp(`^${escapeRegExp(origin)}/[^/]+/v2\\.0$`),
      metadata: { issuer: `${base}/v2.0`, jwks_uri: `${base}/discovery/v2.0/keys` },
      api: origin,
    }
  },
  scopes: ['openid', 'email', 'profile'],
  pkce: true,
  refresh: { issued: true, requires: 'the offline_access scope' },
  authScheme: 'request_body',
  authorizeParams: {},
  idToken: { discovery: false, required: true },
  profileRequests: () => ({}),
  profile({ idToken }) {
    const token = idTokenOf(idToken)
    return withEmails(
      {
        iss: text(token, 'iss'),
        sub: idOf(token, 'sub'),
        name: text(token, 'name'),
        preferred_username: text(token, 'preferred_username'),
        custom: { tid: text(token, 'tid') },
      },
      primaryEmail(text(token, 'email'), flag(token, 'xms_edov') || flag(token, 'email_verified')),
    )
  },
  docs: ['https://learn.microsoft.com/en-us/entra/identity-platform/id-token-claims-reference'],
}

/**
 * Google: found by OIDC discovery from `https://accounts.google.com`; the user from the ID token
 * (`sub`, `email` with `email_verified`, `name`, `picture`, `hd`). Scopes `openid email profile`;
 * PKCE; refresh tokens with `access_type=offline`.
 */
export const google: ProviderPreset = {
  name: 'google',
  title: 'Google',
  protocol: 'oauth2',
  endpoints(url) {
    const issuer = baseUrl(url, 'https://accounts.google.com')
    return {
      issuer,
      authorizeUrl: `${issuer}/o/oauth2/v2/auth`,
      // A custom issuer (a test server) is discovered: these are Google's own endpoints.
      tokenUrl:
        url === undefined || url === '' ? 'https://oauth2.googleapis.com/token' : `${issuer}/token`,
      api: issuer,
    }
  },
  scopes: ['openid', 'email', 'profile'],
  pkce: true,
  refresh: { issued: true, requires: 'access_type=offline in the authorization request' },
  authScheme: 'request_body',
  authorizeParams: {},
  idToken: { discovery: true, required: true },
  profileRequests: () => ({}),
  profile({ idToken }) {
    const token = idTokenOf(idToken)
    return withEmails(
      {
        iss: text(token, 'iss'),
        sub: idOf(token, 'sub'),
        name: text(token, 'name'),
        picture: text(token, 'picture'),
        custom: { hd: text(token, 'hd') },
      },
      primaryEmail(text(token, 'email'), flag(token, 'email_verified')),
    )
  },
  docs: ['https://developers.google.com/identity/openid-connect/openid-connect'],
}

/** Keycloak's claims that have a place of their own; the rest become `custom`. */
const KEYCLOAK_STANDARD = new Set(['sub', 'name', 'email', 'email_verified', 'preferred_username'])

/**
 * Keycloak: the realm URL (required) with `/protocol/openid-connect/{auth,token,userinfo,certs}`;
 * the ID token, when the token response has one, checked against the realm's keys; the user from
 * UserInfo (`sub`, which must be the ID token's, `email` with `email_verified`, `name`,
 * `preferred_username`; every other claim custom). Scopes `openid profile email`; PKCE; refresh
 * tokens.
 */
export const keycloak: ProviderPreset = {
  name: 'keycloak',
  title: 'Keycloak',
  protocol: 'oauth2',
  endpoints(url) {
    if (url === undefined || url === '') {
      throw invalidValue('url', 'is required for Keycloak: the realm URL')
    }
    const realm = baseUrl(url, '')
    const endpoint = `${realm}/protocol/openid-connect`
    return {
      issuer: realm,
      authorizeUrl: `${endpoint}/auth`,
      tokenUrl: `${endpoint}/token`,
      metadata: {
        issuer: realm,
        jwks_uri: `${endpoint}/certs`,
        userinfo_endpoint: `${endpoint}/userinfo`,
        id_token_signing_alg_values_supported: ['RS256', 'ES256', 'PS256', 'EdDSA'],
      },
      api: realm,
    }
  },
  scopes: ['openid', 'profile', 'email'],
  pkce: true,
  refresh: { issued: true },
  authScheme: 'request_body',
  authorizeParams: {},
  idToken: { discovery: false, required: false },
  profileRequests: (endpoints) => ({
    userinfo: { url: String(endpoints.metadata?.userinfo_endpoint), kind: 'object' },
  }),
  profile({ responses, idToken, endpoints }) {
    const info = record(responses.userinfo)
    const sub = idOf(info, 'sub')
    if (idToken !== undefined && idToken.sub !== sub) {
      throw badProfile('is for another subject than the ID token')
    }
    const custom = Object.fromEntries(
      Object.entries(info).filter(([k]) => !KEYCLOAK_STANDARD.has(k)),
    )
    return withEmails(
      {
        iss: endpoints.api,
        sub,
        name: text(info, 'name'),
        preferred_username: text(info, 'preferred_username'),
        custom,
      },
      primaryEmail(text(info, 'email'), flag(info, 'email_verified')),
    )
  },
  docs: ['https://www.keycloak.org/securing-apps/oidc-layers'],
}

/**
 * LinkedIn's OpenID Connect sign-in (upstream's `linkedin_oidc`): its keys found by discovery
 * from `https://www.linkedin.com/oauth`, the user from the ID token (`sub`, `email` with
 * `email_verified`, which LinkedIn sends as the string `"true"`, `given_name` + `family_name`,
 * `picture`, `locale`). Scopes `openid email profile`; no PKCE (upstream sends none).
 */
export const linkedin_oidc: ProviderPreset = {
  name: 'linkedin_oidc',
  title: 'LinkedIn (OpenID Connect)',
  protocol: 'oauth2',
  endpoints(url) {
    const issuer = baseUrl(url, 'https://www.linkedin.com/oauth')
    return {
      issuer,
      authorizeUrl: `${issuer}/v2/authorization`,
      tokenUrl: `${issuer}/v2/accessToken`,
      api: issuer,
    }
  },
  scopes: ['openid', 'email', 'profile'],
  pkce: false,
  refresh: { issued: false, requires: 'programmatic refresh tokens enabled for the app' },
  authScheme: 'request_body',
  authorizeParams: {},
  idToken: { discovery: true, required: true },
  profileRequests: () => ({}),
  profile({ idToken }) {
    const token = idTokenOf(idToken)
    const name = `${text(token, 'given_name')} ${text(token, 'family_name')}`.trim()
    return withEmails(
      {
        iss: text(token, 'iss'),
        sub: idOf(token, 'sub'),
        name: name === '' ? text(token, 'name') : name,
        picture: text(token, 'picture'),
        custom: { locale: text(token, 'locale') },
      },
      primaryEmail(text(token, 'email'), flag(token, 'email_verified')),
    )
  },
  docs: [
    'https://learn.microsoft.com/en-us/linkedin/consumer/integrations/self-serve/sign-in-with-linkedin-v2',
  ],
}

/**
 * Vercel Marketplace (upstream `vercel_marketplace`): `api.vercel.com/oauth/v2/authorization` and
 * `/oauth/v2/accessToken`; the ID token is required and checked with the keys of the issuer
 * `https://marketplace.vercel.com` (OIDC discovery); the user from its claims: `sub` is
 * `global_user_id:<global_user_id>` when the token has one, `user_email` counts as verified,
 * `user_name` and `user_avatar_url`. No default scopes; no PKCE. A custom `url` replaces both the
 * API host and the issuer (a test server).
 */
export const vercel_marketplace: ProviderPreset = {
  name: 'vercel_marketplace',
  title: 'Vercel Marketplace',
  protocol: 'oauth2',
  endpoints(url) {
    const api = chooseHost(url, 'api.vercel.com')
    return {
      issuer: url === undefined || url === '' ? 'https://marketplace.vercel.com' : api,
      authorizeUrl: `${api}/oauth/v2/authorization`,
      tokenUrl: `${api}/oauth/v2/accessToken`,
      api,
    }
  },
  scopes: [],
  pkce: false,
  refresh: { issued: false },
  authScheme: 'request_body',
  authorizeParams: {},
  idToken: { discovery: true, required: true },
  profileRequests: () => ({}),
  profile({ idToken }) {
    const token = idTokenOf(idToken)
    const globalId = text(token, 'global_user_id')
    const sub = globalId === '' ? idOf(token, 'sub') : `global_user_id:${globalId}`
    return withEmails(
      {
        iss: text(token, 'iss'),
        sub,
        name: text(token, 'user_name'),
        picture: text(token, 'user_avatar_url'),
      },
      primaryEmail(text(token, 'user_email'), true),
    )
  },
  docs: ['https://vercel.com/docs/integrations/create-integration/marketplace-api'],
}
