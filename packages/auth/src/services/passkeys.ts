/**
 * Passkeys (upstream `api/passkey_*.go`): a signed-in user registers discoverable WebAuthn
 * credentials, then signs in with one without a username (`amr` `passkey`), lists, renames and
 * deletes them; an admin lists and deletes a user's. Every attestation and assertion is checked
 * by `@simplewebauthn/server` against the stored, single-use challenge, `WEBAUTHN_RP_ID` and
 * `WEBAUTHN_RP_ORIGINS`, with user verification required and the sign counter never going back.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/passkey_registration.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/passkey_authentication.go
 * @module
 */
import { passkeyName } from './shared/passkey-names.js'
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server'
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '../security/webauthn-library.js'
import type { AppContext, RequestContext } from '../context.js'
import {
  BadRequestError,
  ForbiddenError,
  NotFoundError,
  UnprocessableEntityError,
} from '../errors.js'
import { auditActor, type AuditActor } from '../models/audit-log.js'
import { hasVerifiedFactor } from '../models/factor.js'
import type { Session } from '../models/session.js'
import { getUserById, isBanned, type User } from '../models/user.js'
import {
  countWebauthnCredentialsOfUser,
  deleteWebauthnCredential,
  findWebauthnCredentialOfUser,
  insertWebauthnCredential,
  listWebauthnCredentialsOfUser,
  lockWebauthnCredentialByCredentialId,
  markWebauthnCredentialUsed,
  renameWebauthnCredential,
  type WebauthnCredential,
} from '../models/webauthn-credential.js'
import type { IssuedSession } from '../sessions/token-service.js'
import { isUuid } from './shared/validation.js'
import {
  base64url,
  consumeChallenge,
  hasCredentialShape,
  invalidCredential,
  newChallenge,
  relyingParty,
  storeChallenge,
  userHandle,
  verificationFailed,
  type CeremonyAnswer,
} from './shared/webauthn.js'

/** The longest friendly name, in UTF-8 bytes (upstream: 120, counted as Go counts `len`). */
const MAX_FRIENDLY_NAME = 120

/** Who manages passkeys: the bearer token's user and session. */
export interface PasskeyCaller {
  readonly user: User
  readonly session: Session | undefined
}

/** What an options request answers: the challenge's id, the options, and their expiry. */
export interface CeremonyOptions<T> {
  readonly challengeId: string
  readonly options: T
  /** Unix time (seconds) after which the challenge is refused. */
  readonly expiresAt: number
}

/**
 * Registering and deleting passkeys needs `aal2` once the user has a verified factor.
 *
 * @throws {@link ForbiddenError} 403 `insufficient_aal`.
 */
async function requireManagementAal(ctx: AppContext, caller: PasskeyCaller): Promise<void> {
  if (caller.session?.aal === 'aal2') return
  if (!(await hasVerifiedFactor(ctx.db, caller.user.id))) return
  throw new ForbiddenError(
    'insufficient_aal',
    'AAL2 session is required to manage passkeys when MFA is enabled',
  )
}

function refuseSsoUser(user: User): void {
  if (user.isSsoUser) {
    throw new UnprocessableEntityError('validation_failed', 'SSO users cannot register passkeys')
  }
}

function tooManyPasskeys(): UnprocessableEntityError {
  return new UnprocessableEntityError('too_many_passkeys', 'Maximum number of passkeys reached')
}

function passkeyNotFound(): NotFoundError {
  return new NotFoundError('validation_failed', 'Passkey not found')
}

/** The name WebAuthn shows for the user: email, else phone (upstream `WebAuthnName`). */
function userName(user: User): string {
  return user.email !== '' ? user.email : user.phone
}

/** `user_metadata.name` when set, else {@link userName} (upstream `WebAuthnDisplayName`). */
function displayName(user: User): string {
  const name = user.userMetadata.name
  return typeof name === 'string' && name !== '' ? name : userName(user)
}

