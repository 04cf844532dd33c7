/**
 * The server's two HTML pages, both one form that posts hidden fields back to this server: the
 * `form_post` resubmission of `/callback` (which submits itself) and the confirmation page of a
 * mailed link (`MAILER_LINK_CONFIRMATION_PAGE`, a button a person clicks). Not cached, never
 * framed, no referrer (their URLs and fields carry codes), scripts only with the page's nonce.
 *
 * @module
 */
import type { FastifyReply } from 'fastify'

/** `text` safe inside a double-quoted HTML attribute or as element text (numeric entities). */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${String(c.charCodeAt(0))};`)
}

/** What a {@link sendFormPage} page shows and posts. */
export interface FormPage {
  readonly title: string
  /** Text above the form (plain text, escaped here). */
  readonly text?: string
  /** Where the form posts, relative to the page's URL. */
  readonly action: string
  readonly fields: Readonly<Record<string, string>>
  readonly button: string
  /**
   * A random nonce: the page submits itself with a script of that nonce, and shows its button
   * only without script. Absent: the button is shown and nothing is submitted for the person.
   */
  readonly autoSubmitNonce?: string
}

/** Answers 200 with the page. */
export function sendFormPage(reply: FastifyReply, page: FormPage): FastifyReply {
  const inputs = Object.entries(page.fields)
    .map(
      ([name, value]) =>
        `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`,
    )
    .join('')
  const button = `<button type="submit">${escapeHtml(page.button)}</button>`
  const nonce = page.autoSubmitNonce
  const scripts = nonce === undefined ? '' : ` script-src 'nonce-${nonce}';`
  return reply
    .code(200)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('content-security-policy', `default-src 'none';${scripts} frame-ancestors 'none'`)
    .send(
      `<!doctype html><html><head><meta charset="utf-8">` +
        `<meta name="viewport" content="width=device-width, initial-scale=1">` +
        `<title>${escapeHtml(page.title)}</title></head><body>` +
        (page.text === undefined ? '' : `<p>${escapeHtml(page.text)}</p>`) +
        `<form method="post" action="${escapeHtml(page.action)}">${inputs}` +
        (nonce === undefined
          ? `${button}</form>`
          : `<noscript>${button}</noscript></form>` +
            `<script nonce="${nonce}">document.forms[0].submit()</script>`) +
        `</body></html>`,
    )
}
