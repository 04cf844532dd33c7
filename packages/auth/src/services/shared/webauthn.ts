/**
 * What passkeys and WebAuthn factors share: the relying party (`WEBAUTHN_RP_*`), the server-side
 * challenges (stored, single use, expiring after `WEBAUTHN_CHALLENGE_EXPIRY_DURATION`) and the
 * checks of a request's `challenge_id` and `credential`. Every attestation and assertion is
 * checked by `@simplewebauthn/server`, never here.
 *
 * @module
 */
import type { AppContext } from '../../context.js'
import { BadRequestError } from '../../errors.js'
import type { JsonObject } from '../../models/json.js'
import {
  consumeWebauthnChallenge,
  insertWebauthnChallenge,
  type WebauthnChallenge,
  type WebauthnChallengeType,
} from '../../models/webauthn-challenge.js'
import { isUuid } from './validation.js'

/** Bytes of a challenge (WebAuthn asks for at least 16). */
const CHALLENGE_BYTES = 32

/** The relying party every ceremony is checked against. */
export interface RelyingParty {
  readonly id: string
  readonly name: string
  readonly origins: string[]
}

/** `WEBAUTHN_RP_ID`, `WEBAUTHN_RP_DISPLAY_NAME`, `WEBAUTHN_RP_ORIGINS`. */
export function relyingParty(ctx: AppContext): RelyingParty {
  const { webauthn } = ctx.settings
  return { id: webauthn.rpId, name: webauthn.rpDisplayName, origins: [...webauthn.rpOrigins] }
}

/** Base64url without padding, as WebAuthn's JSON encodes bytes. */
export function base64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64url')
}

/** A new random challenge, from the injected randomness. */
export function newChallenge(ctx: AppContext): Uint8Array<ArrayBuffer> {
  return new Uint8Array(ctx.random.bytes(CHALLENGE_BYTES))
}

/**
 * The WebAuthn user handle of a user: the bytes of its id as text, as upstream's
 * `WebAuthnID()`.
 */
export function userHandle(userId: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(new TextEncoder().encode(userId))
}

/**
 * Stores a challenge for a ceremony.
 *
 * @param userId The user it is bound to; `null` for a username-less sign-in.
 * @returns Its id and when it expires (Unix seconds): now plus
 *   `WEBAUTHN_CHALLENGE_EXPIRY_DURATION`.
 */
export async function storeChallenge(
  ctx: AppContext,
  challengeType: WebauthnChallengeType,
  userId: string | null,
  challenge: Uint8Array,
): Promise<{ challengeId: string; expiresAt: number }> {
  const now = ctx.clock.now()
  const stored = await insertWebauthnChallenge(
    ctx.db,
    {
      id: ctx.random.uuid(),
      userId,
      challengeType,
      sessionData: { challenge: base64url(challenge) },
      expiresAt: now + ctx.settings.webauthn.challengeExpiryMs,
    },
    now,
  )
  return { challengeId: stored.id, expiresAt: Math.floor(stored.expiresAt.getTime() / 1000) }
}

/** The `challenge_id` and `credential` of a verify request, checked as upstream checks them. */
export interface CeremonyAnswer {
  readonly challengeId: string
  readonly credential: JsonObject | null | undefined
}

/**
 * Checks a verify request's fields, then consumes its challenge: deleted at once (committed
 * before the credential is checked), so that it is answered at most once, even when the answer
 * is wrong.
 *
 * @returns The challenge and the credential.
 * @throws {@link BadRequestError} `validation_failed` ("challenge_id is required", "credential is
 *   required", "challenge_id must be a valid UUID"), `webauthn_challenge_not_found` ("Challenge
 *   not found or already used"), `webauthn_challenge_expired` ("Challenge has expired").
 */
export async function consumeChallenge(
  ctx: AppContext,
  answer: CeremonyAnswer,
  challengeType: WebauthnChallengeType,
  userId: string | null,
): Promise<{ challenge: WebauthnChallenge; credential: JsonObject }> {
  if (answer.challengeId === '') {
    throw new BadRequestError('validation_failed', 'challenge_id is required')
  }
  const { credential } = answer
  if (credential === null || credential === undefined) {
    throw new BadRequestError('validation_failed', 'credential is required')
  }
  if (!isUuid(answer.challengeId)) {
    throw new BadRequestError('validation_failed', 'challenge_id must be a valid UUID')
  }
  const challenge = await consumeWebauthnChallenge(
    ctx.db,
    answer.challengeId,
    challengeType,
    userId,
  )
  if (!challenge) {
    throw new BadRequestError('webauthn_challenge_not_found', 'Challenge not found or already used')
  }
  if (challenge.expiresAt.getTime() <= ctx.clock.now()) {
    throw new BadRequestError('webauthn_challenge_expired', 'Challenge has expired')
  }
  return { challenge, credential }
}

/** 400 `webauthn_verification_failed` "Credential verification failed" (the cause is logged). */
export function verificationFailed(cause?: unknown): BadRequestError {
  return new BadRequestError('webauthn_verification_failed', 'Credential verification failed', {
    cause,
  })
}

/** 400 `webauthn_verification_failed` "Invalid credential response": not a credential's shape. */
export function invalidCredential(): BadRequestError {
  return new BadRequestError('webauthn_verification_failed', 'Invalid credential response')
}

const BASE64URL = /^[A-Za-z0-9_-]+={0,2}$/

/** Whether a JSON value is a non-empty base64url string. */
export function isBase64url(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && BASE64URL.test(value)
}

/**
 * Whether a credential has the shape of a `PublicKeyCredential` in JSON (`id`, `rawId`, `type`
 * `public-key`, a `response` object) with the given byte fields in its `response`; the library
 * then checks what they say.
 */
export function hasCredentialShape(credential: JsonObject, fields: readonly string[]): boolean {
  const { id, rawId, type, response } = credential
  if (!isBase64url(id) || !isBase64url(rawId) || type !== 'public-key') return false
  if (typeof response !== 'object' || response === null || Array.isArray(response)) return false
  const r = response as JsonObject
  return fields.every((f) => isBase64url(r[f]))
}
