/**
 * The passkey page of `npm start` (`http://localhost:<gateway port>/passkeys`): try passkeys by
 * hand. Sign in with a password (or sign up, then confirm through the mail inbox), register a
 * passkey, sign out and sign in again with the passkey, all through unchanged
 * `@supabase/auth-js`, bundled for the browser by esbuild when the page first asks for it. It is
 * served on `localhost` (a secure context whose RP id is `localhost`), which `npm start`
 * configures as the auth server's relying party. Like the site page, it builds no HTML from what
 * it is told: everything goes through `textContent`.
 *
 * @module
 */
import { fileURLToPath } from 'node:url'

/** The page's HTML (scripts are the page's own: the site's CSP applies). */
export function passkeysPage(inboxUrl: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Gatehouse passkeys</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer">
<style>body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1f2937}
header{background:#1f2937;color:#fff;padding:.7em 1.2em;font-weight:600}main{max-width:46em;padding:1em 1.2em}
label{display:block;margin:.4em 0}input{font:inherit;margin-left:.5em}button{font:inherit;margin:.3em .3em .3em 0}
#status{border-left:4px solid #6b7280;padding:.2em 1em;background:#f9fafb}#status.error{border-color:#dc2626;background:#fef2f2}
#status.ok{border-color:#16a34a;background:#f0fdf4}</style>
<script src="/auth-js.js" defer></script><script src="/passkeys.js" defer></script></head><body>
<header>Gatehouse passkeys (development)</header>
<main><p>Open this page as <code>http://localhost:…</code>: passkeys need the relying party id
<code>localhost</code>, which <code>npm start</code> sets (<code>WEBAUTHN_RP_ID</code>,
<code>WEBAUTHN_RP_ORIGINS</code>).</p>
<h2>1. Password</h2>
<label>Email<input id="email" type="email" autocomplete="username"></label>
<label>Password<input id="password" type="password" autocomplete="current-password"></label>
<button type="button" id="sign-up">Sign up</button><button type="button" id="sign-in">Sign in with password</button>
<p>A sign-up is confirmed by the link mailed to the <a href="${inboxUrl.replace(/"/g, '&quot;')}">mail inbox</a>.</p>
<h2>2. Passkey</h2>
<button type="button" id="register">Register a passkey</button>
<button type="button" id="sign-out">Sign out</button>
<button type="button" id="passkey-sign-in">Sign in with a passkey</button>
<h2>Status</h2><p id="status" role="status" aria-live="polite">Signed out.</p></main></body></html>`
}

/** The page's script (plain ES2020, `window.AuthJs` from the bundle). */
export const PASSKEYS_SCRIPT = `'use strict'
;(() => {
  const client = new AuthJs.GoTrueClient({
    url: location.origin + '/auth/v1',
    storageKey: 'gatehouse-passkeys-page',
    detectSessionInUrl: false,
    experimental: { passkey: true },
  })
  const status = document.getElementById('status')
  const show = (kind, text) => {
    status.className = kind
    status.textContent = text
  }
  const value = (id) => document.getElementById(id).value
  const run = (id, action) =>
    document.getElementById(id).addEventListener('click', async () => {
      show('', 'Working…')
      try {
        const { data, error } = await action()
        if (error) show('error', (error.code ? error.code + ': ' : '') + error.message)
        else show('ok', describe(data))
      } catch (failure) {
        show('error', String(failure))
      }
    })
  const describe = (data) => {
    const user = data && (data.user || (data.session && data.session.user))
    if (data && data.session === null && user) return 'Signed up as ' + user.email + ': confirm the address through the mail inbox, then sign in.'
    if (user && data.viaPasskey) return 'Signed in with a passkey as ' + (user.email || user.id) + '.'
    if (user) return 'Signed in as ' + (user.email || user.id) + '.'
    if (data && data.friendly_name !== undefined) return 'Passkey registered: ' + (data.friendly_name || data.id) + '.'
    return 'Done.'
  }
  run('sign-up', () => client.signUp({ email: value('email'), password: value('password') }))
  run('sign-in', () => client.signInWithPassword({ email: value('email'), password: value('password') }))
  run('register', () => client.registerPasskey())
  run('sign-out', async () => {
    const { error } = await client.signOut()
    return { data: null, error }
  })
  run('passkey-sign-in', async () => {
    const result = await client.signInWithPasskey()
    return result.error ? result : { data: { ...result.data, viaPasskey: true }, error: null }
  })
  client.getSession().then(({ data }) => {
    if (data.session) show('ok', 'Signed in as ' + (data.session.user.email || data.session.user.id) + '.')
  })
})()
`

/**
 * `@supabase/auth-js` as one browser script defining `window.AuthJs` (esbuild, loaded at the
 * first call: only this page needs it).
 */
export async function bundleAuthJs(): Promise<string> {
  const { build } = await import('esbuild')
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
