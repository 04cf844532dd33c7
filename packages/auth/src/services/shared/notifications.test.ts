import { describe, expect, it } from 'vitest'
import { loadSettings } from '../../conf/settings.js'
import type { Mailer, MailMessage } from '../../mailer/mailer.js'
import type { User } from '../../models/user.js'
import { notifyEmailChanged, notifyPasswordChanged, sendNotification } from './notifications.js'

const env = {
  AUTHSVC_SITE_URL: 'https://app.example.com',
  AUTHSVC_API_EXTERNAL_URL: 'https://auth.example.com',
  AUTHSVC_JWT_SECRET: 'a-secret-of-thirty-two-bytes-or-more',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'pglite://memory',
}

const at = new Date(Date.UTC(2026, 0, 1))
const user: User = {
  id: '7d1c4f44-6c55-4c1e-9d4a-5b0f3f4a2c11',
  aud: 'authenticated',
  role: 'authenticated',
  email: 'ann@example.com',
  encryptedPassword: '',
  emailConfirmedAt: at,
  invitedAt: null,
  confirmationToken: '',
  confirmationSentAt: null,
  recoveryToken: '',
  recoverySentAt: null,
  emailChangeTokenNew: '',
  emailChangeTokenCurrent: '',
  emailChangeConfirmStatus: 0,
  reauthenticationToken: '',
  emailChange: '',
  emailChangeSentAt: null,
  lastSignInAt: null,
  appMetadata: {},
  userMetadata: { name: 'Ann' },
  createdAt: at,
  updatedAt: at,
  phone: '4915112345678',
  phoneConfirmedAt: null,
  phoneChange: '',
  phoneChangeToken: '',
  phoneChangeSentAt: null,
  confirmedAt: at,
  bannedUntil: null,
  reauthenticationSentAt: null,
  isSsoUser: false,
  deletedAt: null,
  isAnonymous: false,
}

function recorder(fail?: Error): { mailer: Mailer; sent: MailMessage[] } {
  const sent: MailMessage[] = []
  return {
    sent,
    mailer: {
      send(message) {
        sent.push(message)
        return fail ? Promise.reject(fail) : Promise.resolve()
      },
    },
  }
}

function logRecorder(): {
  warn: (d: Record<string, unknown>, m: string) => void
  lines: unknown[]
} {
  const lines: unknown[] = []
  return { lines, warn: (details, message) => lines.push({ ...details, message }) }
}

describe('sendNotification', () => {
  it('sends nothing while MAILER_NOTIFICATIONS_<KIND>_ENABLED is off (the default)', async () => {
    const { mailer, sent } = recorder()
    const settings = loadSettings(env)
    const log = logRecorder()
    expect(
      await sendNotification({ settings, mailer }, 'password_changed_notification', user, {}, log),
    ).toBe('disabled')
    expect(sent).toEqual([])
  })

  it('sends the kind with the user and its values when enabled', async () => {
    const { mailer, sent } = recorder()
    const settings = loadSettings({
      ...env,
      AUTHSVC_MAILER_NOTIFICATIONS_EMAIL_CHANGED_ENABLED: 'true',
    })
    const outcome = await sendNotification(
      { settings, mailer },
      'email_changed_notification',
      user,
      { oldEmail: 'old@example.com' },
      logRecorder(),
    )
    expect(outcome).toBe('sent')
    expect(sent).toEqual([
      {
        kind: 'email_changed_notification',
        to: 'old@example.com',
        email: 'ann@example.com',
        phone: '4915112345678',
        oldEmail: 'old@example.com',
        confirmationUrl: '',
        token: '',
        tokenHash: '',
        redirectTo: '',
        data: { name: 'Ann' },
      },
    ])
  })

  it('sends to the user, and the wrappers say whether they sent', async () => {
    const { mailer, sent } = recorder()
    const settings = loadSettings({
      ...env,
      AUTHSVC_MAILER_NOTIFICATIONS_PASSWORD_CHANGED_ENABLED: 'true',
    })
    expect(await notifyPasswordChanged({ settings, mailer }, user)).toBe(true)
    expect(await notifyEmailChanged({ settings, mailer }, user, 'old@example.com')).toBe(false)
    expect(sent.map((m) => [m.kind, m.to])).toEqual([
      ['password_changed_notification', 'ann@example.com'],
    ])
  })

  it('skips a user without an email address', async () => {
    const { mailer, sent } = recorder()
    const settings = loadSettings({
      ...env,
      AUTHSVC_MAILER_NOTIFICATIONS_PHONE_CHANGED_ENABLED: 'true',
    })
    expect(
      await sendNotification(
        { settings, mailer },
        'phone_changed_notification',
        { ...user, email: '' },
        {},
        logRecorder(),
      ),
    ).toBe('no_email')
    expect(sent).toEqual([])
  })

  it('logs a failed send as a warning and does not throw', async () => {
    const { mailer } = recorder(new Error('connect ECONNREFUSED 127.0.0.1:2525'))
    const settings = loadSettings({
      ...env,
      AUTHSVC_MAILER_NOTIFICATIONS_MFA_FACTOR_ENROLLED_ENABLED: 'true',
    })
    const log = logRecorder()
    const outcome = await sendNotification(
      { settings, mailer },
      'mfa_factor_enrolled_notification',
      user,
      { factorType: 'totp' },
      log,
    )
    expect(outcome).toBe('failed')
    expect(log.lines).toEqual([
      {
        kind: 'mfa_factor_enrolled_notification',
        user_id: user.id,
        error: 'connect ECONNREFUSED 127.0.0.1:2525',
        message: 'Unable to send mfa factor enrolled notification email',
      },
    ])
  })
})
