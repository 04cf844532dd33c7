/**
 * A small web app that signs its users in with GitHub through a Gatehouse auth server, using
 * `@supabase/auth-js` unchanged (the implicit flow: the session comes back in the URL fragment,
 * which the page hands to the app).
 *
 * - `GET /` a page with a "Sign in with GitHub" link;
 * - `GET /login` asks auth-js for the `/authorize?provider=github` URL and redirects to it;
 * - `GET /welcome` (the `redirect_to`) reads `location.hash` in the browser and posts it to
 *   `/session`, which checks it with auth-js (`setSession`, then `getUser`) and greets the user.
 *
 * Use {@link startApp} against any auth server with GitHub enabled, or run this file:
 * `AUTH_URL=http://127.0.0.1:9999 APP_PORT=3000 node --conditions=dev-source --import tsx examples/github-sign-in/app.ts`
 * (see the README); `run-local.ts` runs it all on this machine with a stand-in for GitHub.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { GoTrueClient } from '@supabase/auth-js'

/** The app's options. */
export interface AppOptions {
  /** The auth server's URL, such as `http://127.0.0.1:9999`. */
  readonly authUrl: string
  /** Listen port. @default 3000 */
  readonly port?: number
}

const page = (body: string): string =>
  `<!doctype html><html><head><meta charset="utf-8"><title>Gatehouse + GitHub</title></head><body>${body}</body></html>`

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => `&#${String(c.charCodeAt(0))};`)

/** The session handed over by the page: the fragment's parameters. */
async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  let body = ''
  for await (const chunk of request) {
    body += String(chunk)
    if (body.length > 16_384) break
  }
  return new URLSearchParams(body)
}

/**
 * Starts the app.
 *
 * @returns The listening server and its URL.
 */
export async function startApp(options: AppOptions): Promise<{ server: Server; url: string }> {
  // One client per request: each browser has its own session (no storage on the server).
  const client = () =>
    new GoTrueClient({
      url: options.authUrl,
      autoRefreshToken: false,
      persistSession: false,
      detectSessionInUrl: false,
    })
  let appUrl = ''
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://app').pathname
    const html = (status: number, body: string) => {
      response.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(page(body))
    }
    if (request.method === 'GET' && path === '/') {
      html(200, '<h1>Welcome</h1><p><a href="/login">Sign in with GitHub</a></p>')
      return
    }
    if (request.method === 'GET' && path === '/login') {
      void client()
        .signInWithOAuth({
          provider: 'github',
          options: { redirectTo: `${appUrl}/welcome`, skipBrowserRedirect: true },
        })
        .then(({ data, error }) => {
          if (error !== null) {
            html(502, `<p>Sign-in is unavailable: ${escapeHtml(error.message)}</p>`)
            return
          }
          response.writeHead(302, { location: data.url }).end()
        })
      return
    }
    if (request.method === 'GET' && path === '/welcome') {
      // The fragment never reaches a server: the page posts it (an error comes the same way).
      html(
        200,
        `<p id="status">Signing in…</p><form id="f" method="post" action="/session"><input type="hidden" name="fragment"></form>
<script>document.forms.f.fragment.value = location.hash.slice(1); history.replaceState(null, '', '/welcome'); document.forms.f.submit()</script>`,
      )
      return
    }
    if (request.method === 'POST' && path === '/session') {
      void readForm(request).then(async (form) => {
        const fragment = new URLSearchParams(form.get('fragment') ?? '')
        const failure = fragment.get('error_description')
        if (failure !== null) {
          html(403, `<h1>Not signed in</h1><p>${escapeHtml(failure)}</p><a href="/">Back</a>`)
          return
        }
        const auth = client()
        const { data, error } = await auth.setSession({
          access_token: fragment.get('access_token') ?? '',
          refresh_token: fragment.get('refresh_token') ?? '',
        })
        if (error !== null || data.user === null) {
          html(401, `<h1>Not signed in</h1><p>${escapeHtml(error?.message ?? 'no user')}</p>`)
          return
        }
        const name = String(data.user.user_metadata.full_name ?? data.user.email ?? '')
        html(
          200,
          `<h1 id="greeting">Signed in as ${escapeHtml(name)}</h1><p>${escapeHtml(data.user.email ?? '')} via ${escapeHtml(String(data.user.app_metadata.provider))}</p>`,
        )
      })
      return
    }
    html(404, '<p>Not found</p>')
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 3000, '127.0.0.1', resolve))
  appUrl = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`
  return { server, url: appUrl }
}

// Run as a program: the auth server's URL from AUTH_URL, the port from APP_PORT (default 3000).
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const authUrl = process.env.AUTH_URL
  if (authUrl === undefined || authUrl === '') {
    process.stderr.write('AUTH_URL is required: the auth server, such as http://127.0.0.1:9999\n')
    process.exit(2)
  }
  const app = await startApp({ authUrl, port: Number(process.env.APP_PORT ?? '3000') })
  process.stdout.write(`open ${app.url} (Ctrl-C to stop)\n`)
}