/**
 * Begins a registration (`POST /passkeys/registration/options`): creation options for a
 * discoverable credential with user verification, excluding the user's passkeys.
 *
 * @throws {@link UnprocessableEntityError} `too_many_passkeys` (`PASSKEY_MAX_PASSKEYS_PER_USER`),
 *   `validation_failed` (SSO users); {@link ForbiddenError} `insufficient_aal`.
 */
export async function passkeyRegistrationOptions(
  ctx: AppContext,
  caller: PasskeyCaller,
): Promise<CeremonyOptions<PublicKeyCredentialCreationOptionsJSON>> {
  const { user } = caller
  refuseSsoUser(user)
  await requireManagementAal(ctx, caller)
  const existing = await listWebauthnCredentialsOfUser(ctx.db, user.id)
  if (existing.length >= ctx.settings.passkey.maxPasskeysPerUser) throw tooManyPasskeys()
  const rp = relyingParty(ctx)
  const challenge = newChallenge(ctx)
  const options = await generateRegistrationOptions({
    rpName: rp.name,
    rpID: rp.id,
    userName: userName(user),
    userID: userHandle(user.id),
    userDisplayName: displayName(user),
    challenge,
    timeout: ctx.settings.webauthn.challengeExpiryMs,
    attestationType: 'none',
    excludeCredentials: existing.map((c) => ({
      id: base64url(c.credentialId),
      transports: [...c.transports],
    })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
  })
  return { ...(await storeChallenge(ctx, 'registration', user.id, challenge)), options }
}

/**
 * Completes a registration (`POST /passkeys/registration/verify`): the attestation is checked
 * (format `none`, or verified by the library), the passkey stored with a `passkey_created` audit
 * entry.
 *
 * @returns The new passkey.
 * @throws {@link BadRequestError} `validation_failed`, `webauthn_challenge_not_found`,
 *   `webauthn_challenge_expired`, `webauthn_verification_failed`;
 *   {@link UnprocessableEntityError} `too_many_passkeys`, `webauthn_credential_exists`;
 *   {@link ForbiddenError} `insufficient_aal`.
 */
export async function passkeyRegistrationVerify(
  ctx: AppContext,
  caller: PasskeyCaller,
  answer: CeremonyAnswer,
  ip: string,
): Promise<WebauthnCredential> {
  const { user } = caller
  refuseSsoUser(user)
  await requireManagementAal(ctx, caller)
  const { challenge, credential } = await consumeChallenge(ctx, answer, 'registration', user.id)
  if (!hasCredentialShape(credential, ['clientDataJSON', 'attestationObject'])) {
    throw invalidCredential()
  }
  const rp = relyingParty(ctx)
  let info
  try {
    const verified = await verifyRegistrationResponse({
      response: credential as unknown as RegistrationResponseJSON,
      expectedChallenge: challenge.sessionData.challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.id,
      requireUserVerification: true,
    })
    if (!verified.verified) throw new Error('attestation not verified')
    info = verified.registrationInfo
  } catch (error) {
    throw verificationFailed(error)
  }
  const transports = (credential.response as { transports?: unknown }).transports
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    // The user's lock serialises registrations, so that the limit holds.
    await getUserById(tx, user.id, true)
    if (
      (await countWebauthnCredentialsOfUser(tx, user.id)) >= ctx.settings.passkey.maxPasskeysPerUser
    ) {
      throw tooManyPasskeys()
    }
    const created = await insertWebauthnCredential(
      tx,
      {
        id: ctx.random.uuid(),
        userId: user.id,
        credentialId: Buffer.from(info.credential.id, 'base64url'),
        publicKey: info.credential.publicKey,
        attestationType: info.fmt,
        aaguid: info.aaguid,
        signCount: info.credential.counter,
        transports: Array.isArray(transports)
          ? transports.filter((t): t is string => typeof t === 'string')
          : [],
        backupEligible: info.credentialDeviceType === 'multiDevice',
        backedUp: info.credentialBackedUp,
        friendlyName: passkeyName(info.aaguid),
      },
      now,
    )
    if (!created) {
      throw new UnprocessableEntityError(
        'webauthn_credential_exists',
        'This credential is already registered',
      )
    }
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(user),
        action: 'passkey_created',
        traits: { passkey_id: created.id },
        ip,
      },
      now,
    )
    return created
  })
}

