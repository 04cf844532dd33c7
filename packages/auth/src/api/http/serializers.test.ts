import { describe, expect, it } from 'vitest'
import type { Identity } from '../../models/identity.js'
import type { User } from '../../models/user.js'
import { serializeSession, serializeUser } from './serializers.js'

const created = new Date('2026-01-02T03:04:05.678Z')

const user: User = {
  id: '6f1c1a56-4a0e-4ad4-9a4b-3a0b0d9b8c01',
  aud: 'authenticated',
  role: 'authenticated',
  email: 'ada@example.com',
  encryptedPassword: '$2b$10$secret',
  emailConfirmedAt: created,
  invitedAt: null,
  confirmationToken: 'hash',
  confirmationSentAt: null,
  recoveryToken: '',
  recoverySentAt: null,
  emailChange: '',
  emailChangeTokenNew: '',
  emailChangeTokenCurrent: '',
  emailChangeConfirmStatus: 0,
  emailChangeSentAt: null,
  lastSignInAt: null,
  appMetadata: { provider: 'email', providers: ['email'] },
  userMetadata: { name: 'Ada' },
  createdAt: created,
  updatedAt: created,
  phone: '',
  phoneConfirmedAt: null,
  phoneChange: '',
  phoneChangeToken: '',
  phoneChangeSentAt: null,
  confirmedAt: created,
  bannedUntil: null,
  reauthenticationToken: '',
  reauthenticationSentAt: null,
  isSsoUser: false,
  deletedAt: null,
  isAnonymous: false,
}

const identity: Identity = {
  id: 'a1b2c3d4-0000-4000-8000-000000000001',
  providerId: user.id,
  userId: user.id,
  identityData: { sub: user.id, email: user.email },
  provider: 'email',
  lastSignInAt: null,
  createdAt: created,
  updatedAt: created,
  email: 'ada@example.com',
}

describe('serializeUser', () => {
  it("renders upstream's fields in upstream's order, without secrets or null timestamps", () => {
    const json = serializeUser(user, [identity])
    expect(Object.keys(json)).toEqual([
      'id',
      'aud',
      'role',
      'email',
      'email_confirmed_at',
      'phone',
      'confirmed_at',
      'app_metadata',
      'user_metadata',
      'identities',
      'created_at',
      'updated_at',
      'is_anonymous',
    ])
    expect(json).toMatchObject({
      email_confirmed_at: '2026-01-02T03:04:05.678Z',
      phone: '',
      identities: [
        {
          identity_id: identity.id,
          id: user.id,
          user_id: user.id,
          provider: 'email',
          email: 'ada@example.com',
          created_at: '2026-01-02T03:04:05.678Z',
        },
      ],
    })
    expect(JSON.stringify(json)).not.toContain('secret')
    expect(JSON.stringify(json)).not.toContain('confirmation_token')
  })

  it('renders pending changes as new_email and new_phone, and a ban and a deletion', () => {
    const json = serializeUser(
      {
        ...user,
        emailChange: 'new@example.com',
        phoneChange: '15550100',
        bannedUntil: created,
        deletedAt: created,
      },
      [{ ...identity, email: '', lastSignInAt: created }],
    )
    expect(json).toMatchObject({
      new_email: 'new@example.com',
      new_phone: '15550100',
      banned_until: '2026-01-02T03:04:05.678Z',
      deleted_at: '2026-01-02T03:04:05.678Z',
    })
    expect(json.identities[0]).not.toHaveProperty('email')
    expect(json.identities[0]?.last_sign_in_at).toBe('2026-01-02T03:04:05.678Z')
  })
})

describe('serializeSession', () => {
  it('renders the token response, with weak_password only when given', () => {
    const session = {
      accessToken: 'jwt',
      expiresIn: 3600,
      expiresAt: 1_800_000_000,
      refreshToken: 'abcdefghijkl',
      user,
      identities: [identity],
    }
    expect(serializeSession(session)).toEqual({
      access_token: 'jwt',
      token_type: 'bearer',
      expires_in: 3600,
      expires_at: 1_800_000_000,
      refresh_token: 'abcdefghijkl',
      user: serializeUser(user, [identity]),
    })
    const weak = { message: 'Password should contain …', reasons: ['characters' as const] }
    expect(serializeSession(session, weak).weak_password).toEqual({
      message: 'Password should contain …',
      reasons: ['characters'],
    })
  })
})
