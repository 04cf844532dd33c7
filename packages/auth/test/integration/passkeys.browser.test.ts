/**
 * Passkeys in a real browser: Debian's Chromium with a CDP virtual authenticator, on a page that
 * runs unchanged `@supabase/auth-js` against the server (real PostgreSQL, real HTTP). One
 * browser and one server for the file; each test has its own user, browser context and
 * authenticator.
 */
import { FakeClock, launchChromium } from '@gatehouse/testing'
import { decodeJwt } from 'jose'
import type { Browser, BrowserContext } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { startTestServer, type TestServer } from '../helpers.js'
import {
  bundleAuthJs,
  credentialsOf,
  openAuthenticatorPage,
  startWebauthnSite,
  type AuthenticatorOptions,
  type AuthenticatorPage,
  type WebauthnSite,
} from '../support/webauthn-page.js'

const PASSWORD = 'password123'
const EXPIRY_MS = 5 * 60_000

let server: TestServer
let site: WebauthnSite
let elsewhere: WebauthnSite
let browser: Browser
const clock = new FakeClock(Date.now())
const contexts: BrowserContext[] = []
/** Run by the page before it sends a `…/verify` request. */
let beforeVerify: () => void = () => undefined

beforeAll(async () => {
  const bundle = await bundleAuthJs()
  site = await startWebauthnSite(bundle)
  // Another origin of the same RP id (`localhost`), not in WEBAUTHN_RP_ORIGINS.
  elsewhere = await startWebauthnSite(bundle)
  server = await startTestServer(
    'passkeys_browser',
    {
      AUTHSVC_PASSKEY_ENABLED: 'true',
      AUTHSVC_WEBAUTHN_RP_ID: 'localhost',
      AUTHSVC_WEBAUTHN_RP_DISPLAY_NAME: 'Gatehouse test',
      AUTHSVC_WEBAUTHN_RP_ORIGINS: site.origin,
      AUTHSVC_WEBAUTHN_CHALLENGE_EXPIRY_DURATION: `${String(EXPIRY_MS / 1000)}s`,
      AUTHSVC_MFA_WEB_AUTHN_ENROLL_ENABLED: 'true',
      AUTHSVC_MFA_WEB_AUTHN_VERIFY_ENABLED: 'true',
    },
    clock,
  )
  await server.listen()
  browser = await launchChromium()
})
afterEach(async () => {
  beforeVerify = () => undefined
  await Promise.all(contexts.splice(0).map((c) => c.close()))
})
afterAll(async () => {
  await browser.close()
  await server.close()
  await site.close()
  await elsewhere.close()
})

let users = 0

/** A confirmed user with a password, made through the admin API. */
async function newUser(): Promise<{ id: string; email: string }> {
  users += 1
  const email = `passkey-${String(users)}@example.com`
  const res = await server.request('POST', '/admin/users', {
    token: server.serviceKey,
    body: { email, password: PASSWORD, email_confirm: true },
  })
  expect(res.statusCode).toBe(200)
  return { id: res.json().id, email }
}

/** A fresh browser context with the page open on `origin` and a virtual authenticator. */
async function openPage(
  origin = site.origin,
  options: AuthenticatorOptions = {},
): Promise<AuthenticatorPage> {
  const context = await browser.newContext()
  contexts.push(context)
  await context.exposeFunction('beforeVerify', () => {
    beforeVerify()
  })
  return openAuthenticatorPage(context, origin, server.url, options)
}

/** Signs in with the password and registers a passkey; returns the passkey's id. */
async function registerAfterPassword(page: AuthenticatorPage, email: string): Promise<string> {
  const signIn = await page.call('signInWithPassword', { email, password: PASSWORD })
  expect(signIn.error).toBeNull()
  const registered = await page.call('registerPasskey')
  expect(registered.error).toBeNull()
  return (registered.data as { id: string }).id
}

/** Copies the page's credential into a new authenticator of `target` with `signCount`. */
async function cloneCredential(
  from: AuthenticatorPage,
  target: AuthenticatorPage,
  signCount: number,
): Promise<void> {
  const [credential] = await credentialsOf(from)
  expect(credential).toBeDefined()
  await target.cdp.send('WebAuthn.addCredential', {
    authenticatorId: target.authenticatorId,
    credential: { ...(credential as object), signCount } as never,
  })
}

