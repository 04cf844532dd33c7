import { UnsecuredJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { loadSettings } from '../conf/settings.js'
import { AuthError } from '../errors.js'
import { primaryClientId } from './base.js'
import {
  idTokenUserData,
  resolveIdTokenProvider,
  type IdTokenProvider,
  type IdTokenProviderSource,
} from './id-token.js'

function settings(env: Record<string, string> = {}) {
  const enabled: Record<string, string> = {}
  for (const p of ['apple', 'google', 'azure', 'facebook', 'keycloak', 'snapchat']) {
    const name = `AUTHSVC_EXTERNAL_${p.toUpperCase()}`
    enabled[`${name}_ENABLED`] = 'true'
    enabled[`${name}_CLIENT_ID`] = `${p}-web,${p}-ios`
    enabled[`${name}_SECRET`] = 's'
    enabled[`${name}_REDIRECT_URI`] = 'https://auth.example.com/callback'
  }
  return loadSettings({
    AUTHSVC_SITE_URL: 'https://example.com',
    AUTHSVC_API_EXTERNAL_URL: 'https://auth.example.com',
    AUTHSVC_JWT_SECRET: 'x'.repeat(40),
    AUTHSVC_DB_DRIVER: 'postgres',
    DATABASE_URL: 'postgres://localhost/db',
    AUTHSVC_EXTERNAL_KEYCLOAK_URL: 'https://kc.example.com/realms/main',
    ...enabled,
    ...Object.fromEntries(Object.entries(env).map(([k, v]) => [`AUTHSVC_${k}`, v])),
  })
}

/** An unsigned token carrying `iss` (issuer detection reads it before verification). */
const withIssuer = (iss: string) => new UnsecuredJWT({ iss }).encode()

async function refusal(promise: Promise<unknown>) {
  const error = await promise.catch((e: unknown) => e)
  expect(error).toBeInstanceOf(AuthError)
  return { code: (error as AuthError).code, message: (error as AuthError).message }
}

describe('resolveIdTokenProvider', () => {
  const resolve = (
    request: Partial<{ provider: string; issuer: string; idToken: string }>,
    env?: Record<string, string>,
    custom?: IdTokenProviderSource,
  ) =>
    resolveIdTokenProvider(
      settings(env),
      { provider: '', issuer: '', idToken: '', ...request },
      custom,
    )

  it('accepts both Apple issuers (detected in the token) and the iOS bundle id', async () => {
    for (const iss of ['https://appleid.apple.com', 'https://account.apple.com']) {
      await expect(
        resolve({ provider: 'apple', idToken: withIssuer(iss) }, { EXTERNAL_IOS_BUNDLE_ID: 'b' }),
      ).resolves.toMatchObject({
        name: 'apple',
        discoveryIssuer: 'https://appleid.apple.com',
        issuers: ['https://appleid.apple.com', 'https://account.apple.com'],
        clientIds: ['apple-web', 'apple-ios', 'b'],
      })
    }
    expect(
      await refusal(resolve({ provider: 'apple', idToken: withIssuer('https://evil.example') })),
    ).toEqual({
      code: 'validation_failed',
      message: 'Detected ID token issuer is not an Apple ID token issuer',
    })
    expect(
      await refusal(
        resolve({
          issuer: 'https://account.apple.com',
          idToken: withIssuer('https://appleid.apple.com'),
        }),
      ),
    ).toEqual({
      code: 'validation_failed',
      message: 'Provided issuer does not match ID token issuer',
    })
  })

  it("accepts Google's issuer with and without its scheme", async () => {
    await expect(resolve({ issuer: 'https://accounts.google.com' })).resolves.toMatchObject({
      name: 'google',
      issuers: ['https://accounts.google.com', 'accounts.google.com'],
      clientIds: ['google-web', 'google-ios'],
    })
  })

  it("accepts Azure's tenant issuers under Microsoft's prefixes, and EXTERNAL_AZURE_URL", async () => {
    for (const iss of [
      'https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0',
      'https://sts.windows.net/tenant/',
    ]) {
      await expect(resolve({ provider: 'azure', idToken: withIssuer(iss) })).resolves.toMatchObject(
        { name: 'azure', discoveryIssuer: iss, issuers: [iss] },
      )
    }
    expect(
      await refusal(
        resolve({ provider: 'azure', idToken: withIssuer('https://login.microsoftonline.evil/x') }),
      ),
    ).toEqual({
      code: 'validation_failed',
      message: 'Detected ID token issuer is not an Azure ID token issuer',
    })
    await expect(
      resolve(
        { provider: 'azure', idToken: withIssuer('https://sovereign.example/tenant/v2.0') },
        { EXTERNAL_AZURE_URL: 'https://sovereign.example' },
      ),
    ).resolves.toMatchObject({ discoveryIssuer: 'https://sovereign.example/tenant/v2.0' })
  })

  it('skips the nonce for Facebook, uses the realm for Keycloak, and refuses the disabled and the unknown', async () => {
    await expect(resolve({ provider: 'facebook' })).resolves.toMatchObject({
      skipNonceCheck: true,
      issuers: ['https://www.facebook.com'],
    })
    await expect(resolve({ issuer: 'https://kc.example.com/realms/main' })).resolves.toMatchObject({
      name: 'keycloak',
    })
    expect(await refusal(resolve({ provider: 'kakao' }))).toEqual({
      code: 'provider_disabled',
      message: 'Provider (issuer "https://kauth.kakao.com") is not enabled',
    })
    expect(
      await refusal(resolve({ provider: 'google' }, { EXTERNAL_GOOGLE_ENABLED: 'false' })),
    ).toEqual({
      code: 'provider_disabled',
      message: 'Provider (issuer "https://accounts.google.com") is not enabled',
    })
    expect(await refusal(resolve({ issuer: 'https://evil.example' }))).toEqual({
      code: 'validation_failed',
      message: 'Custom OIDC provider "" not allowed',
    })
  })

  it('asks the custom provider source for custom:<id>', async () => {
    const acme: IdTokenProvider = {
      name: 'custom:acme',
      discoveryIssuer: 'https://idp.acme.example',
      issuers: ['https://idp.acme.example'],
      clientIds: ['acme'],
      skipNonceCheck: false,
      claims: 'generic',
      trustEmail: false,
    }
    const asked: string[] = []
    const source: IdTokenProviderSource = {
      resolve: (id) => {
        asked.push(id)
        return Promise.resolve(acme)
      },
    }
    await expect(resolve({ provider: 'custom:acme' }, {}, source)).resolves.toBe(acme)
    expect(asked).toEqual(['custom:acme'])
  })

  it('gives the code flow the first of several client ids', () => {
    expect(primaryClientId({ clientId: ' web , ios,android' })).toBe('web')
    expect(primaryClientId({ clientId: '' })).toBe('')
  })
})

describe('idTokenUserData', () => {
  const provider = (claims: IdTokenProvider['claims'], trustEmail = false): IdTokenProvider => ({
    name: claims,
    discoveryIssuer: 'https://issuer.example',
    issuers: ['https://issuer.example'],
    clientIds: ['c'],
    skipNonceCheck: false,
    claims,
    trustEmail,
  })
  const base = { iss: 'https://issuer.example', sub: 's-1', aud: 'c', iat: 1, exp: 2 }
  const data = (
    family: IdTokenProvider['claims'],
    claims: Record<string, unknown>,
    trust = false,
  ) => idTokenUserData(provider(family, trust), { ...base, ...claims })

  it('maps Kakao, Vercel Marketplace, Facebook and Snapchat as upstream, their addresses assumed verified', () => {
    expect(data('kakao', { email: 'k@example.com', nickname: 'kim', picture: 'p' })).toEqual({
      id: 's-1',
      emails: [{ email: 'k@example.com', verified: true, primary: true, assumed: true }],
      claims: expect.objectContaining({
        name: 'kim',
        preferred_username: 'kim',
        picture: 'p',
        provider_id: 's-1',
      }) as unknown,
    })
    const vercel = data('vercel_marketplace', {
      global_user_id: 'g7',
      user_email: 'v@example.com',
      user_name: 'Vee',
    })
    expect(vercel.id).toBe('global_user_id:g7')
    expect(vercel.claims).toMatchObject({ sub: 'global_user_id:g7', name: 'Vee' })
    expect(data('facebook', { email: 'f@example.com' }, true).emails).toEqual([
      { email: 'f@example.com', verified: true, primary: true, assumed: false },
    ])
    expect(data('snapchat', { email: 's@example.com', locale: 'fr' }).claims).toMatchObject({
      locale: 'fr',
    })
  })

  it('reads Google email_verified and hd, and Azure xms_edov in both encodings', () => {
    expect(
      data('google', { email: 'g@example.com', email_verified: false, hd: 'example.com' }),
    ).toMatchObject({
      emails: [{ email: 'g@example.com', verified: false, primary: true }],
      claims: { custom_claims: { hd: 'example.com' } },
    })
    expect(data('azure', { email: 'a@example.com', xms_edov: false }).emails[0]?.verified).toBe(
      false,
    )
    expect(data('azure', { email: 'a@example.com', xms_edov: 'true' }).emails[0]?.verified).toBe(
      true,
    )
    expect(data('azure', { email: 'a@example.com' }).emails[0]?.verified).toBe(true)
  })
})
