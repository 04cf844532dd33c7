/**
 * The inbox's HTML: the list (search, count, delete) and a mail's page with its views (HTML in a
 * sandboxed frame, text, headers, source). Every value from a mail is escaped here; the page's
 * only script is the inbox's own (`/inbox.js`, see `client.ts`), which swaps in parts of these
 * pages and never builds HTML from mail data.
 *
 * @module
 */
import type { MailSummary, ReceivedMail } from './store.js'

/** `value` with `& < > " '` as character references, for text and quoted attribute values. */
export const escapeHtml = (value: string): string =>
  value.replace(
    /[&<>"']/g,
    (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] ?? ch,
  )

const STYLE = `*{box-sizing:border-box}body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1f2937;background:#fff}
header{display:flex;gap:1em;align-items:center;background:#1f2937;color:#fff;padding:.6em 1em}
header a{color:#fff;font-weight:600;text-decoration:none}#count{opacity:.8}
.bar{display:flex;gap:.6em;align-items:center;padding:.6em 1em;border-bottom:1px solid #e5e7eb}
.bar input{flex:1;font:inherit;padding:.35em .6em;border:1px solid #d1d5db;border-radius:6px}
button{font:inherit;padding:.3em .8em;border:1px solid #d1d5db;border-radius:6px;background:#f9fafb;cursor:pointer}
button:hover{background:#fee2e2}table{border-collapse:collapse;width:100%}
td,th{padding:.45em 1em;border-bottom:1px solid #e5e7eb;text-align:left;vertical-align:top}
tr:hover{background:#f3f4f6}.preview{color:#6b7280;font-size:.9em}.lang{font-size:.8em;padding:0 .3em;border:1px solid #d1d5db;border-radius:3px;color:#374151}.meta{padding:.6em 1em;border-bottom:1px solid #e5e7eb}
.meta h2{margin:.2em 0 .4em}nav.views{display:flex;gap:.2em;padding:0 1em;border-bottom:1px solid #e5e7eb}
nav.views a{padding:.45em .9em;text-decoration:none;color:#374151;border-bottom:2px solid transparent}
nav.views a[aria-current]{border-color:#2563eb;color:#2563eb}
iframe{border:0;width:100%;height:calc(100vh - 15em)}pre{margin:0;padding:1em;white-space:pre-wrap;word-break:break-all}
.notice{padding:.6em 1em;background:#fef3c7}.empty{padding:.6em 1em;color:#4b5563}`

/** `1 mail`, `3 mails`. */
export const countLabel = (count: number): string =>
  count === 1 ? '1 mail' : `${String(count)} mails`

function layout(title: string, count: number, body: string, bodyAttributes = ''): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>${STYLE}</style>
<script src="/inbox.js" defer></script></head><body${bodyAttributes}>
<header><a href="/">Gatehouse mail inbox</a><span id="count" aria-live="polite">${countLabel(count)}</span></header>
${body}</body></html>`
}

const time = (iso: string): string =>
  `<time datetime="${escapeHtml(iso)}">${escapeHtml(iso.replace('T', ' ').slice(0, 19))}</time>`

function row(mail: MailSummary): string {
  const subject = mail.subject || '(no subject)'
  const language =
    mail.language === ''
      ? ''
      : ` <span class="lang" title="Content-Language">${escapeHtml(mail.language)}</span>`
  return (
    `<tr data-id="${String(mail.id)}"><td><a href="/mails/${String(mail.id)}">${escapeHtml(subject)}</a>${language}` +
    `<div class="preview">${escapeHtml(mail.preview)}</div></td>` +
    `<td>${escapeHtml(mail.from)}</td><td>${escapeHtml(mail.to.join(', '))}</td><td>${time(mail.receivedAt)}</td>` +
    `<td><button type="button" data-delete="${String(mail.id)}" aria-label="Delete ${escapeHtml(subject)}">Delete</button></td></tr>`
  )
}

/** What the list page shows. */
export interface ListView {
  /** The mails that match the search, newest first. */
  readonly mails: readonly MailSummary[]
  /** The search, `''` for none. */
  readonly query: string
  /** How many mails are kept in all. */
  readonly count: number
  /** How many mails are kept at most. */
  readonly limit: number
}

/** The list page: search, "Delete all", and the mails (`<section id="list">`). */
export function listPage(view: ListView): string {
  const rows = view.mails.map(row).join('')
  const list = rows
    ? `<table><thead><tr><th>Subject</th><th>From</th><th>To</th><th>Received (UTC)</th><th><span hidden>Actions</span></th></tr></thead><tbody>${rows}</tbody></table>`
    : view.query
      ? `<p class="empty">No mail matches “${escapeHtml(view.query)}”.</p>`
      : `<p class="empty">No mail yet. Mails sent to the SMTP server appear here as they arrive (the last ${String(view.limit)} are kept).</p>`
  const search = `<form class="bar" role="search" action="/" method="get">
<input type="search" name="q" value="${escapeHtml(view.query)}" aria-label="Search mails" placeholder="Search: words, from:…, to:…, subject:&quot;…&quot;" autocomplete="off">
<button type="button" data-delete-all>Delete all</button></form>`
  return layout(
    `Mail inbox (${String(view.count)})`,
    view.count,
    `<main>${search}<section id="list">${list}</section></main>`,
  )
}

/** The views of a mail's page, in tab order. */
export const MAIL_VIEWS = ['html', 'text', 'headers', 'source'] as const

/** One view of a mail's page. */
export type MailView = (typeof MAIL_VIEWS)[number]

const VIEW_LABELS: Readonly<Record<MailView, string>> = {
  html: 'HTML',
  text: 'Text',
  headers: 'Headers',
  source: 'Source',
}

/** The views a mail has: HTML only when it has an HTML body. */
export function viewsOf(mail: ReceivedMail): MailView[] {
  return MAIL_VIEWS.filter((view) => view !== 'html' || mail.html !== '')
}

/** Text with its `http(s)` URLs as links that open in the whole window; the rest escaped. */
function linkify(text: string): string {
  let out = ''
  let last = 0
  for (const match of text.matchAll(/\bhttps?:\/\/[^\s<>"']+/g)) {
    const url = match[0].replace(/[.,;:!?)\]]+$/, '')
    out += escapeHtml(text.slice(last, match.index))
    out += `<a href="${escapeHtml(url)}" target="_top" rel="noreferrer">${escapeHtml(url)}</a>`
    last = match.index + url.length
  }
  return out + escapeHtml(text.slice(last))
}

/**
 * The mail's HTML for the frame: links open in the whole window (`<base target="_top">`); the
 * frame's sandbox lets no script run, and the page's CSP (which a `srcdoc` frame inherits)
 * allows no script but the inbox's own.
 */
function framed(mail: ReceivedMail): string {
  return `<base target="_top">${mail.html}`
}

function viewBody(mail: ReceivedMail, view: MailView, source: string): string {
  switch (view) {
    case 'html':
      return `<iframe title="Mail body" sandbox="allow-top-navigation-by-user-activation allow-popups allow-popups-to-escape-sandbox" srcdoc="${escapeHtml(framed(mail))}"></iframe>`
    case 'text':
      return mail.text === ''
        ? '<p class="empty">This mail has no text part.</p>'
        : `<pre aria-label="Text body">${linkify(mail.text)}</pre>`
    case 'headers':
      return `<table aria-label="Headers"><tbody>${mail.headers
        .map(
          (h) =>
            `<tr><th scope="row">${escapeHtml(h.name)}</th><td>${escapeHtml(h.value)}</td></tr>`,
        )
        .join('')}</tbody></table>`
    case 'source':
      return `<div class="bar"><a href="/api/mails/${String(mail.id)}/source" download="mail-${String(mail.id)}.eml">Download .eml</a></div><pre aria-label="Source">${escapeHtml(source)}</pre>`
  }
}

/** A mail's page in one view, with the tabs to the others and a "Delete" button. */
export function mailPage(
  mail: ReceivedMail,
  view: MailView,
  source: string,
  count: number,
): string {
  const id = String(mail.id)
  const tabs = viewsOf(mail)
    .map(
      (v) =>
        `<a href="/mails/${id}?view=${v}"${v === view ? ' aria-current="page"' : ''}>${VIEW_LABELS[v]}</a>`,
    )
    .join('')
  const kib = (mail.sizeBytes / 1024).toFixed(1)
  return layout(
    mail.subject,
    count,
    `<main><div class="meta"><h2>${escapeHtml(mail.subject || '(no subject)')}</h2>
<div>From: ${escapeHtml(mail.from)}</div><div>To: ${escapeHtml(mail.to.join(', '))}</div>
<div>Received: ${time(mail.receivedAt)} · ${kib} KiB</div>${mail.language === '' ? '' : `<div>Language: ${escapeHtml(mail.language)}</div>`}
<p><button type="button" data-delete="${id}" data-then="/">Delete</button></p></div>
<nav class="views" aria-label="Views">${tabs}</nav>${viewBody(mail, view, source)}</main>`,
    ` data-mail="${id}"`,
  )
}

/** A page that says what is missing. */
export function notFoundPage(message: string, count: number): string {
  return layout('Not found', count, `<main><p class="empty">${escapeHtml(message)}</p></main>`)
}
