import { createHash } from 'node:crypto'
import { Writable } from 'node:stream'
import { FakeClock } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type MailMessage, type SmsProvider } from '@gatehouse/auth'
import { createLogger } from '#internal/logger.js'
import { RecordingMailer, startTestServer, type TestServer } from '../helpers.js'

/** Every email flow end to end, reading links and codes out of the recorded mails. */

const SITE = 'http://localhost:3000'
const PASSWORD = 'secret123'

function sha224(text: string): string {
  return createHash('sha224').update(text).digest('hex')
}

/** The path and query of a mailed link, for `inject`. */
function pathOf(link: string): string {
  const url = new URL(link)
  return url.pathname + url.search
}

/** The fragment of a redirect as an object. */
function fragmentOf(location: string): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(new URL(location).hash.slice(1)))
}

const S256_VERIFIER = 'verifier-verifier-verifier-verifier-verifier-0123'
const S256_CHALLENGE = createHash('sha256').update(S256_VERIFIER).digest('base64url')

describe('email flows', () => {
  const clock = new FakeClock(Date.now())
  const mailer = new RecordingMailer()
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'email_flows',
      {
        AUTHSVC_MAILER_AUTOCONFIRM: 'false',
        AUTHSVC_URI_ALLOW_LIST: 'http://app.example.com/**',
        AUTHSVC_MAILER_NOTIFICATIONS_PASSWORD_CHANGED_ENABLED: 'true',
        AUTHSVC_MAILER_NOTIFICATIONS_EMAIL_CHANGED_ENABLED: 'true',
        AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: 'true',
        AUTHSVC_RATE_LIMIT_EMAIL_SENT: '1000',
        AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true',
      },
      clock,
      { deps: { mailer } },
    )
  })
  afterAll(async () => {
    await server.close()
  })

  async function signUp(email: string, body: Record<string, unknown> = {}): Promise<MailMessage> {
    const res = await server.request('POST', '/signup', {
      body: { email, password: PASSWORD, ...body },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json().access_token).toBeUndefined()
    return mailer.last(email, 'confirmation')
  }

  /** A confirmed user's session, through the confirmation code. */
  async function confirmedSession(email: string): Promise<{ access_token: string; id: string }> {
    const mail = await signUp(email)
    const res = await server.request('POST', '/verify', {
      body: { type: 'signup', email, token: mail.token },
    })
    expect(res.statusCode).toBe(200)
    return { access_token: res.json().access_token, id: res.json().user.id }
  }

  async function userRow(email: string): Promise<Record<string, unknown>> {
    const { rows } = await server.app.db.query(
      `SELECT * FROM ${server.app.db.t.users} WHERE email = $1`,
      [email],
    )
    return rows[0]!
  }

  it('sign-up mails a link and code stored as upstream stores them; the link confirms and signs in once', async () => {
    const email = 'confirm-link@example.com'
    const mail = await signUp(email)
    expect(mail.token).toMatch(/^\d{6}$/)
    expect(mail.tokenHash).toBe(sha224(email + mail.token))
    const link = new URL(mail.confirmationUrl)
    expect(link.origin + link.pathname).toBe('http://127.0.0.1:9999/verify')
    expect(Object.fromEntries(link.searchParams)).toEqual({
      token: mail.tokenHash,
      type: 'signup',
      redirect_to: SITE,
    })
    const row = await userRow(email)
    expect(row.confirmation_token).toBe(mail.tokenHash)
    const { rows: ott } = await server.app.db.query(
      `SELECT token_type, token_hash, relates_to FROM ${server.app.db.t.oneTimeTokens} WHERE user_id = $1`,
      [row.id],
    )
    expect(ott).toEqual([
      { token_type: 'confirmation_token', token_hash: mail.tokenHash, relates_to: email },
    ])

    const res = await server.request('GET', pathOf(mail.confirmationUrl))
    expect(res.statusCode).toBe(303)
    const location = res.headers.location as string
    expect(location.startsWith(`${SITE}/#`)).toBe(true)
    const fragment = fragmentOf(location)
    expect(Object.keys(fragment)).toEqual([
      'access_token',
      'expires_at',
      'expires_in',
      'refresh_token',
      'sb',
      'token_type',
      'type',
    ])
    expect(fragment).toMatchObject({ token_type: 'bearer', type: 'signup', expires_in: '3600' })
    const user = await server.request('GET', '/user', { token: fragment.access_token })
    expect(user.json()).toMatchObject({ email, user_metadata: { email_verified: true } })
    expect(user.json().email_confirmed_at).toEqual(expect.any(String))
    expect((await userRow(email)).confirmation_token).toBe('')

    const again = await server.request('GET', pathOf(mail.confirmationUrl))
    expect(again.statusCode).toBe(303)
    expect(fragmentOf(again.headers.location as string)).toEqual({
      error: 'access_denied',
      error_code: 'otp_expired',
      error_description: 'Email link is invalid or has expired',
      sb: '',
    })
  })

  it('POST /verify takes the code with the email, or the token_hash, once each', async () => {
    const email = 'confirm-code@example.com'
    const mail = await signUp(email)
    const wrong = await server.request('POST', '/verify', {
      body: { type: 'signup', email, token: mail.token === '000000' ? '111111' : '000000' },
    })
    expect(wrong.statusCode).toBe(403)
    expect(wrong.json()).toMatchObject({
      error_code: 'otp_expired',
      msg: 'Token has expired or is invalid',
    })
    const ok = await server.request('POST', '/verify', {
      body: { type: 'email', email: 'Confirm-Code@Example.com', token: mail.token },
    })
    expect(ok.statusCode).toBe(200)
    expect(ok.json()).toMatchObject({ token_type: 'bearer', type: 'signup', user: { email } })
    const reused = await server.request('POST', '/verify', {
      body: { type: 'signup', email, token: mail.token },
    })
    expect(reused.statusCode).toBe(403)

    const other = 'confirm-hash@example.com'
    const second = await signUp(other)
    const byHash = await server.request('POST', '/verify', {
      body: { type: 'signup', token_hash: second.tokenHash },
    })
    expect(byHash.statusCode).toBe(200)
    expect(byHash.json().user.email).toBe(other)
    const hashAgain = await server.request('POST', '/verify', {
      body: { type: 'signup', token_hash: second.tokenHash },
    })
    expect(hashAgain.json()).toMatchObject({
      error_code: 'otp_expired',
      msg: 'Email link is invalid or has expired',
    })
  })

  it('links and codes expire after MAILER_OTP_EXP', async () => {
    const email = 'expires@example.com'
    const mail = await signUp(email)
    clock.advance(86_400_000 + 1000)
    const link = await server.request('GET', pathOf(mail.confirmationUrl))
    expect(fragmentOf(link.headers.location as string)).toMatchObject({
      error_code: 'otp_expired',
    })
    const code = await server.request('POST', '/verify', {
      body: { type: 'signup', email, token: mail.token },
    })
    expect(code.statusCode).toBe(403)
  })

  it('refuses malformed verifications with upstream texts', async () => {
    const cases: [string, Record<string, unknown>, number, string][] = [
      ['POST', { token: '123456', email: 'a@b.co' }, 400, 'Verify requires a verification type'],
      [
        'POST',
        { type: 'bogus', token: '1', email: 'a@b.co' },
        400,
        'Unsupported verification type',
      ],
      ['POST', { type: 'signup' }, 400, 'Verify requires either a token or a token hash'],
      [
        'POST',
        { type: 'signup', token: '1', token_hash: 'x' },
        400,
        'Verify requires either a token or a token hash',
      ],
      [
        'POST',
        { type: 'signup', token: '123456' },
        400,
        'Only an email address or phone number should be provided on verify',
      ],
      [
        'POST',
        { type: 'signup', token_hash: 'abc', email: 'a@b.co' },
        400,
        'Only the token_hash and type should be provided',
      ],
      ['POST', { type: 'signup', token: '1', email: 'not-an-email' }, 422, 'Invalid email format'],
      [
        'POST',
        { type: 'magiclink', token_hash: '../../etc' },
        403,
        'Email link is invalid or has expired',
      ],
    ]
    for (const [, body, status, msg] of cases) {
      const res = await server.request('POST', '/verify', { body })
      expect({ status: res.statusCode, msg: res.json().msg }).toEqual({ status, msg })
    }
    const noToken = await server.request('GET', '/verify?type=signup')
    expect(noToken.statusCode).toBe(400)
    expect(noToken.json().msg).toBe('Verify requires a token or a token hash')
    const badType = await server.request('GET', '/verify?type=nope&token=abc')
    expect(badType.json().msg).toBe('Unsupported verification type')
    const forged = await server.request(
      'GET',
      `/verify?type=signup&token=${'f'.repeat(56)}&redirect_to=${encodeURIComponent('http://app.example.com/cb')}`,
    )
    expect(forged.statusCode).toBe(303)
    expect(forged.headers.location).toMatch(/^http:\/\/app\.example\.com\/cb#error=access_denied/)
    const evil = await server.request(
      'GET',
      `/verify?type=signup&token=x&redirect_to=${encodeURIComponent('https://evil.example.net/')}`,
    )
    expect((evil.headers.location as string).startsWith(`${SITE}/#error=`)).toBe(true)
  })

  it('POST /otp: create_user false sends nothing to unknown addresses, silently; a new address gets the confirmation', async () => {
    // Upstream answers 422 otp_disabled, which tells that the address is unknown (issue 24).
    const refused = await server.request('POST', '/otp', {
      body: { email: 'nobody@example.com', create_user: false },
    })
    expect(refused.statusCode).toBe(200)
    expect(refused.json()).toEqual({})
    expect(mailer.to('nobody@example.com')).toEqual([])

    const res = await server.request('POST', '/otp', {
      body: { email: 'otp-new@example.com', data: { plan: 'pro' } },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({})
    const mail = mailer.last('otp-new@example.com', 'confirmation')
    const verified = await server.request('POST', '/verify', {
      body: { type: 'email', email: 'otp-new@example.com', token: mail.token },
    })
    expect(verified.statusCode).toBe(200)
    expect(verified.json().user.user_metadata).toMatchObject({ plan: 'pro', email_verified: true })

    for (const [body, msg] of [
      [
        { email: 'a@b.co', phone: '15550001' },
        'Only an email address or phone number should be provided',
      ],
      [{ email: 'a@b.co', channel: 'sms' }, 'Channel should only be specified with Phone OTP'],
      [{}, 'One of email or phone must be set'],
    ] as const) {
      const bad = await server.request('POST', '/otp', { body })
      expect(bad.json().msg).toBe(msg)
    }
  })

  it('a confirmed user gets a magic link and code; magic link and recovery share one clock', async () => {
    const email = 'magic@example.com'
    await confirmedSession(email)
    const res = await server.request('POST', '/magiclink', { body: { email } })
    expect(res.statusCode).toBe(200)
    const mail = mailer.last(email, 'magic_link')
    expect(new URL(mail.confirmationUrl).searchParams.get('type')).toBe('magiclink')
    expect((await userRow(email)).recovery_token).toBe(mail.tokenHash)

    // Within SMTP_MAX_FREQUENCY: the same answer as ever, and no mail (upstream: 429).
    const recover = await server.request('POST', '/recover', { body: { email } })
    expect(recover.statusCode).toBe(200)
    expect(recover.json()).toEqual({})
    clock.advance(300_000)
    const later = await server.request('POST', '/otp', { body: { email } })
    expect(later.json()).toEqual({})
    expect(mailer.to(email, 'recovery')).toEqual([])
    expect(mailer.to(email, 'magic_link')).toHaveLength(1)

    const link = await server.request('GET', pathOf(mail.confirmationUrl))
    expect(fragmentOf(link.headers.location as string)).toMatchObject({ type: 'magiclink' })
    clock.advance(600_000)
    expect((await server.request('POST', '/otp', { body: { email } })).statusCode).toBe(200)
    const code = mailer.last(email, 'magic_link')
    const byCode = await server.request('POST', '/verify', {
      body: { type: 'magiclink', email, token: code.token },
    })
    expect(byCode.statusCode).toBe(200)
  })

  it('recovery: unknown addresses learn nothing; the link signs in and the password change notifies', async () => {
    const unknown = await server.request('POST', '/recover', {
      body: { email: 'ghost@example.com' },
    })
    expect(unknown.statusCode).toBe(200)
    expect(unknown.json()).toEqual({})
    expect(mailer.to('ghost@example.com')).toEqual([])
    expect((await server.request('POST', '/recover', { body: {} })).json().msg).toBe(
      'Password recovery requires an email',
    )

    const email = 'recover@example.com'
    await confirmedSession(email)
    const res = await server.request('POST', '/recover?redirect_to=http://app.example.com/reset', {
      body: { email },
    })
    expect(res.statusCode).toBe(200)
    const mail = mailer.last(email, 'recovery')
    expect(mail.redirectTo).toBe('http://app.example.com/reset')
    const link = await server.request('GET', pathOf(mail.confirmationUrl))
    const location = link.headers.location as string
    expect(location.startsWith('http://app.example.com/reset#')).toBe(true)
    const { access_token } = fragmentOf(location)
    const changed = await server.request('PUT', '/user', {
      token: access_token,
      body: { password: 'brand-new-secret' },
    })
    expect(changed.statusCode).toBe(200)
    expect(mailer.last(email, 'password_changed_notification')).toMatchObject({ email })
    const signIn = await server.request('POST', '/token?grant_type=password', {
      body: { email, password: 'brand-new-secret' },
    })
    expect(signIn.statusCode).toBe(200)
  })

  it('resend: the pending confirmation again, once per SMTP_MAX_FREQUENCY; nothing for others', async () => {
    const email = 'resend@example.com'
    const first = await signUp(email)
    const tooSoon = await server.request('POST', '/resend', { body: { type: 'signup', email } })
    expect(tooSoon.statusCode).toBe(429)
    clock.advance(900_000)
    const res = await server.request('POST', '/resend', { body: { type: 'signup', email } })
    expect(res.statusCode).toBe(200)
    const second = mailer.last(email, 'confirmation')
    expect(second.tokenHash).not.toBe(first.tokenHash)
    const old = await server.request('POST', '/verify', {
      body: { type: 'signup', token_hash: first.tokenHash },
    })
    expect(old.statusCode).toBe(403)
    const ok = await server.request('POST', '/verify', {
      body: { type: 'signup', token_hash: second.tokenHash },
    })
    expect(ok.statusCode).toBe(200)
    const sent = mailer.messages.length
    const confirmed = await server.request('POST', '/resend', { body: { type: 'signup', email } })
    expect(confirmed.statusCode).toBe(200)
    expect(mailer.messages.length).toBe(sent)
    const bad = await server.request('POST', '/resend', { body: { type: 'recovery', email } })
    expect(bad.json().msg).toBe(
      'Missing one of these types: signup, email_change, sms, phone_change',
    )
  })

  it('invite: the mailed link confirms the invitee and signs it in', async () => {
    const email = 'invitee@example.com'
    const res = await server.request('POST', '/invite', {
      token: server.serviceKey,
      body: { email, data: { team: 'blue' } },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json().invited_at).toEqual(expect.any(String))
    const mail = mailer.last(email, 'invite')
    expect(new URL(mail.confirmationUrl).searchParams.get('type')).toBe('invite')
    const link = await server.request('GET', pathOf(mail.confirmationUrl))
    const fragment = fragmentOf(link.headers.location as string)
    expect(fragment.type).toBe('invite')
    const user = await server.request('GET', '/user', { token: fragment.access_token })
    expect(user.json()).toMatchObject({ email, user_metadata: { team: 'blue' } })
    expect(user.json().email_confirmed_at).toEqual(expect.any(String))
  })

  it('secure email change: both links are needed; then the email changes and the old address is told', async () => {
    const email = 'change-me@example.com'
    const { access_token, id } = await confirmedSession(email)
    const newEmail = 'changed@example.com'
    const res = await server.request('PUT', '/user', {
      token: access_token,
      body: { email: 'Changed@Example.com' },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ email, new_email: newEmail })
    const toNew = mailer.last(newEmail, 'email_change')
    const toCurrent = mailer.last(email, 'email_change')
    expect(toNew).toMatchObject({ email, newEmail, tokenHash: sha224(newEmail + toNew.token) })
    expect(toCurrent.tokenHash).toBe(sha224(email + toCurrent.token))

    const first = await server.request('POST', '/verify', {
      body: { type: 'email_change', email: newEmail, token: toNew.token },
    })
    expect(first.statusCode).toBe(200)
    expect(first.json()).toEqual({
      msg: 'Confirmation link accepted. Please proceed to confirm link sent to the other email',
      code: '200',
    })
    expect((await userRow(email)).email).toBe(email)
    const second = await server.request('GET', pathOf(toCurrent.confirmationUrl))
    const fragment = fragmentOf(second.headers.location as string)
    expect(fragment.type).toBe('email_change')
    const user = await server.request('GET', '/user', { token: fragment.access_token })
    expect(user.json()).toMatchObject({ id, email: newEmail })
    expect(user.json().new_email).toBeUndefined()
    expect(user.json().identities[0]).toMatchObject({ identity_data: { email: newEmail } })
    expect(mailer.last(email, 'email_changed_notification')).toMatchObject({
      oldEmail: email,
      email: newEmail,
    })

    const taken = await server.request('PUT', '/user', {
      token: fragment.access_token,
      body: { email: 'magic@example.com' },
    })
    expect(taken.statusCode).toBe(422)
    expect(taken.json().error_code).toBe('email_exists')
  })

  it('an anonymous user adds an email: one link, then a permanent email user', async () => {
    const anonymous = await server.request('POST', '/signup', { body: {} })
    const token = anonymous.json().access_token
    const email = 'was-anonymous@example.com'
    const res = await server.request('PUT', '/user', { token, body: { email } })
    expect(res.statusCode).toBe(200)
    const mail = mailer.last(email, 'email_change')
    expect(mailer.messages.filter((m) => m.kind === 'email_change' && m.to === '')).toEqual([])
    const done = await server.request('POST', '/verify', {
      body: { type: 'email_change', email, token: mail.token },
    })
    expect(done.statusCode).toBe(200)
    expect(done.json().user).toMatchObject({
      email,
      is_anonymous: false,
      app_metadata: { provider: 'email', providers: ['email'] },
      identities: [{ provider: 'email', identity_data: { email, email_verified: true } }],
    })
  })

  it('reauthentication: an old session needs the mailed nonce to change the password, once', async () => {
    const email = 'reauth@example.com'
    const signUpMail = await signUp(email)
    const verified = await server.request('POST', '/verify', {
      body: { type: 'signup', email, token: signUpMail.token },
    })
    const refreshToken = verified.json().refresh_token
    clock.advance(25 * 3_600_000)
    const refreshed = await server.request('POST', '/token?grant_type=refresh_token', {
      body: { refresh_token: refreshToken },
    })
    const token = refreshed.json().access_token
    const needed = await server.request('PUT', '/user', { token, body: { password: 'another-1' } })
    expect(needed.statusCode).toBe(400)
    expect(needed.json()).toMatchObject({
      error_code: 'reauthentication_needed',
      msg: 'Password update requires reauthentication',
    })
    const sent = await server.request('GET', '/reauthenticate', { token })
    expect(sent.statusCode).toBe(200)
    expect(sent.json()).toEqual({})
    const nonce = mailer.last(email, 'reauthentication').token
    expect((await server.request('GET', '/reauthenticate', { token })).statusCode).toBe(429)
    const wrong = await server.request('PUT', '/user', {
      token,
      body: { password: 'another-1', nonce: nonce === '000000' ? '111111' : '000000' },
    })
    expect(wrong.statusCode).toBe(422)
    expect(wrong.json()).toMatchObject({
      error_code: 'reauthentication_not_valid',
      msg: 'Nonce has expired or is invalid',
    })
    const ok = await server.request('PUT', '/user', {
      token,
      body: { password: 'another-1', nonce },
    })
    expect(ok.statusCode).toBe(200)
    const reused = await server.request('PUT', '/user', {
      token,
      body: { password: 'another-2', nonce },
    })
    expect(reused.statusCode).toBe(422)
  })

  it('generate_link answers all six types with upstream fields and sends nothing', async () => {
    await confirmedSession('gl-known@example.com')
    const sent = mailer.messages.length
    const generate = (body: Record<string, unknown>, query = '') =>
      server.request('POST', `/admin/generate_link${query}`, { token: server.serviceKey, body })
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'signup', email: 'gl-signup@example.com', password: PASSWORD }, 'signup'],
      [{ type: 'invite', email: 'gl-invite@example.com' }, 'invite'],
      [{ type: 'magiclink', email: 'gl-known@example.com' }, 'magiclink'],
      [{ type: 'magiclink', email: 'gl-unknown@example.com' }, 'signup'],
      [{ type: 'recovery', email: 'gl-known@example.com' }, 'recovery'],
      [
        {
          type: 'email_change_current',
          email: 'gl-known@example.com',
          new_email: 'gl-new@example.com',
        },
        'email_change',
      ],
      [
        {
          type: 'email_change_new',
          email: 'gl-known@example.com',
          new_email: 'gl-new@example.com',
        },
        'email_change',
      ],
    ]
    for (const [body, verificationType] of cases) {
      const res = await generate(body, '?redirect_to=http%3A%2F%2Fapp.example.com%2Fcb')
      expect(res.statusCode).toBe(200)
      const json = res.json() as unknown as Record<string, string> & { action_link: string }
      const hashedFor = body.type === 'email_change_new' ? 'gl-new@example.com' : body.email
      expect(json.hashed_token).toBe(sha224(`${String(hashedFor)}${json.email_otp}`))
      expect(json.verification_type).toBe(verificationType)
      expect(json.redirect_to).toBe('http://app.example.com/cb')
      expect(Object.fromEntries(new URL(json.action_link).searchParams)).toEqual({
        token: json.hashed_token,
        type: verificationType,
        redirect_to: 'http://app.example.com/cb',
      })
      expect(json.email).toBe(body.email)
    }
    expect(mailer.messages.length).toBe(sent)

    const link = await generate({ type: 'recovery', email: 'gl-known@example.com' })
    const used = await server.request('GET', pathOf(link.json().action_link as string))
    expect(fragmentOf(used.headers.location as string).type).toBe('recovery')

    const missing = await generate({ type: 'recovery', email: 'gl-missing@example.com' })
    expect(missing.statusCode).toBe(404)
    expect(missing.json()).toMatchObject({
      error_code: 'user_not_found',
      msg: 'User with this email not found',
    })
    const taken = await generate({ type: 'signup', email: 'gl-known@example.com' })
    expect(taken.json().error_code).toBe('email_exists')
    const bad = await generate({ type: 'bogus', email: 'gl-known@example.com' })
    expect(bad.json().msg).toBe('Invalid email action link type requested: bogus')
    const forbidden = await server.request('POST', '/admin/generate_link', {
      body: { type: 'signup', email: 'x@example.com' },
    })
    expect(forbidden.statusCode).toBe(401)
  })

  it('a failing mailer fails the request with upstream text and loses nothing; a retry works', async () => {
    const email = 'smtp-down@example.com'
    mailer.failing = true
    try {
      const res = await server.request('POST', '/signup', { body: { email, password: PASSWORD } })
      expect(res.statusCode).toBe(500)
      expect(res.json()).toMatchObject({
        error_code: 'unexpected_failure',
        msg: 'Error sending confirmation email',
      })
      const { rows } = await server.app.db.query(
        `SELECT id FROM ${server.app.db.t.users} WHERE email = $1`,
        [email],
      )
      expect(rows).toEqual([])
    } finally {
      mailer.failing = false
    }
    const mail = await signUp(email)
    expect(mail.to).toBe(email)

    // A queued mail (here a recovery) is not lost either: it is retried after a back-off.
    const known = 'smtp-down-known@example.com'
    await confirmedSession(known)
    mailer.failing = true
    try {
      const res = await server.request('POST', '/recover', { body: { email: known } })
      expect(res.statusCode).toBe(200)
      expect(mailer.to(known, 'recovery')).toEqual([])
    } finally {
      mailer.failing = false
    }
    const row = await userRow(known)
    clock.advance(5_000)
    await server.app.flushMail()
    expect(mailer.last(known, 'recovery').tokenHash).toBe(row.recovery_token)
  })

  it('PKCE: the link answers ?code=, exchanged once with the verifier for a session', async () => {
    const email = 'pkce@example.com'
    const mail = await signUp(email, {
      code_challenge: S256_CHALLENGE,
      code_challenge_method: 'S256',
    })
    expect(mail.tokenHash.startsWith('pkce_')).toBe(true)
    expect(mail.tokenHash).toBe(`pkce_${sha224(email + mail.token)}`)
    const link = await server.request('GET', pathOf(mail.confirmationUrl))
    expect(link.statusCode).toBe(303)
    const location = new URL(link.headers.location as string)
    expect(location.hash).toBe('')
    const code = location.searchParams.get('code')!
    expect(code).toMatch(/^[0-9a-f-]{36}$/)

    const exchange = (body: Record<string, unknown>) =>
      server.request('POST', '/token?grant_type=pkce', { body })
    const bad = await exchange({ auth_code: code, code_verifier: 'x'.repeat(43) })
    expect(bad.statusCode).toBe(400)
    expect(bad.json()).toMatchObject({
      error_code: 'bad_code_verifier',
      msg: 'code challenge does not match previously saved code verifier',
    })
    const ok = await exchange({ auth_code: code, code_verifier: S256_VERIFIER })
    expect(ok.statusCode).toBe(200)
    expect(ok.json().user.email).toBe(email)
    const again = await exchange({ auth_code: code, code_verifier: S256_VERIFIER })
    expect(again.statusCode).toBe(404)
    expect(again.json()).toMatchObject({
      error_code: 'flow_state_not_found',
      msg: 'invalid flow state, no valid flow state found',
    })
    const empty = await exchange({ auth_code: code })
    expect(empty.json().msg).toBe(
      'invalid request: both auth code and code verifier should be non-empty',
    )
  })

  it('PKCE: flow states expire; challenges are validated with upstream texts', async () => {
    const email = 'pkce-late@example.com'
    await confirmedSession(email)
    const plain = 'plain-challenge-plain-challenge-plain-challenge'
    const res = await server.request('POST', '/recover', {
      body: { email, code_challenge: plain, code_challenge_method: 'plain' },
    })
    expect(res.statusCode).toBe(200)
    const mail = mailer.last(email, 'recovery')
    const link = await server.request('GET', pathOf(mail.confirmationUrl))
    const code = new URL(link.headers.location as string).searchParams.get('code')!
    clock.advance(301_000)
    const late = await server.request('POST', '/token?grant_type=pkce', {
      body: { auth_code: code, code_verifier: plain },
    })
    expect(late.statusCode).toBe(422)
    expect(late.json()).toMatchObject({
      error_code: 'flow_state_expired',
      msg: 'invalid flow state, flow state has expired',
    })

    for (const [challenge, method, msg] of [
      [S256_CHALLENGE, '', 'PKCE flow requires code_challenge_method and code_challenge'],
      ['short', 's256', 'code challenge has to be between 43 and 128 characters'],
      [
        '!'.repeat(43),
        's256',
        'code challenge can only contain alphanumeric characters, hyphens, periods, underscores and tildes',
      ],
      [S256_CHALLENGE, 'md5', 'unsupported code_challenge method "md5"'],
    ] as const) {
      const bad = await server.request('POST', '/otp', {
        body: { email, code_challenge: challenge, code_challenge_method: method },
      })
      expect({ status: bad.statusCode, msg: bad.json().msg }).toEqual({ status: 400, msg })
    }
  })
})

