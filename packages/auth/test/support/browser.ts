/**
 * A headless browser for sign-in journeys: follows redirects with a cookie jar per origin,
 * submits auto-posting forms (`form_post`), and stops at the first URL outside the servers it
 * was told about (the site the user lands on).
 */

/** Where a journey ended. */
export interface Landing {
  /** The URL the browser was sent to last (on the site). */
  readonly url: URL
  /** Its fragment's parameters. */
  readonly fragment: URLSearchParams
  /** The status of the redirect that sent it there. */
  readonly status: number
}

/** A browser that knows which origins are servers (everything else is the landing site). */
export class Browser {
  readonly #servers: ReadonlySet<string>
  readonly #jars = new Map<string, Map<string, string>>()

  constructor(servers: readonly string[]) {
    this.#servers = new Set(servers.map((s) => new URL(s).origin))
  }

  /**
   * Opens `url` and follows it until it leaves the servers.
   *
   * @param options `referer`: the page the first request comes from (as a browser sends it when
   *   a page navigates); `until`: stop before requesting a URL it accepts (it is then the
   *   landing).
   */
  async open(
    url: string | URL,
    options: { readonly referer?: string; readonly until?: (url: URL) => boolean } = {},
  ): Promise<Landing> {
    let next = new URL(url)
    let form: URLSearchParams | undefined
    let status = 0
    for (let hop = 0; hop < 25; hop++) {
      if (!this.#servers.has(next.origin) || options.until?.(next) === true) {
        return { url: next, fragment: new URLSearchParams(next.hash.slice(1)), status }
      }
      const jar = this.#jars.get(next.origin) ?? new Map<string, string>()
      this.#jars.set(next.origin, jar)
      const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ')
      const response = await fetch(next, {
        method: form === undefined ? 'GET' : 'POST',
        redirect: 'manual',
        headers: {
          ...(cookie === '' ? {} : { cookie }),
          ...(hop === 0 && options.referer !== undefined ? { referer: options.referer } : {}),
          ...(form === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
        },
        body: form?.toString(),
      })
      for (const line of response.headers.getSetCookie()) {
        const [pair = ''] = line.split(';')
        const eq = pair.indexOf('=')
        const name = pair.slice(0, eq).trim()
        const value = pair.slice(eq + 1).trim()
        if (/expires=Thu, 01 Jan 1970/i.test(line) || value === '') jar.delete(name)
        else jar.set(name, value)
      }
      status = response.status
      const body = await response.text()
      const location = response.headers.get('location')
      form = undefined
      if (location !== null) {
        next = new URL(location, next)
        continue
      }
      const action = /<form method="post" action="([^"]+)">/i.exec(body)?.[1]
      if (action === undefined) {
        throw new Error(
          `journey stopped at ${next.href} (${String(status)}): ${body.slice(0, 300)}`,
        )
      }
      form = new URLSearchParams(
        [...body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map(
          (m): [string, string] => [m[1] ?? '', (m[2] ?? '').replace(/&quot;/g, '"')],
        ),
      )
      next = new URL(action.replace(/&amp;/g, '&'), next)
    }
    throw new Error(`too many redirects from ${String(url)}`)
  }
}
