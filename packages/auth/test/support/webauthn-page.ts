/**
 * A page for WebAuthn journeys in Chromium: unchanged `@supabase/auth-js` bundled for the browser
 * with esbuild, served on `http://localhost:<port>` (a secure context, RP id `localhost`), and a
 * CDP virtual authenticator per page.
 */
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { startHttpServer, type TestHttpServer } from '@gatehouse/testing'
import type { BrowserContext, CDPSession, Page } from 'playwright-core'

/** `@supabase/auth-js` as one browser script defining `window.AuthJs`. */
export async function bundleAuthJs(): Promise<string> {
  const result = await build({
    stdin: {
      contents: "export { GoTrueClient } from '@supabase/auth-js'",
      resolveDir: fileURLToPath(new URL('.', import.meta.url)),
    },
    bundle: true,
    format: 'iife',
    globalName: 'AuthJs',
    platform: 'browser',
    write: false,
    logLevel: 'silent',
  })
  return result.outputFiles[0]?.text ?? ''
}

/**
 * The page's script: `setup(apiUrl)` makes `window.client`, a `GoTrueClient` with the passkey API
 * on, whose fetch records the bodies of `…/verify` requests (`window.verifyBodies`), awaits
 * `window.beforeVerify()` (exposed by the test) before sending one, and, while
 * `window.dropUserVerification` is set, rewrites the sign-in options to `userVerification:
 * discouraged` (a client that skips user verification). `call(path, ...args)` runs a client
 * method and returns `{ data, error }` as plain JSON.
 */
const PAGE_SCRIPT = `
window.verifyBodies = []
window.dropUserVerification = false
window.setup = (apiUrl) => {
  const recording = async (input, init) => {
    const url = String(input instanceof Request ? input.url : input)
    if (url.endsWith('/verify')) {
      window.verifyBodies.push(init && init.body)
      if (window.beforeVerify) await window.beforeVerify(url)
    }
    const response = await fetch(input, init)
    if (window.dropUserVerification && url.endsWith('/passkeys/authentication/options')) {
      const json = await response.json()
      json.options.userVerification = 'discouraged'
      return new Response(JSON.stringify(json), { status: response.status, headers: response.headers })
    }
    return response
  }
  window.client = new AuthJs.GoTrueClient({
    url: apiUrl,
    fetch: recording,
    autoRefreshToken: false,
    detectSessionInUrl: false,
    experimental: { passkey: true },
  })
}
window.call = async (path, ...args) => {
  const names = path.split('.')
  const method = names.pop()
  const target = names.reduce((o, n) => o[n], window.client)
  const { data, error } = await target[method](...args)
  return {
    data: data === undefined ? null : JSON.parse(JSON.stringify(data)),
    error: error ? { code: error.code, message: error.message, status: error.status, name: error.name } : null,
  }
}
`

/** The site serving the page: `/` (the page) and `/auth-js.js` (the bundle). */
export interface WebauthnSite {
  /** `http://localhost:<port>`. */
  readonly origin: string
  close(): Promise<void>
}

/** Serves the page on a random loopback port, reached as `http://localhost:<port>`. */
export async function startWebauthnSite(bundle: string): Promise<WebauthnSite> {
  const server: TestHttpServer = await startHttpServer((req, res) => {
    if (req.url === '/auth-js.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' })
      res.end(bundle)
      return
    }
    res.writeHead(200, { 'content-type': 'text/html' })
    res.end(
      `<!doctype html><title>Passkeys</title><script src="/auth-js.js"></script><script>${PAGE_SCRIPT}</script>`,
    )
  })
  return { origin: server.url.replace('127.0.0.1', 'localhost'), close: () => server.close() }
}

/** A CDP virtual authenticator's options (`WebAuthn.VirtualAuthenticatorOptions`). */
export interface AuthenticatorOptions {
  /** `internal` (a platform authenticator, the default) or `usb` (a security key). */
  readonly transport?: 'internal' | 'usb'
  readonly isUserVerified?: boolean
  readonly hasUserVerification?: boolean
}

/** A page of the site with a virtual authenticator (CTAP2, resident keys). */
export interface AuthenticatorPage {
  readonly page: Page
  readonly cdp: CDPSession
  readonly authenticatorId: string
  /** Runs `window.call(path, ...args)` in the page. */
  call(path: string, ...args: unknown[]): Promise<CallResult>
}

/** What `window.call` returns. */
export interface CallResult {
  readonly data: Record<string, unknown> | unknown[] | null
  readonly error: {
    readonly code?: string
    readonly message: string
    readonly status?: number
    readonly name: string
  } | null
}

/**
 * Opens the site in `context`, sets up the client against `apiUrl` and adds a virtual
 * authenticator.
 */
export async function openAuthenticatorPage(
  context: BrowserContext,
  siteOrigin: string,
  apiUrl: string,
  options: AuthenticatorOptions = {},
): Promise<AuthenticatorPage> {
  const page = await context.newPage()
  await page.goto(`${siteOrigin}/`)
  await page.evaluate((url) => {
    ;(globalThis as unknown as { setup(u: string): void }).setup(url)
  }, apiUrl)
  const cdp = await context.newCDPSession(page)
  await cdp.send('WebAuthn.enable')
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: options.transport ?? 'internal',
      hasResidentKey: true,
      hasUserVerification: options.hasUserVerification ?? true,
      isUserVerified: options.isUserVerified ?? true,
      automaticPresenceSimulation: true,
    },
  })
  return {
    page,
    cdp,
    authenticatorId,
    call: (path, ...args) =>
      page.evaluate(
        ([p, a]) =>
          (globalThis as unknown as { call(p: string, ...a: unknown[]): Promise<CallResult> }).call(
            p,
            ...a,
          ),
        [path, args] as const,
      ),
  }
}

/** The credentials of an authenticator, as CDP gives them (private keys included). */
export async function credentialsOf(
  target: AuthenticatorPage,
): Promise<{ credentialId: string; signCount: number; [key: string]: unknown }[]> {
  const { credentials } = await target.cdp.send('WebAuthn.getCredentials', {
    authenticatorId: target.authenticatorId,
  })
  return credentials as { credentialId: string; signCount: number }[]
}