describe('RATE_LIMIT_EMAIL_SENT and an insecure email change', () => {
  const clock = new FakeClock(Date.now())
  const mailer = new RecordingMailer()
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'email_limits',
      {
        AUTHSVC_MAILER_AUTOCONFIRM: 'false',
        AUTHSVC_RATE_LIMIT_EMAIL_SENT: '3/10m',
        AUTHSVC_MAILER_SECURE_EMAIL_CHANGE_ENABLED: 'false',
        AUTHSVC_MAILER_OTP_LENGTH: '8',
      },
      clock,
      { deps: { mailer } },
    )
  })
  afterAll(async () => {
    await server.close()
  })

  it('allows N mails per period, then 429 over_email_send_rate_limit; nothing is recorded for the refused one', async () => {
    clock.set(Math.ceil(clock.now() / 600_000) * 600_000)
    for (const n of [1, 2]) {
      const res = await server.request('POST', '/signup', {
        body: { email: `limit${String(n)}@example.com`, password: PASSWORD },
      })
      expect(res.statusCode).toBe(200)
    }
    const first = mailer.last('limit1@example.com', 'confirmation')
    expect(first.token).toMatch(/^\d{8}$/)
    const verified = await server.request('POST', '/verify', {
      body: { type: 'signup', email: 'limit1@example.com', token: first.token },
    })
    const token = verified.json().access_token
    // The third mail of the window: the email change to one (insecure) address.
    const change = await server.request('PUT', '/user', {
      token,
      body: { email: 'limit1-new@example.com' },
    })
    expect(change.statusCode).toBe(200)
    expect(mailer.to('limit1@example.com', 'email_change')).toEqual([])
    const refused = await server.request('POST', '/signup', {
      body: { email: 'limit3@example.com', password: PASSWORD },
    })
    expect(refused.statusCode).toBe(429)
    expect(refused.json()).toMatchObject({
      error_code: 'over_email_send_rate_limit',
      msg: 'email rate limit exceeded',
    })
    const { rows } = await server.app.db.query(
      `SELECT id FROM ${server.app.db.t.users} WHERE email = 'limit3@example.com'`,
    )
    expect(rows).toEqual([])

    const toNew = mailer.last('limit1-new@example.com', 'email_change')
    const done = await server.request('POST', '/verify', {
      body: { type: 'email_change', email: 'limit1-new@example.com', token: toNew.token },
    })
    expect(done.statusCode).toBe(200)
    expect(done.json().user.email).toBe('limit1-new@example.com')

    clock.advance(600_000)
    const next = await server.request('POST', '/signup', {
      body: { email: 'limit3@example.com', password: PASSWORD },
    })
    expect(next.statusCode).toBe(200)
  })
})

