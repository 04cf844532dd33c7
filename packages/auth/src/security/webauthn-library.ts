/**
 * `@simplewebauthn/server`'s ceremonies, loaded at the first WebAuthn request rather than with the
 * server (importing the library takes about 0.3 s, which every start and every test would pay).
 * Each function is the library's own, with its arguments and answer.
 *
 * @see https://simplewebauthn.dev/docs/packages/server
 * @module
 */
import type * as SimpleWebAuthn from '@simplewebauthn/server'

/** The library, imported once (Node caches the module). */
const library = (): Promise<typeof SimpleWebAuthn> => import('@simplewebauthn/server')

/** `generateRegistrationOptions` of `@simplewebauthn/server`. */
export const generateRegistrationOptions: typeof SimpleWebAuthn.generateRegistrationOptions =
  async (options) => (await library()).generateRegistrationOptions(options)

/** `verifyRegistrationResponse` of `@simplewebauthn/server`. */
export const verifyRegistrationResponse: typeof SimpleWebAuthn.verifyRegistrationResponse = async (
  options,
) => (await library()).verifyRegistrationResponse(options)

/** `generateAuthenticationOptions` of `@simplewebauthn/server`. */
export const generateAuthenticationOptions: typeof SimpleWebAuthn.generateAuthenticationOptions =
  async (options) => (await library()).generateAuthenticationOptions(options)

/** `verifyAuthenticationResponse` of `@simplewebauthn/server`. */
export const verifyAuthenticationResponse: typeof SimpleWebAuthn.verifyAuthenticationResponse =
  async (options) => (await library()).verifyAuthenticationResponse(options)