/**
 * Begins a username-less sign-in (`POST /passkeys/authentication/options`): request options
 * without `allowCredentials`, user verification required; the challenge is bound to no user.
 */
export async function passkeyAuthenticationOptions(
  ctx: AppContext,
): Promise<CeremonyOptions<PublicKeyCredentialRequestOptionsJSON>> {
  const challenge = newChallenge(ctx)
  const options = await generateAuthenticationOptions({
    rpID: relyingParty(ctx).id,
    challenge,
    timeout: ctx.settings.webauthn.challengeExpiryMs,
    userVerification: 'required',
  })
  return { ...(await storeChallenge(ctx, 'authentication', null, challenge)), options }
}

/**
 * Completes a sign-in (`POST /passkeys/authentication/verify`): the assertion's credential and
 * user handle name the passkey and its user, the library checks the signature, origin, RP id,
 * user verification and that the sign counter moved forward (a counter that does not, as from a
 * cloned authenticator, is refused); then the counter is stored and a session starts with `amr`
 * `passkey`, as `/token` answers.
 *
 * @throws {@link BadRequestError} `validation_failed`, `webauthn_challenge_not_found`,
 *   `webauthn_challenge_expired`, `webauthn_verification_failed` (also for an unknown or deleted
 *   passkey); {@link ForbiddenError} `email_not_confirmed`, `phone_not_confirmed`, `user_banned`.
 */
export async function passkeyAuthenticationVerify(
  ctx: AppContext,
  answer: CeremonyAnswer,
  client: RequestContext,
): Promise<IssuedSession> {
  const { challenge, credential } = await consumeChallenge(ctx, answer, 'authentication', null)
  if (
    !hasCredentialShape(credential, [
      'clientDataJSON',
      'authenticatorData',
      'signature',
      'userHandle',
    ])
  ) {
    throw invalidCredential()
  }
  const rp = relyingParty(ctx)
  const response = credential as unknown as AuthenticationResponseJSON
  const handle = Buffer.from(response.response.userHandle ?? '', 'base64url').toString('utf8')
  const pending = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    // Locked from the counter check to its update: two assertions cannot both move it.
    const passkey = await lockWebauthnCredentialByCredentialId(
      tx,
      Buffer.from(response.rawId, 'base64url'),
    )
    if (!passkey || passkey.userId !== handle) throw verificationFailed('unknown passkey')
    let info
    try {
      const verified = await verifyAuthenticationResponse({
        response,
        expectedChallenge: challenge.sessionData.challenge,
        expectedOrigin: rp.origins,
        expectedRPID: rp.id,
        credential: {
          id: base64url(passkey.credentialId),
          publicKey: passkey.publicKey,
          counter: passkey.signCount,
          transports: [...passkey.transports],
        },
        requireUserVerification: true,
      })
      if (!verified.verified) throw new Error('assertion not verified')
      info = verified.authenticationInfo
    } catch (error) {
      throw verificationFailed(error)
    }
    const user = await getUserById(tx, passkey.userId)
    if (user.email !== '' && user.emailConfirmedAt === null) {
      throw new ForbiddenError('email_not_confirmed', 'Email not confirmed')
    }
    if (user.phone !== '' && user.phoneConfirmedAt === null) {
      throw new ForbiddenError('phone_not_confirmed', 'Phone not confirmed')
    }
    if (isBanned(user, now)) throw new ForbiddenError('user_banned', 'User is banned')
    await markWebauthnCredentialUsed(tx, passkey.id, info.newCounter, info.credentialBackedUp, now)
    return ctx.tokens.startSession(tx, user, 'passkey', client)
  })
  return ctx.tokens.finish(pending)
}