describe('POST /verify of an SMS sign-up code', () => {
  const sent: { phone: string; otp: string }[] = []
  const sms: SmsProvider = {
    sendMessage(phone, _message, _channel, otp) {
      sent.push({ phone, otp })
      return Promise.resolve('msg-1')
    },
  }
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'sms_verify',
      { AUTHSVC_EXTERNAL_PHONE_ENABLED: 'true', AUTHSVC_SMS_AUTOCONFIRM: 'false' },
      new FakeClock(Date.now()),
      { deps: { sms } },
    )
  })
  afterAll(async () => {
    await server.close()
  })

  it('confirms the phone with the code sent to it, once', async () => {
    const res = await server.request('POST', '/signup', {
      body: { phone: '+1 555 000 1234', password: PASSWORD },
    })
    expect(res.statusCode).toBe(200)
    const { otp } = sent.at(-1)!
    const verified = await server.request('POST', '/verify', {
      body: { type: 'sms', phone: '+15550001234', token: otp },
    })
    expect(verified.statusCode).toBe(200)
    expect(verified.json()).toMatchObject({ type: 'sms', user: { phone: '15550001234' } })
    expect(verified.json().user.phone_confirmed_at).toEqual(expect.any(String))
    const again = await server.request('POST', '/verify', {
      body: { type: 'sms', phone: '15550001234', token: otp },
    })
    expect(again.statusCode).toBe(403)
    const hashForm = await server.request('POST', '/verify', {
      body: { type: 'sms', token_hash: 'abc' },
    })
    expect(hashForm.json().msg).toBe('Invalid email verification type')
  })
})

