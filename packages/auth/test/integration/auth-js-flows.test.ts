import { FakeClock } from '@gatehouse/testing'
import { GoTrueClient } from '@supabase/auth-js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RecordingMailer, startTestServer, type TestServer } from '../helpers.js'
import { authJsClient } from '../support/auth-js.js'

/**
 * Black-box journeys of the email flows through the unchanged `@supabase/auth-js`, over real
 * HTTP, following the links and typing the codes of the recorded mails; implicit and PKCE.
 */
describe('@supabase/auth-js email journeys', () => {
  const clock = new FakeClock(Date.now())
  const mailer = new RecordingMailer()
  let server: TestServer

  beforeAll(async () => {
    server = await startTestServer(
      'authjs_flows',
      {
        AUTHSVC_MAILER_AUTOCONFIRM: 'false',
        AUTHSVC_URI_ALLOW_LIST: 'http://localhost:3000/**',
        AUTHSVC_SECURITY_UPDATE_PASSWORD_REQUIRE_REAUTHENTICATION: 'true',
      },
      clock,
      { deps: { mailer } },
    )
    await server.listen()
  })
  afterAll(async () => {
    await server.close()
  })

  function client(flowType: 'implicit' | 'pkce' = 'implicit'): GoTrueClient {
    return authJsClient(server.url, { flowType })
  }

  /** Follows a mailed link (on this server) the way a browser would, without the redirect. */
  async function follow(link: string): Promise<URL> {
    const mailed = new URL(link)
    const res = await fetch(`${server.url}${mailed.pathname}${mailed.search}`, {
      redirect: 'manual',
    })
    expect(res.status).toBe(303)
    return new URL(res.headers.get('location') ?? '')
  }

  /** The tokens of an implicit-flow redirect's fragment. */
  function tokensOf(location: URL): { access_token: string; refresh_token: string } {
    const fragment = new URLSearchParams(location.hash.slice(1))
    return {
      access_token: fragment.get('access_token') ?? '',
      refresh_token: fragment.get('refresh_token') ?? '',
    }
  }

  it('signUp → confirmation link → session', async () => {
    const auth = client()
    const email = 'js-confirm@example.com'
    const signUp = await auth.signUp({
      email,
      password: 'secret123',
      options: { emailRedirectTo: 'http://localhost:3000/welcome' },
    })
    expect(signUp.error).toBeNull()
    expect(signUp.data.session).toBeNull()
    expect(signUp.data.user?.email).toBe(email)
    const location = await follow(mailer.last(email, 'confirmation').confirmationUrl)
    expect(location.origin + location.pathname).toBe('http://localhost:3000/welcome')
    const session = await auth.setSession(tokensOf(location))
    expect(session.error).toBeNull()
    const { data } = await auth.getUser()
    expect(data.user?.email_confirmed_at).toEqual(expect.any(String))
  })

  it('signInWithOtp + verifyOtp, by code and by link', async () => {
    const email = 'js-otp@example.com'
    const auth = client()
    const sent = await auth.signInWithOtp({ email, options: { data: { from: 'otp' } } })
    expect(sent.error).toBeNull()
    // The queue sends it after the answer.
    const code = (await mailer.waitFor(email, 'confirmation')).token
    const verified = await auth.verifyOtp({ email, token: code, type: 'email' })
    expect(verified.error).toBeNull()
    expect(verified.data.session?.user.user_metadata).toMatchObject({ from: 'otp' })

    clock.advance(900_000)
    const again = await client().signInWithOtp({ email, options: { shouldCreateUser: false } })
    expect(again.error).toBeNull()
    const byLink = client()
    const location = await follow((await mailer.waitFor(email, 'magic_link')).confirmationUrl)
    const session = await byLink.setSession(tokensOf(location))
    expect(session.data.user?.email).toBe(email)

    // Answered as for a known address (upstream: 422 otp_disabled), and nothing is sent.
    const unknown = await client().signInWithOtp({
      email: 'js-nobody@example.com',
      options: { shouldCreateUser: false },
    })
    expect(unknown.error).toBeNull()
    await server.app.flushMail()
    expect(mailer.to('js-nobody@example.com')).toEqual([])
  })

  it('resetPasswordForEmail → recovery code → updateUser({ password })', async () => {
    const email = 'js-reset@example.com'
    await client().signInWithOtp({ email })
    await client().verifyOtp({
      email,
      token: (await mailer.waitFor(email, 'confirmation')).token,
      type: 'signup',
    })
    const auth = client()
    const reset = await auth.resetPasswordForEmail(email, {
      redirectTo: 'http://localhost:3000/reset',
    })
    expect(reset.error).toBeNull()
    const mail = await mailer.waitFor(email, 'recovery')
    expect(mail.redirectTo).toBe('http://localhost:3000/reset')
    const verified = await auth.verifyOtp({ email, token: mail.token, type: 'recovery' })
    expect(verified.error).toBeNull()
    const updated = await auth.updateUser({ password: 'reset-secret-1' })
    expect(updated.error).toBeNull()
    const signIn = await client().signInWithPassword({ email, password: 'reset-secret-1' })
    expect(signIn.error).toBeNull()
  })

  it('updateUser({ email }) with secure email change needs both codes', async () => {
    const email = 'js-old@example.com'
    const newEmail = 'js-new@example.com'
    const auth = client()
    await auth.signUp({ email, password: 'secret123' })
    await auth.verifyOtp({ email, token: mailer.last(email, 'confirmation').token, type: 'signup' })
    const change = await auth.updateUser({ email: newEmail })
    expect(change.error).toBeNull()
    expect(change.data.user?.new_email).toBe(newEmail)
    const first = await auth.verifyOtp({
      email: newEmail,
      token: mailer.last(newEmail, 'email_change').token,
      type: 'email_change',
    })
    expect(first.error).toBeNull()
    expect(first.data.session).toBeNull()
    const second = await auth.verifyOtp({
      email,
      token: mailer.last(email, 'email_change').token,
      type: 'email_change',
    })
    expect(second.error).toBeNull()
    expect(second.data.user?.email).toBe(newEmail)
  })

  it('reauthenticate → nonce → updateUser({ password, nonce }) in an old session', async () => {
    const email = 'js-reauth@example.com'
    const auth = client()
    await auth.signUp({ email, password: 'secret123' })
    await auth.verifyOtp({ email, token: mailer.last(email, 'confirmation').token, type: 'signup' })
    clock.advance(25 * 3_600_000)
    expect((await auth.refreshSession()).error).toBeNull()
    const without = await auth.updateUser({ password: 'reauth-secret-1' })
    expect(without.error).toMatchObject({ status: 400, code: 'reauthentication_needed' })
    const sent = await auth.reauthenticate()
    expect(sent.error).toBeNull()
    const nonce = mailer.last(email, 'reauthentication').token
    const updated = await auth.updateUser({ password: 'reauth-secret-1', nonce })
    expect(updated.error).toBeNull()
  })

  describe("flowType: 'pkce'", () => {
    /** The `?code=` of a PKCE link's redirect. */
    async function codeOf(link: string): Promise<string> {
      const location = await follow(link)
      expect(location.hash).toBe('')
      return location.searchParams.get('code') ?? ''
    }

    it('signUp → link → exchangeCodeForSession', async () => {
      const auth = client('pkce')
      const email = 'pkce-js-signup@example.com'
      expect((await auth.signUp({ email, password: 'secret123' })).error).toBeNull()
      const mail = mailer.last(email, 'confirmation')
      expect(mail.tokenHash.startsWith('pkce_')).toBe(true)
      const exchanged = await auth.exchangeCodeForSession(await codeOf(mail.confirmationUrl))
      expect(exchanged.error).toBeNull()
      expect(exchanged.data.session?.user.email).toBe(email)
      expect(exchanged.data.user?.email_confirmed_at).toEqual(expect.any(String))
    })

    it('signInWithOtp → magic link → exchangeCodeForSession', async () => {
      const email = 'pkce-js-signup@example.com'
      clock.advance(900_000)
      const auth = client('pkce')
      expect((await auth.signInWithOtp({ email })).error).toBeNull()
      const code = await codeOf((await mailer.waitFor(email, 'magic_link')).confirmationUrl)
      const exchanged = await auth.exchangeCodeForSession(code)
      expect(exchanged.error).toBeNull()
      expect(exchanged.data.session?.user.email).toBe(email)
      const reused = await client('pkce').exchangeCodeForSession(code)
      expect(reused.error).not.toBeNull()
    })

    it('resetPasswordForEmail → link → exchangeCodeForSession → updateUser({ password })', async () => {
      const email = 'pkce-js-signup@example.com'
      clock.advance(900_000)
      const auth = client('pkce')
      expect((await auth.resetPasswordForEmail(email)).error).toBeNull()
      const code = await codeOf((await mailer.waitFor(email, 'recovery')).confirmationUrl)
      const exchanged = await auth.exchangeCodeForSession(code)
      expect(exchanged.error).toBeNull()
      expect((await auth.updateUser({ password: 'pkce-reset-1' })).error).toBeNull()
      const signIn = await client().signInWithPassword({ email, password: 'pkce-reset-1' })
      expect(signIn.error).toBeNull()
    })

    it('updateUser({ email }) → both links → exchangeCodeForSession', async () => {
      const email = 'pkce-js-signup@example.com'
      const newEmail = 'pkce-js-new@example.com'
      // auth-js 2.105 drops the verifier when updateUser saves the session (`_saveSession`), so
      // the test's storage keeps the one it was given, as a browser tab that started the change
      // would have to.
      const items = new Map<string, string>()
      let verifier = ''
      const auth = new GoTrueClient({
        url: server.url,
        autoRefreshToken: false,
        persistSession: true,
        detectSessionInUrl: false,
        flowType: 'pkce',
        storageKey: 'journey',
        storage: {
          getItem: (key: string) => items.get(key) ?? null,
          setItem: (key: string, value: string) => {
            if (key.endsWith('-code-verifier')) verifier = value
            items.set(key, value)
          },
          removeItem: (key: string) => {
            items.delete(key)
          },
        },
      })
      expect((await auth.signInWithPassword({ email, password: 'pkce-reset-1' })).error).toBeNull()
      expect((await auth.updateUser({ email: newEmail })).error).toBeNull()
      expect(verifier).not.toBe('')
      const first = await follow(mailer.last(newEmail, 'email_change').confirmationUrl)
      expect(new URLSearchParams(first.hash.slice(1)).get('message')).toBe(
        'Confirmation link accepted. Please proceed to confirm link sent to the other email',
      )
      const code = await codeOf(mailer.last(email, 'email_change').confirmationUrl)
      items.set('journey-code-verifier', verifier)
      const exchanged = await auth.exchangeCodeForSession(code)
      expect(exchanged.error).toBeNull()
      expect(exchanged.data.user?.email).toBe(newEmail)
    })
  })
})
