/**
 * The wire shapes of the API's resources, and the one serializer of each: domain objects
 * (camelCase, `Date`) become upstream's JSON (snake_case, RFC 3339 strings) here and nowhere else.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/models/user.go
 * @see https://github.com/supabase/auth/blob/master/internal/models/identity.go
 * @see https://github.com/supabase/auth/blob/master/internal/models/factor.go
 * @module
 */
import type { ListedSession } from '../../services/device-sessions.js'
import type { WeakPassword, WeakPasswordReason } from '../../crypto/password.js'
import type { Factor } from '../../models/factor.js'
import type { Identity } from '../../models/identity.js'
import type { JsonObject } from '../../models/json.js'
import type { User } from '../../models/user.js'
import type { SsoProvider } from '../../models/sso.js'
import type { IssuedSession } from '../../sessions/token-service.js'

/** An identity as upstream renders it. Timestamps are RFC 3339; `null` ones are omitted. */
export interface IdentityJson {
  identity_id: string
  /** The provider's id of the user (`provider_id`). */
  id: string
  user_id: string
  identity_data: JsonObject
  provider: string
  last_sign_in_at?: string
  created_at: string
  updated_at: string
  email?: string
}

/**
 * A user as upstream renders it (`GET /user`, the admin API, sign-up). Timestamps are RFC 3339
 * with milliseconds; `null` ones are omitted; `email` and `phone` are `""` when absent.
 */
export interface UserJson {
  id: string
  aud: string
  role: string
  email: string
  email_confirmed_at?: string
  invited_at?: string
  phone: string
  phone_confirmed_at?: string
  confirmation_sent_at?: string
  confirmed_at?: string
  recovery_sent_at?: string
  new_email?: string
  email_change_sent_at?: string
  new_phone?: string
  phone_change_sent_at?: string
  reauthentication_sent_at?: string
  last_sign_in_at?: string
  app_metadata: JsonObject
  user_metadata: JsonObject
  /** The MFA factors, verified or not; omitted when there are none (upstream `omitempty`). */
  factors?: FactorJson[]
  identities: IdentityJson[]
  created_at: string
  updated_at: string
  banned_until?: string
  deleted_at?: string
  is_anonymous: boolean
}

/**
 * An MFA factor as upstream renders it (in `GET /user`, token responses and the admin API); the
 * secret never appears. `friendly_name` is omitted when empty; `phone` is `""` for TOTP.
 */
export interface FactorJson {
  id: string
  created_at: string
  updated_at: string
  status: 'verified' | 'unverified'
  friendly_name?: string
  factor_type: 'totp' | 'phone' | 'webauthn'
  phone: string
  /** RFC 3339, or `null` before the first challenge. */
  last_challenged_at: string | null
}

/** Renders a factor (never its secret). */
export function serializeFactor(factor: Factor): FactorJson {
  const json = {
    id: factor.id,
    created_at: factor.createdAt.toISOString(),
    updated_at: factor.updatedAt.toISOString(),
    status: factor.status,
  } as FactorJson
  if (factor.friendlyName !== '') json.friendly_name = factor.friendlyName
  json.factor_type = factor.factorType
  json.phone = factor.phone
  json.last_challenged_at = factor.lastChallengedAt?.toISOString() ?? null
  return json
}

/** The session response of `POST /token` and of sign-ups that sign in (upstream `AccessTokenResponse`). */
export interface TokenResponse {
  access_token: string
  token_type: 'bearer'
  /** Seconds until `expires_at`. */
  expires_in: number
  /** Unix time (seconds) the access token expires. */
  expires_at: number
  refresh_token: string
  user: UserJson
  /**
   * Present on a password sign-in whose password no longer meets the policy or is known leaked
   * (upstream's `message` and `reasons`; auth-js needs both to report `weakPassword`).
   */
  weak_password?: { message: string; reasons: WeakPasswordReason[] }
  /** On a `POST /verify` session: what was verified (`signup`, `magiclink`, …), as the spec says. */
  type?: string
  /** The external provider's tokens, on a session of an OAuth sign-in (PKCE exchange). */
  provider_token?: string
  provider_refresh_token?: string
}

/** Renders an identity. */
export function serializeIdentity(identity: Identity): IdentityJson {
  const json: IdentityJson = {
    identity_id: identity.id,
    id: identity.providerId,
    user_id: identity.userId,
    identity_data: identity.identityData,
    provider: identity.provider,
  } as IdentityJson
  if (identity.lastSignInAt !== null) json.last_sign_in_at = identity.lastSignInAt.toISOString()
  json.created_at = identity.createdAt.toISOString()
  json.updated_at = identity.updatedAt.toISOString()
  if (identity.email !== '') json.email = identity.email
  return json
}

/** The optional timestamps of {@link UserJson}. */
type UserTimestamp = Exclude<
  { [K in keyof UserJson]-?: undefined extends UserJson[K] ? K : never }[keyof UserJson],
  'new_email' | 'new_phone' | 'factors'
