/**
 * The page mailed links land on under `npm start` (its default `SITE_URL`): it says what
 * happened, from what the auth server put in the address: the signed-in user (a session in the
 * fragment: it asks `/auth/v1/user` with the access token), the error (`error`,
 * `error_code`, `error_description`, in the fragment or the query), a `message`, or a PKCE
 * `?code=` that the app which started the flow must exchange. It builds no HTML from the address
 * or the answer: everything goes through `textContent`, and the page's CSP allows only its own
 * script.
 *
 * @module
 */
import { escapeHtml } from '@gatehouse/mail-inbox'

/** The page's policy: its own script, requests to its own origin only. */
export const SITE_CSP =
  "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;color:#1f2937}
header{background:#1f2937;color:#fff;padding:.7em 1.2em;font-weight:600}
main{max-width:46em;padding:1em 1.2em}dl{display:grid;grid-template-columns:max-content 1fr;gap:.3em 1em}
dt{color:#6b7280}dd{margin:0;word-break:break-all}code{font-size:.85em;word-break:break-all}
.error{border-left:4px solid #dc2626;padding:.2em 1em;background:#fef2f2}
.ok{border-left:4px solid #16a34a;padding:.2em 1em;background:#f0fdf4}`

/**
 * The page's HTML.
 *
 * @param inboxUrl The mail inbox's page, linked from this one.
 */
export function sitePage(inboxUrl: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Gatehouse development site</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer">
<style>${STYLE}</style><script src="/site.js" defer></script></head><body>
<header>Gatehouse development site</header>
<main><section id="result" aria-live="polite"><p>Reading the link…</p></section>
<p>This page is <code>SITE_URL</code> of <code>npm start</code>: the auth server sends people here
after a mailed link (sign-up confirmation, magic link, password recovery, invitation, email change)
or a sign-in with a provider. In your app, set <code>AUTHSVC_SITE_URL</code> to your own page, or
pass <code>redirect_to</code> / <code>emailRedirectTo</code>.</p>
<p><a href="${escapeHtml(inboxUrl)}">Open the mail inbox</a></p></main></body></html>`
}

/** What each verification type did, by the `type` the auth server puts in the fragment. */
const WHAT_HAPPENED: Readonly<Record<string, string>> = {
  signup: 'Your email address is confirmed and you are signed in.',
  magiclink: 'The magic link signed you in.',
  recovery:
    'The recovery link signed you in: set a new password now (auth.updateUser({ password })).',
  invite:
    'You accepted the invitation and are signed in: set a password now (auth.updateUser({ password })).',
  email_change: 'Your new email address is confirmed.',
}

/** The page's script (plain ES2020). */
export const SITE_SCRIPT = `'use strict'
;(async () => {
  const result = document.getElementById('result')
  const whatHappened = ${JSON.stringify(WHAT_HAPPENED)}
  const fragment = new URLSearchParams(location.hash.slice(1))
  const query = new URLSearchParams(location.search)
  const param = (name) => fragment.get(name) ?? query.get(name)

  const show = (kind, title, text, details) => {
    const box = document.createElement('div')
    box.className = kind
    const heading = document.createElement('h1')
    heading.textContent = title
    box.append(heading)
    if (text) {
      const p = document.createElement('p')
      p.textContent = text
      box.append(p)
    }
    if (details) {
      const list = document.createElement('dl')
      for (const [name, value] of details) {
        const dt = document.createElement('dt')
        dt.textContent = name
        const dd = document.createElement('dd')
        dd.textContent = value
        list.append(dt, dd)
      }
      box.append(list)
    }
    result.replaceChildren(box)
  }

  // Tokens and codes leave the address bar (and the history) at once.
  if (location.hash !== '' || location.search !== '') history.replaceState(null, '', location.pathname)

  const error = param('error')
  const accessToken = fragment.get('access_token')
  if (error) {
    const code = param('error_code')
    show('error', 'The link did not sign you in', param('error_description') ?? error, [
      ['error', error],
      ...(code ? [['error_code', code]] : []),
    ])
  } else if (accessToken) {
    const type = fragment.get('type') ?? ''
    let response
    try {
      response = await fetch('/auth/v1/user', { headers: { authorization: 'Bearer ' + accessToken } })
    } catch (failure) {
      show('error', 'The auth server did not answer', String(failure))
      return
    }
    const body = await response.json().catch(() => ({}))
    if (!response.ok) {
      show('error', 'The session from the link was refused', body.msg ?? body.message ?? body.error_description ?? String(response.status), [
        ['status', String(response.status)],
        ...(body.error_code ? [['error_code', body.error_code]] : []),
      ])
      return
    }
    const expiresAt = Number(fragment.get('expires_at'))
    show('ok', 'Signed in as ' + (body.email || body.phone || body.id), whatHappened[type] ?? 'You are signed in.', [
      ['user id', body.id],
      ['email', body.email ?? ''],
      ['email confirmed at', body.email_confirmed_at ?? 'not confirmed'],
      ['link type', type || '(none)'],
      ['session expires', Number.isFinite(expiresAt) && expiresAt > 0 ? new Date(expiresAt * 1000).toLocaleString() : ''],
      ['access token', accessToken],
      ['refresh token', fragment.get('refresh_token') ?? ''],
    ])
  } else if (query.get('code')) {
    show('ok', 'An authorization code arrived (PKCE flow)', 'The app that started this sign-in exchanges it for a session with its code verifier: supabase.auth.exchangeCodeForSession(code). This page does not hold the verifier, so it cannot.', [
      ['code', query.get('code')],
    ])
  } else if (param('message')) {
    show('ok', 'The auth server says', param('message'))
  } else {
    show('ok', 'Nothing to show yet', 'Follow a link from a mail in the inbox: this page then says who signed in, or what went wrong.')
  }
})()
`
