import { describe, expect, it } from 'vitest'
import { loadSettings } from '../conf/settings.js'
import { BadRequestError } from '../errors.js'
import { primaryClientId } from './base.js'
import { resolveIdTokenIssuer, type CustomIdTokenIssuers, type IdTokenIssuer } from './id-token.js'

const settings = loadSettings({
  AUTHSVC_SITE_URL: 'https://example.com',
  AUTHSVC_API_EXTERNAL_URL: 'https://auth.example.com',
  AUTHSVC_JWT_SECRET: 'x'.repeat(40),
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'postgres://localhost/db',
  AUTHSVC_EXTERNAL_GOOGLE_ENABLED: 'true',
  AUTHSVC_EXTERNAL_GOOGLE_CLIENT_ID: 'web, ios',
  AUTHSVC_EXTERNAL_GOOGLE_SECRET: 's',
  AUTHSVC_EXTERNAL_GOOGLE_REDIRECT_URI: 'https://auth.example.com/callback',
})

const acme: IdTokenIssuer = {
  provider: 'custom:acme',
  issuer: 'https://idp.acme.example',
  discoveryIssuer: 'https://idp.acme.example',
  clientIds: ['acme-app'],
  skipNonceCheck: false,
}

describe('resolveIdTokenIssuer', () => {
  const request = (provider: string) => ({ provider, issuer: '', idToken: '' })

  it('asks the custom provider store for custom:<name>, and only for those', async () => {
    const asked: string[] = []
    const store: CustomIdTokenIssuers = {
      issuerOf: (identifier) => {
        asked.push(identifier)
        if (identifier !== 'custom:acme') {
          return Promise.reject(
            new BadRequestError('validation_failed', `Custom provider "${identifier}" not found`),
          )
        }
        return Promise.resolve(acme)
      },
    }
    await expect(resolveIdTokenIssuer(settings, request('custom:acme'), store)).resolves.toBe(acme)
    await expect(
      resolveIdTokenIssuer(settings, request('custom:other'), store),
    ).rejects.toMatchObject({
      code: 'validation_failed',
      message: 'Custom provider "custom:other" not found',
    })
    await expect(resolveIdTokenIssuer(settings, request('google'), store)).resolves.toMatchObject({
      provider: 'google',
      clientIds: ['web', 'ios'],
    })
    expect(asked).toEqual(['custom:acme', 'custom:other'])
  })

  it('answers custom providers as disabled without a store, as upstream with CUSTOM_OAUTH off', async () => {
    await expect(
      resolveIdTokenIssuer(settings, request('custom:acme'), undefined),
    ).rejects.toMatchObject({
      code: 'validation_failed',
      message: 'Custom OAuth providers are disabled',
    })
  })
})

describe('primaryClientId', () => {
  it('gives the code flow the first of several comma-separated client ids', () => {
    expect(primaryClientId({ clientId: ' web , ios,android' })).toBe('web')
    expect(primaryClientId({ clientId: 'only' })).toBe('only')
    expect(primaryClientId({ clientId: '' })).toBe('')
  })
})
