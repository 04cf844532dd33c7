/**
 * WebAuthn factors (upstream `api/mfa.go`, factor type `webauthn`): the options of a challenge
 * (`create` for an unverified factor, `request` for a verified one) and the check of the answer,
 * both through `@simplewebauthn/server`. The credential is kept on the factor
 * (`web_authn_credential`); its sign counter must move forward at every verification.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/mfa.go
 * @module
 */
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '../security/webauthn-library.js'
import type { AppContext } from '../context.js'
import { BadRequestError } from '../errors.js'
import type { ChallengeWebauthnData } from '../models/challenge.js'
import type { Factor, FactorWebauthnCredential } from '../models/factor.js'
import type { JsonObject } from '../models/json.js'
import type { User } from '../models/user.js'
import {
  base64url,
  hasCredentialShape,
  newChallenge,
  relyingParty,
  userHandle,
} from './shared/webauthn.js'

/** What a WebAuthn factor's challenge answers besides its id (upstream `WebAuthnChallengeData`). */
export interface WebauthnFactorOptions {
  readonly type: 'create' | 'request'
  /** `{ publicKey: … }`, as `navigator.credentials.create()` or `.get()` take them (JSON). */
  readonly credentialOptions: { readonly publicKey: unknown }
}

/**
 * The ceremony of a challenge: registration options for an unverified factor (excluding the
 * user's other WebAuthn credentials), request options for this factor's credential otherwise.
 *
 * @param others The user's other factors.
 * @returns The options for the client and the data the challenge row keeps.
 */
export async function webauthnFactorOptions(
  ctx: AppContext,
  user: User,
  factor: Factor,
  others: readonly Factor[],
): Promise<{ options: WebauthnFactorOptions; data: ChallengeWebauthnData }> {
  const rp = relyingParty(ctx)
  const bytes = newChallenge(ctx)
  const timeout = ctx.settings.mfa.challengeExpiryMs
  const credential = factor.status === 'verified' ? factor.webauthnCredential : null
  if (credential === null) {
    const publicKey = await generateRegistrationOptions({
      rpName: rp.name,
      rpID: rp.id,
      userName: user.email !== '' ? user.email : user.phone,
      userID: userHandle(user.id),
      challenge: bytes,
      timeout,
      attestationType: 'none',
      excludeCredentials: others.flatMap((f) =>
        f.webauthnCredential ? [{ id: f.webauthnCredential.id }] : [],
      ),
      authenticatorSelection: { residentKey: 'discouraged', userVerification: 'preferred' },
    })
    return {
      options: { type: 'create', credentialOptions: { publicKey } },
      data: { type: 'create', challenge: base64url(bytes) },
    }
  }
  const publicKey = await generateAuthenticationOptions({
    rpID: rp.id,
    challenge: bytes,
    timeout,
    userVerification: 'preferred',
    allowCredentials: [{ id: credential.id, transports: [...credential.transports] }],
  })
  return {
    options: { type: 'request', credentialOptions: { publicKey } },
    data: { type: 'request', challenge: base64url(bytes) },
  }
}

/** The `webauthn` of a verify request: `{type, credential_response}`. */
export interface WebauthnAnswer {
  readonly type: 'create' | 'request'
  readonly credentialResponse: JsonObject
}

/**
 * Checks the `webauthn` field of a verify request as upstream does.
 *
 * @throws {@link BadRequestError} `validation_failed` "WebAuthn config required", "WebAuthn type
 *   must be create or request", "credential_response required".
 */
export function readWebauthnAnswer(webauthn: JsonObject | null | undefined): WebauthnAnswer {
  if (webauthn === null || webauthn === undefined) {
    throw new BadRequestError('validation_failed', 'WebAuthn config required')
  }
  const { type, credential_response: response } = webauthn
  if (type !== 'create' && type !== 'request') {
    throw new BadRequestError('validation_failed', 'WebAuthn type must be create or request')
  }
  if (typeof response !== 'object' || response === null || Array.isArray(response)) {
    throw new BadRequestError('validation_failed', 'credential_response required')
  }
  return { type, credentialResponse: response as JsonObject }
}

/**
 * Checks a WebAuthn answer against its challenge and the factor: a new credential (`create`)
 * or an assertion of the factor's credential (`request`) whose counter moved forward.
 *
 * @returns The credential to store (with its new counter), or `undefined` when the answer is
 *   wrong (of the other ceremony, another origin, RP id or challenge, a bad signature, a counter
 *   that did not move).
 */
export async function checkWebauthnAnswer(
  ctx: AppContext,
  factor: Factor,
  challenge: ChallengeWebauthnData,
  answer: WebauthnAnswer,
): Promise<{ credential: FactorWebauthnCredential; aaguid: string } | undefined> {
  if (answer.type !== challenge.type) return undefined
  const rp = relyingParty(ctx)
  const base = { expectedChallenge: challenge.challenge, expectedOrigin: rp.origins }
  try {
    if (answer.type === 'create') {
      if (!hasCredentialShape(answer.credentialResponse, ['clientDataJSON', 'attestationObject'])) {
        return undefined
      }
      const { verified, registrationInfo } = await verifyRegistrationResponse({
        ...base,
        response: answer.credentialResponse as unknown as RegistrationResponseJSON,
        expectedRPID: rp.id,
        requireUserVerification: false,
      })
      if (!verified) return undefined
      const transports = (answer.credentialResponse.response as { transports?: unknown }).transports
      return {
        credential: {
          id: registrationInfo.credential.id,
          publicKey: base64url(registrationInfo.credential.publicKey),
          counter: registrationInfo.credential.counter,
          transports: Array.isArray(transports)
            ? transports.filter((t): t is string => typeof t === 'string')
            : [],
        },
        aaguid: registrationInfo.aaguid,
      }
    }
    const stored = factor.webauthnCredential
    if (
      stored === null ||
      !hasCredentialShape(answer.credentialResponse, [
        'clientDataJSON',
        'authenticatorData',
        'signature',
      ]) ||
      answer.credentialResponse.id !== stored.id
    ) {
      return undefined
    }
    const { verified, authenticationInfo } = await verifyAuthenticationResponse({
      ...base,
      response: answer.credentialResponse as unknown as AuthenticationResponseJSON,
      expectedRPID: rp.id,
      credential: {
        id: stored.id,
        publicKey: new Uint8Array(Buffer.from(stored.publicKey, 'base64url')),
        counter: stored.counter,
        transports: [...stored.transports],
      },
      requireUserVerification: false,
    })
    if (!verified) return undefined
    return { credential: { ...stored, counter: authenticationInfo.newCounter }, aaguid: '' }
  } catch {
    // The library throws for every wrong answer (origin, challenge, signature, counter, …).
    return undefined
  }
}