>

/** Renders a user with its factors and identities (keys in upstream's order). */
export function serializeUser(
  user: User,
  identities: readonly Identity[],
  factors: readonly Factor[] = [],
): UserJson {
  const json = { id: user.id, aud: user.aud, role: user.role, email: user.email } as UserJson
  const at = (key: UserTimestamp, value: Date | null): void => {
    if (value !== null) json[key] = value.toISOString()
  }
  at('email_confirmed_at', user.emailConfirmedAt)
  at('invited_at', user.invitedAt)
  json.phone = user.phone
  at('phone_confirmed_at', user.phoneConfirmedAt)
  at('confirmation_sent_at', user.confirmationSentAt)
  at('confirmed_at', user.confirmedAt)
  at('recovery_sent_at', user.recoverySentAt)
  if (user.emailChange !== '') json.new_email = user.emailChange
  at('email_change_sent_at', user.emailChangeSentAt)
  if (user.phoneChange !== '') json.new_phone = user.phoneChange
  at('phone_change_sent_at', user.phoneChangeSentAt)
  at('reauthentication_sent_at', user.reauthenticationSentAt)
  at('last_sign_in_at', user.lastSignInAt)
  json.app_metadata = user.appMetadata
  json.user_metadata = user.userMetadata
  if (factors.length > 0) json.factors = factors.map(serializeFactor)
  json.identities = identities.map(serializeIdentity)
  json.created_at = user.createdAt.toISOString()
  json.updated_at = user.updatedAt.toISOString()
  at('banned_until', user.bannedUntil)
  at('deleted_at', user.deletedAt)
  json.is_anonymous = user.isAnonymous
  return json
}

/**
 * Renders an issued session as the token response.
 *
 * @param weakPassword Why the password used to sign in no longer meets the policy.
 */
export function serializeSession(
  session: IssuedSession,
  weakPassword?: WeakPassword,
): TokenResponse {
  const response: TokenResponse = {
    access_token: session.accessToken,
    token_type: 'bearer',
    expires_in: session.expiresIn,
    expires_at: session.expiresAt,
    refresh_token: session.refreshToken,
    user: serializeUser(session.user, session.identities, session.factors),
  }
  if (weakPassword !== undefined) {
    response.weak_password = { message: weakPassword.message, reasons: [...weakPassword.reasons] }
  }
  if (session.providerToken) response.provider_token = session.providerToken
  if (session.providerRefreshToken) response.provider_refresh_token = session.providerRefreshToken
  return response
}

/**
 * A session of a device list (`GET /user/sessions`, `GET /admin/users/{id}/sessions`): upstream's
 * session fields (`id`, `created_at`, `updated_at`, `refreshed_at`, `not_after`, `aal`,
 * `factor_id`, `user_agent`, `ip`, `tag`; absent ones `null`) and `current`, true on the caller's
 * own session.
 */
export interface DeviceSessionJson {
  id: string
  created_at: string
  updated_at: string
  refreshed_at: string | null
  not_after: string | null
  aal: string
  factor_id: string | null
  user_agent: string | null
  ip: string | null
  tag: string | null
  current: boolean
}

/** Renders a listed session (see {@link DeviceSessionJson}). */
export function serializeDeviceSession(s: ListedSession): DeviceSessionJson {
  return {
    id: s.id,
    created_at: s.createdAt.toISOString(),
    updated_at: s.updatedAt.toISOString(),
    refreshed_at: s.refreshedAt?.toISOString() ?? null,
    not_after: s.notAfter?.toISOString() ?? null,
    aal: s.aal,
    factor_id: s.factorId,
    user_agent: s.userAgent === '' ? null : s.userAgent,
    ip: s.ip === '' ? null : s.ip,
    tag: s.tag,
    current: s.current,
  }
}

/**
 * An SSO provider as upstream's `SSOProvider` JSON: `id`, `resource_id` (when set), `disabled`,
 * `saml` (`entity_id`, `metadata_xml` unless `withMetadata` is false, `metadata_url` and
 * `name_id_format` when set, `attribute_mapping`), `domains` (`[{ domain }]`), the timestamps.
 */
export function serializeSsoProvider(provider: SsoProvider, withMetadata = true): JsonObject {
  return {
    id: provider.id,
    ...(provider.resourceId === null ? {} : { resource_id: provider.resourceId }),
    disabled: provider.disabled,
    saml: {
      entity_id: provider.entityId,
      ...(withMetadata ? { metadata_xml: provider.metadataXml } : {}),
      ...(provider.metadataUrl === null ? {} : { metadata_url: provider.metadataUrl }),
      attribute_mapping: provider.attributeMapping,
      ...(provider.nameIdFormat === null ? {} : { name_id_format: provider.nameIdFormat }),
    },
    domains: provider.domains.map((domain) => ({ domain })),
    created_at: provider.createdAt.toISOString(),
    updated_at: provider.updatedAt.toISOString(),
  }
}