describe('an anonymous user adding an email under MAILER_AUTOCONFIRM', () => {
  const mailer = new RecordingMailer()
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'email_anon_autoconfirm',
      { AUTHSVC_MAILER_AUTOCONFIRM: 'true', AUTHSVC_EXTERNAL_ANONYMOUS_USERS_ENABLED: 'true' },
      new FakeClock(Date.now()),
      { deps: { mailer } },
    )
  })
  afterAll(async () => {
    await server.close()
  })

  it('gets it at once, without a mail, and becomes a permanent email user', async () => {
    const anonymous = await server.request('POST', '/signup', { body: {} })
    const token = anonymous.json().access_token
    const res = await server.request('PUT', '/user', {
      token,
      body: { email: 'anon-now@example.com' },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({
      email: 'anon-now@example.com',
      is_anonymous: false,
      identities: [{ provider: 'email' }],
    })
    expect(res.json().email_confirmed_at).toEqual(expect.any(String))
    expect(res.json().new_email).toBeUndefined()
    expect(mailer.messages).toEqual([])
  })
})

describe('mail links and redirect_to of every flow', () => {
  const mailer = new RecordingMailer()
  const logLines: string[] = []
  const logger = createLogger(
    { level: 'info', file: '' },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        logLines.push(chunk.toString('utf8'))
        done()
      },
    }),
  )
  let server: TestServer
  const APP = 'http://app.example.com'

  beforeAll(async () => {
    server = await startTestServer(
      'email_links',
      {
        AUTHSVC_MAILER_AUTOCONFIRM: 'false',
        AUTHSVC_URI_ALLOW_LIST: `${APP}/**`,
        AUTHSVC_RATE_LIMIT_EMAIL_SENT: '1000',
        AUTHSVC_MAILER_URLPATHS_CONFIRMATION: '/auth/v1/confirm',
        AUTHSVC_MAILER_URLPATHS_INVITE: '/auth/v1/invite',
        AUTHSVC_MAILER_URLPATHS_RECOVERY: '/auth/v1/recover',
        AUTHSVC_MAILER_URLPATHS_EMAIL_CHANGE: '/auth/v1/change',
        AUTHSVC_MAILER_NOTIFICATIONS_PASSWORD_CHANGED_ENABLED: 'true',
      },
      new FakeClock(Date.now()),
      { deps: { mailer, logger } },
    )
  })
  afterAll(async () => {
    await server.close()
  })

  /** The path of a mailed link and its `redirect_to`. */
  function linkOf(mail: MailMessage): { path: string; redirectTo: string | null; type: string } {
    const url = new URL(mail.confirmationUrl)
    return {
      path: url.pathname,
      redirectTo: url.searchParams.get('redirect_to'),
      type: url.searchParams.get('type') ?? '',
    }
  }

  async function confirmed(email: string): Promise<string> {
    const res = await server.request('POST', '/signup', { body: { email, password: PASSWORD } })
    expect(res.statusCode).toBe(200)
    const mail = mailer.last(email, 'confirmation')
    const verified = await server.request('POST', '/verify', {
      body: { type: 'signup', email, token: mail.token },
    })
    expect(verified.statusCode).toBe(200)
    return verified.json().access_token
  }

  it('sign-up takes redirect_to from the header before the query, and links through MAILER_URLPATHS_CONFIRMATION', async () => {
    const email = 'links-signup@example.com'
    const res = await server.request(
      'POST',
      `/signup?redirect_to=${encodeURIComponent(`${APP}/q`)}`,
      {
        body: { email, password: PASSWORD },
        headers: { redirect_to: `${APP}/header` },
      },
    )
    expect(res.statusCode).toBe(200)
    expect(linkOf(mailer.last(email, 'confirmation'))).toEqual({
      path: '/auth/v1/confirm',
      redirectTo: `${APP}/header`,
      type: 'signup',
    })
  })

  it('magic link and recovery use the recovery path; a refused redirect_to falls back to the Referer, then SITE_URL', async () => {
    const email = 'links-magic@example.com'
    await confirmed(email)
    const magic = await server.request('POST', '/magiclink', {
      body: { email, redirect_to: 'https://evil.example.net/' },
      headers: { referer: `${APP}/from-page` },
    })
    expect(magic.statusCode).toBe(200)
    expect(linkOf(mailer.last(email, 'magic_link'))).toEqual({
      path: '/auth/v1/recover',
      redirectTo: `${APP}/from-page`,
      type: 'magiclink',
    })
    // Within SMTP_MAX_FREQUENCY of the magic link: no mail, the same answer.
    const recovery = await server.request('POST', '/recover', {
      body: { email },
      headers: { referer: 'https://evil.example.net/page' },
    })
    expect(recovery.statusCode).toBe(200)
    expect(mailer.to(email, 'recovery')).toEqual([])
    const other = 'links-recover@example.com'
    await confirmed(other)
    const recovered = await server.request('POST', '/recover', {
      body: { email: other },
      headers: { referer: 'https://evil.example.net/page' },
    })
    expect(recovered.statusCode).toBe(200)
    expect(linkOf(mailer.last(other, 'recovery'))).toEqual({
      path: '/auth/v1/recover',
      redirectTo: SITE,
      type: 'recovery',
    })
  })

  it('invite, email change and generate_link use their own paths and the body redirect_to', async () => {
    const invited = await server.request('POST', '/invite', {
      token: server.serviceKey,
      body: { email: 'links-invite@example.com', redirect_to: `${APP}/welcome` },
    })
    expect(invited.statusCode).toBe(200)
    expect(linkOf(mailer.last('links-invite@example.com', 'invite'))).toEqual({
      path: '/auth/v1/invite',
      redirectTo: `${APP}/welcome`,
      type: 'invite',
    })

    const token = await confirmed('links-change@example.com')
    const changed = await server.request('PUT', '/user', {
      token,
      body: { email: 'links-changed@example.com', redirect_to: `${APP}/changed` },
    })
    expect(changed.statusCode).toBe(200)
    expect(linkOf(mailer.last('links-changed@example.com', 'email_change'))).toEqual({
      path: '/auth/v1/change',
      redirectTo: `${APP}/changed`,
      type: 'email_change',
    })

    const generated = await server.request('POST', '/admin/generate_link', {
      token: server.serviceKey,
      body: { type: 'magiclink', email: 'links-change@example.com', redirect_to: `${APP}/gl` },
    })
    expect(generated.statusCode).toBe(200)
    const action = new URL(generated.json().action_link as string)
    expect(action.pathname).toBe('/auth/v1/recover')
    expect(action.searchParams.get('redirect_to')).toBe(`${APP}/gl`)
    expect(generated.json().redirect_to).toBe(`${APP}/gl`)
  })

  it('GET /verify takes redirect_to from the query, refusing a foreign one for SITE_URL', async () => {
    const email = 'links-verify@example.com'
    await server.request('POST', '/signup', { body: { email, password: PASSWORD } })
    const mail = mailer.last(email, 'confirmation')
    const query = `token=${mail.tokenHash}&type=signup`
    const foreign = await server.request(
      'GET',
      `/verify?${query}&redirect_to=${encodeURIComponent('https://evil.example.net/')}`,
    )
    expect(foreign.statusCode).toBe(303)
    expect((foreign.headers.location as string).startsWith(`${SITE}/#access_token=`)).toBe(true)
  })

  it('the request log of GET /verify shows the path but never the token, code or nonce', async () => {
    const email = 'links-log@example.com'
    await server.request('POST', '/signup', { body: { email, password: PASSWORD } })
    const { tokenHash } = mailer.last(email, 'confirmation')
    logLines.length = 0
    const res = await server.request(
      'GET',
      `/verify?type=signup&token=${tokenHash}&code=pkce-code-1&nonce=nonce-1&token_hash=hash-1`,
    )
    expect(res.statusCode).toBe(303)
    const logged = logLines.join('')
    expect(logged).toContain('/verify?type=signup&token=[redacted]&code=[redacted]')
    for (const secret of [tokenHash, 'pkce-code-1', 'nonce-1', 'hash-1']) {
      expect(logged).not.toContain(secret)
    }
  })

  it('a failed notification leaves the change made and is logged as a warning of the request', async () => {
    const token = await confirmed('links-notify@example.com')
    logLines.length = 0
    mailer.failing = true
    try {
      const res = await server.request('PUT', '/user', { token, body: { password: 'n3w-secret' } })
      expect(res.statusCode).toBe(200)
    } finally {
      mailer.failing = false
    }
    const warning = logLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((entry) => entry.msg === 'Unable to send password changed notification email')
    expect(warning).toMatchObject({ level: 'warning', kind: 'password_changed_notification' })
    expect(typeof warning?.request_id).toBe('string')
    const login = await server.request('POST', '/token?grant_type=password', {
      body: { email: 'links-notify@example.com', password: 'n3w-secret' },
    })
    expect(login.statusCode).toBe(200)
  })
})