describe('passkeys in Chromium with auth-js', () => {
  it('registers after a password sign-in, signs in username-less, then lists, renames and deletes', async () => {
    const user = await newUser()
    const page = await openPage()
    const passkeyId = await registerAfterPassword(page, user.email)

    const signOut = await page.call('signOut')
    expect(signOut.error).toBeNull()
    const signIn = await page.call('signInWithPasskey')
    expect(signIn.error).toBeNull()
    const { session } = signIn.data as { session: { access_token: string; user: { id: string } } }
    expect(session.user.id).toBe(user.id)
    const claims = decodeJwt(session.access_token)
    expect((claims.amr as { method: string }[]).map((a) => a.method)).toEqual(['passkey'])
    expect(claims.aal).toBe('aal1')

    const listed = await page.call('passkey.list')
    expect(listed.error).toBeNull()
    const [item] = listed.data as { id: string; friendly_name: string; last_used_at?: string }[]
    expect(item).toMatchObject({ id: passkeyId, friendly_name: 'Passkey' })
    expect(item?.last_used_at).toBeTruthy()

    const renamed = await page.call('passkey.update', {
      passkeyId,
      friendlyName: 'My laptop',
    })
    expect(renamed.error).toBeNull()
    expect(renamed.data).toMatchObject({ id: passkeyId, friendly_name: 'My laptop' })
    expect(
      ((await page.call('passkey.list')).data as { friendly_name: string }[])[0],
    ).toMatchObject({ friendly_name: 'My laptop' })

    const deleted = await page.call('passkey.delete', { passkeyId })
    expect(deleted.error).toBeNull()
    expect((await page.call('passkey.list')).data).toEqual([])
  })

  it('refuses a ceremony run on an origin not in WEBAUTHN_RP_ORIGINS', async () => {
    const user = await newUser()
    const stranger = await openPage(elsewhere.origin)
    const signIn = await stranger.call('signInWithPassword', {
      email: user.email,
      password: PASSWORD,
    })
    expect(signIn.error).toBeNull()
    const registered = await stranger.call('registerPasskey')
    expect(registered.error).toMatchObject({ code: 'webauthn_verification_failed', status: 400 })

    // A passkey registered on the site, used from the other origin.
    const home = await openPage()
    await registerAfterPassword(home, user.email)
    const elsewhereOnly = await openPage(elsewhere.origin)
    await cloneCredential(home, elsewhereOnly, 0)
    const used = await elsewhereOnly.call('signInWithPasskey')
    expect(used.error).toMatchObject({ code: 'webauthn_verification_failed', status: 400 })
    expect(used.error?.message).toBe('Credential verification failed')
  })

  it('refuses a replayed assertion, with its own challenge and with a new one', async () => {
    const user = await newUser()
    const page = await openPage()
    await registerAfterPassword(page, user.email)
    await page.page.evaluate(() => {
      ;(globalThis as unknown as { verifyBodies: unknown[] }).verifyBodies.length = 0
    })
    expect((await page.call('signInWithPasskey')).error).toBeNull()
    const [body] = await page.page.evaluate(
      () => (globalThis as unknown as { verifyBodies: string[] }).verifyBodies,
    )
    const replay = (payload: string) =>
      fetch(`${server.url}/passkeys/authentication/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: payload,
      })
    const again = await replay(body ?? '')
    expect(again.status).toBe(400)
    expect(await again.json()).toMatchObject({
      error_code: 'webauthn_challenge_not_found',
      msg: 'Challenge not found or already used',
    })

    const fresh = await fetch(`${server.url}/passkeys/authentication/options`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    })
    const { challenge_id } = (await fresh.json()) as { challenge_id: string }
    const moved = await replay(JSON.stringify({ ...JSON.parse(body ?? '{}'), challenge_id }))
    expect(moved.status).toBe(400)
    expect(await moved.json()).toMatchObject({ error_code: 'webauthn_verification_failed' })
  })

  it('refuses an answer after WEBAUTHN_CHALLENGE_EXPIRY_DURATION', async () => {
    const user = await newUser()
    const page = await openPage()
    await registerAfterPassword(page, user.email)
    await page.call('signOut')
    beforeVerify = () => {
      clock.advance(EXPIRY_MS + 1000)
    }
    const late = await page.call('signInWithPasskey')
    expect(late.error).toMatchObject({ code: 'webauthn_challenge_expired', status: 400 })
    expect(late.error?.message).toBe('Challenge has expired')
  })

  it('refuses a deleted passkey', async () => {
    const user = await newUser()
    const page = await openPage()
    const passkeyId = await registerAfterPassword(page, user.email)
    const removed = await server.request(
      'DELETE',
      `/admin/users/${user.id}/passkeys/${passkeyId}`,
      {
        token: server.serviceKey,
      },
    )
    expect(removed.statusCode).toBe(204)
    await page.call('signOut')
    const signIn = await page.call('signInWithPasskey')
    expect(signIn.error).toMatchObject({ code: 'webauthn_verification_failed', status: 400 })
  })

  it('refuses a cloned authenticator whose sign counter goes backwards', async () => {
    const user = await newUser()
    const page = await openPage()
    await registerAfterPassword(page, user.email)
    await page.call('signOut')
    expect((await page.call('signInWithPasskey')).error).toBeNull()
    expect((await page.call('signInWithPasskey')).error).toBeNull()
    const [original] = await credentialsOf(page)
    expect(original?.signCount).toBeGreaterThan(1)

    const clone = await openPage()
    await cloneCredential(page, clone, 0)
    const cloned = await clone.call('signInWithPasskey')
    expect(cloned.error).toMatchObject({ code: 'webauthn_verification_failed', status: 400 })
    // The original, whose counter keeps going up, still works.
    expect((await page.call('signInWithPasskey')).error).toBeNull()
  })

  it('refuses an assertion without user verification', async () => {
    const user = await newUser()
    const page = await openPage(site.origin, { isUserVerified: false })
    const signIn = await page.call('signInWithPassword', { email: user.email, password: PASSWORD })
    expect(signIn.error).toBeNull()
    // The browser itself refuses to create a credential without user verification.
    const refused = await page.call('registerPasskey')
    expect(refused.error).not.toBeNull()

    const verified = await openPage()
    await registerAfterPassword(verified, user.email)
    await cloneCredential(verified, page, 100)
    await page.page.evaluate(() => {
      ;(globalThis as unknown as { dropUserVerification: boolean }).dropUserVerification = true
    })
    const unverified = await page.call('signInWithPasskey')
    expect(unverified.error).toMatchObject({ code: 'webauthn_verification_failed', status: 400 })
  })
})

/** The `aal` and the `amr` methods (sorted) of an access token. */
function assurance(accessToken: string): { aal: unknown; methods: string[] } {
  const claims = decodeJwt(accessToken)
  const methods = (claims.amr as { method: string }[]).map((a) => a.method)
  return { aal: claims.aal, methods: methods.sort() }
}

describe('WebAuthn as a second factor in Chromium with auth-js', () => {
  it('enrols a factor, enrols a second authenticator at aal2, and steps up with each', async () => {
    const user = await newUser()
    // Security keys: auth-js asks for a cross-platform authenticator for factors.
    const first = await openPage(site.origin, { transport: 'usb' })
    const credentials = { email: user.email, password: PASSWORD }
    expect((await first.call('signInWithPassword', credentials)).error).toBeNull()
    const enrolled = await first.call('mfa.webauthn.register', { friendlyName: 'Security key' })
    expect(enrolled.error).toBeNull()
    expect(assurance((enrolled.data as { access_token: string }).access_token)).toEqual({
      aal: 'aal2',
      methods: ['password', 'webauthn'],
    })
    const listed = await first.call('mfa.listFactors')
    const [factor] = (listed.data as { all: { id: string; factor_type: string; status: string }[] })
      .all
    expect(factor).toMatchObject({ factor_type: 'webauthn', status: 'verified' })

    // A second authenticator, in another page of the same browser (it shares the aal2 session).
    const second = await openAuthenticatorPage(first.page.context(), site.origin, server.url, {
      transport: 'usb',
    })
    const another = await second.call('mfa.webauthn.register', { friendlyName: 'Phone' })
    expect(another.error).toBeNull()
    const all = (
      (await second.call('mfa.listFactors')).data as { all: { id: string; status: string }[] }
    ).all
    expect(all.map((f) => f.status)).toEqual(['verified', 'verified'])
    const secondId = all.find((f) => f.id !== factor?.id)?.id

    // Step up from a password sign-in with each authenticator.
    for (const [page, factorId] of [
      [first, factor?.id],
      [second, secondId],
    ] as const) {
      const signIn = await page.call('signInWithPassword', credentials)
      const session = (signIn.data as { session: { access_token: string } }).session
      expect(assurance(session.access_token).aal).toBe('aal1')
      const stepped = await page.call('mfa.webauthn.authenticate', { factorId })
      expect(stepped.error).toBeNull()
      expect(assurance((stepped.data as { access_token: string }).access_token)).toEqual({
        aal: 'aal2',
        methods: ['password', 'webauthn'],
      })
    }

    // An authenticator holding another factor's credential cannot answer for this one.
    await first.call('signInWithPassword', credentials)
    const wrong = await first.call('mfa.webauthn.authenticate', { factorId: secondId })
    expect(wrong.error).not.toBeNull()
  })
})