/** The caller's passkeys (`GET /passkeys`). */
export async function listPasskeys(ctx: AppContext, userId: string): Promise<WebauthnCredential[]> {
  return listWebauthnCredentialsOfUser(ctx.db, userId)
}

/**
 * Renames one of the caller's passkeys (`PATCH /passkeys/<id>`), with a `passkey_updated` audit
 * entry.
 *
 * @throws {@link NotFoundError} 404 `validation_failed` "Passkey not found";
 *   {@link BadRequestError} `validation_failed` (name empty or longer than 120 characters).
 */
export async function renamePasskey(
  ctx: AppContext,
  user: User,
  passkeyId: string,
  friendlyName: string,
  ip: string,
): Promise<WebauthnCredential> {
  if (!isUuid(passkeyId)) throw passkeyNotFound()
  if (friendlyName === '') {
    throw new BadRequestError('validation_failed', 'friendly_name is required')
  }
  if (Buffer.byteLength(friendlyName) > MAX_FRIENDLY_NAME) {
    throw new BadRequestError('validation_failed', 'friendly_name must be 120 characters or less')
  }
  return ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const found = await findWebauthnCredentialOfUser(tx, user.id, passkeyId, true)
    if (!found) throw passkeyNotFound()
    const renamed = await renameWebauthnCredential(tx, found.id, friendlyName, now)
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(user),
        action: 'passkey_updated',
        traits: { passkey_id: found.id },
        ip,
      },
      now,
    )
    return renamed ?? found
  })
}

/** Deletes a user's passkey with a `passkey_deleted` audit entry (both delete paths). */
async function removePasskey(
  ctx: AppContext,
  userId: string,
  passkeyId: string,
  actor: AuditActor,
  traits: Record<string, unknown>,
  ip: string,
): Promise<void> {
  if (!isUuid(passkeyId)) throw passkeyNotFound()
  await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const found = await findWebauthnCredentialOfUser(tx, userId, passkeyId, true)
    if (!found) throw passkeyNotFound()
    await deleteWebauthnCredential(tx, found.id)
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor,
        action: 'passkey_deleted',
        traits: { ...traits, passkey_id: found.id },
        ip,
      },
      now,
    )
  })
}

/**
 * Deletes one of the caller's passkeys (`DELETE /passkeys/<id>`).
 *
 * @throws {@link ForbiddenError} `insufficient_aal`; {@link NotFoundError} "Passkey not found".
 */
export async function deletePasskey(
  ctx: AppContext,
  caller: PasskeyCaller,
  passkeyId: string,
  ip: string,
): Promise<void> {
  await requireManagementAal(ctx, caller)
  await removePasskey(ctx, caller.user.id, passkeyId, auditActor(caller.user), {}, ip)
}

/**
 * A user's passkeys, for the admin API (`GET /admin/users/<id>/passkeys`).
 *
 * @throws {@link UserNotFoundError} When the user does not exist.
 */
export async function listPasskeysAsAdmin(
  ctx: AppContext,
  userId: string,
): Promise<WebauthnCredential[]> {
  await getUserById(ctx.db, userId)
  return listWebauthnCredentialsOfUser(ctx.db, userId)
}

/**
 * Deletes a user's passkey as an admin (`DELETE /admin/users/<id>/passkeys/<passkey_id>`).
 *
 * @throws {@link UserNotFoundError}; {@link NotFoundError} "Passkey not found".
 */
export async function deletePasskeyAsAdmin(
  ctx: AppContext,
  userId: string,
  passkeyId: string,
  actor: AuditActor,
  ip: string,
): Promise<void> {
  await getUserById(ctx.db, userId)
  await removePasskey(ctx, userId, passkeyId, actor, { user_id: userId }, ip)
}