describe('EXTERNAL_EMAIL_ENABLED=false and passwordless users at /verify', () => {
  const mailer = new RecordingMailer()
  let server: TestServer
  let disabled: TestServer

  beforeAll(async () => {
    const clock = new FakeClock(Date.now())
    const env = { AUTHSVC_MAILER_AUTOCONFIRM: 'false', AUTHSVC_RATE_LIMIT_EMAIL_SENT: '1000' }
    server = await startTestServer('email_passwordless', env, clock, { deps: { mailer } })
    disabled = await startTestServer(
      'email_disabled',
      { ...env, AUTHSVC_EXTERNAL_EMAIL_ENABLED: 'false' },
      clock,
      { deps: { mailer } },
    )
  })
  afterAll(async () => {
    await Promise.all([server.close(), disabled.close()])
  })

  it('refuses every email flow with upstream status, code and text, and sends nothing', async () => {
    const email = 'disabled@example.com'
    const cases: [string, Record<string, unknown>, number, string, string][] = [
      [
        '/signup',
        { email, password: PASSWORD },
        400,
        'email_provider_disabled',
        'Email signups are disabled',
      ],
      ['/otp', { email }, 422, 'email_provider_disabled', 'Email logins are disabled'],
      ['/magiclink', { email }, 422, 'email_provider_disabled', 'Email logins are disabled'],
      ['/recover', { email }, 400, 'email_provider_disabled', 'Email logins are disabled'],
      [
        '/resend',
        { type: 'signup', email },
        400,
        'email_provider_disabled',
        'Email logins are disabled',
      ],
      [
        '/token?grant_type=password',
        { email, password: PASSWORD },
        422,
        'email_provider_disabled',
        'Email logins are disabled',
      ],
    ]
    for (const [url, body, status, code, msg] of cases) {
      const res = await disabled.request('POST', url, { body })
      expect({ url, status: res.statusCode, body: res.json() }).toMatchObject({
        url,
        status,
        body: { error_code: code, msg },
      })
    }
    expect(mailer.to(email)).toEqual([])
  })

  it('an invitee without a password gets a random one on accepting the invite, as upstream', async () => {
    const email = 'invitee@example.com'
    const invited = await server.request('POST', '/invite', {
      token: server.serviceKey,
      body: { email },
    })
    expect(invited.statusCode).toBe(200)
    const mail = mailer.last(email, 'invite')
    const res = await server.request('GET', pathOf(mail.confirmationUrl))
    expect(res.statusCode).toBe(303)
    expect(fragmentOf(res.headers.location as string).type).toBe('invite')
    const { rows } = await server.app.db.query(
      `SELECT encrypted_password, email_confirmed_at FROM ${server.app.db.t.users} WHERE email = $1`,
      [email],
    )
    expect(rows[0]?.encrypted_password).toMatch(/^\$2[aby]\$\d\d\$.{53}$/)
    expect(rows[0]?.email_confirmed_at).not.toBeNull()
  })

  it('an unknown address asking for a magic link is signed up with a random password, as upstream', async () => {
    const email = 'magic-new@example.com'
    const res = await server.request('POST', '/magiclink', { body: { email } })
    expect(res.statusCode).toBe(200)
    expect(mailer.last(email, 'confirmation').token).toMatch(/^\d{6}$/)
    const { rows } = await server.app.db.query(
      `SELECT encrypted_password FROM ${server.app.db.t.users} WHERE email = $1`,
      [email],
    )
    expect(rows[0]?.encrypted_password).toMatch(/^\$2[aby]\$\d\d\$.{53}$/)
  })

  it('a sign-up link of a user without a password confirms it without one, as upstream', async () => {
    const email = 'passwordless@example.com'
    const link = await server.request('POST', '/admin/generate_link', {
      token: server.serviceKey,
      body: { type: 'signup', email },
    })
    expect(link.statusCode).toBe(200)
    const res = await server.request('POST', '/verify', {
      body: { type: 'signup', token_hash: link.json().hashed_token },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ type: 'signup', user: { email } })
    const { rows } = await server.app.db.query(
      `SELECT encrypted_password FROM ${server.app.db.t.users} WHERE email = $1`,
      [email],
    )
    expect(rows[0]?.encrypted_password).toBe('')
  })
})
