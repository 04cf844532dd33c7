/**
 * The `@gatehouse/oauth2` examples that talk to a server, run as the package README says, with
 * their endpoints from environment variables: the password and refresh grants against a
 * Gatehouse auth server (on its own PostgreSQL database), the code flows, client credentials,
 * introspection and revocation against a real `oidc-provider`, and resource requests against a
 * small API that accepts only that provider's active access tokens.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAuthApp, loadSettings, type AuthApp } from '@gatehouse/auth'
import { createTestDatabase, type TestDatabase } from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  REDIRECT_URI,
  WEB_SECRET,
  authorize,
  startProvider,
  type TestProvider,
} from '../packages/oauth2/test/support/oidc-provider.js'
import { runExample } from './support/run-example.js'

let database: TestDatabase
let auth: AuthApp
let authUrl = ''
let provider: TestProvider
let api: Server
let apiUrl = ''
/** The access tokens the API accepted, in order. */
const accepted: string[] = []
let workDir = ''

const USER = { email: 'ann@example.com', password: 'correct-horse-battery-1' }

beforeAll(async () => {
  database = await createTestDatabase('oauth2_examples')
  auth = await createAuthApp(
    loadSettings({
      AUTHSVC_SITE_URL: 'http://127.0.0.1:3000',
      AUTHSVC_API_EXTERNAL_URL: 'http://127.0.0.1:9999',
      AUTHSVC_JWT_SECRET: 'an-oauth2-examples-secret-of-32-characters',
      AUTHSVC_DB_DRIVER: 'postgres',
      DATABASE_URL: database.url,
      AUTHSVC_MAILER_AUTOCONFIRM: 'true',
    }),
  )
  await auth.server.listen({ host: '127.0.0.1', port: 0 })
  authUrl = `http://127.0.0.1:${String((auth.server.server.address() as AddressInfo).port)}`
  const signup = await fetch(`${authUrl}/signup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(USER),
  })
  expect(signup.status).toBe(200)

  // The API: any path, answered only for an active access token of the provider (a user's, or a
  // client's own from the client credentials grant).
  api = createServer((request, response) => {
    const token = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? ''
    const { AccessToken, ClientCredentials } = provider.provider
    void Promise.all([AccessToken.find(token), ClientCredentials.find(token)]).then(
      ([user, client]) => {
        const found = user ?? client
        if (found === undefined) {
          response.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end()
          return
        }
        accepted.push(token)
        response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ path: request.url, client: found.clientId }))
      },
    )
  })
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve))
  apiUrl = `http://127.0.0.1:${String((api.address() as AddressInfo).port)}`
  // Tokens may be asked for the API as a resource (RFC 8707).
  provider = await startProvider({ resourceServer: apiUrl })
  workDir = await mkdtemp(join(tmpdir(), 'oauth2-examples-'))
}, 120_000)

afterAll(async () => {
  await auth.close()
  await database.drop()
  await provider.stop()
  await new Promise((resolve) => api.close(resolve))
  if (workDir !== '') await rm(workDir, { recursive: true, force: true })
})

/** Plays the user at the printed authorization URL; answers the prompt with the redirect. */
function signInAtProvider() {
  let callback: string | undefined
  return async (line: string) => {
    const url = /^open (\S+)$/.exec(line)?.[1]
    if (url !== undefined) {
      const params = await authorize(url)
      callback = `${REDIRECT_URI}?${params.toString()}`
      return undefined
    }
    return line.startsWith('the URL you were sent back to') ? callback : undefined
  }
}

describe('the oauth2 examples, run against local servers', () => {
  it('password.ts signs in with a password and refreshes, at the auth server', async () => {
    const run = await runExample('packages/oauth2/examples/password.ts', {
      env: {
        OAUTH2_SITE: authUrl,
        OAUTH2_TOKEN_URL: '/token',
        OAUTH2_USERNAME: USER.email,
        OAUTH2_PASSWORD: USER.password,
      },
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('signed in: true refresh token: true')
    expect(run.stdout).toContain('new refresh token: true')
    expect(run.stdout).toMatch(/^expires at \d{10}$/m)
  })

  it('client-credentials.ts gets a service token and calls the API with it', async () => {
    const before = accepted.length
    const run = await runExample('packages/oauth2/examples/client-credentials.ts', {
      env: {
        OAUTH2_SITE: provider.issuer,
        OAUTH2_TOKEN_URL: '/token',
        OAUTH2_CLIENT_ID: 'post-client',
        OAUTH2_CLIENT_SECRET: 'post-secret-0123456789-0123456789',
        OAUTH2_API_URL: apiUrl,
      },
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^\d+ api$/m)
    expect(run.stdout).toContain("path: '/things'")
    expect(accepted.length).toBe(before + 1)
  })

  it('auth-code.ts runs the code flow with PKCE in a command line and calls the API', async () => {
    const before = accepted.length
    const run = await runExample('packages/oauth2/examples/auth-code.ts', {
      env: {
        OAUTH2_SITE: provider.issuer,
        OAUTH2_AUTHORIZE_URL: '/auth',
        OAUTH2_TOKEN_URL: '/token',
        OAUTH2_CLIENT_ID: 'web-app',
        OAUTH2_CLIENT_SECRET: WEB_SECRET,
        OAUTH2_REDIRECT_URI: REDIRECT_URI,
        OAUTH2_API_URL: `${apiUrl}/resource`,
      },
      answer: signInAtProvider(),
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain(`open ${provider.issuer}/auth?client_id=web-app`)
    expect(run.stdout).toMatch(/200 .*path: '\/resource\?query_foo=bar'.*client: 'web-app'/s)
    expect(accepted.length).toBe(before + 1)
  })

  it('oidc-sign-in.ts discovers the provider, validates the ID token and reads UserInfo', async () => {
    const run = await runExample('packages/oauth2/examples/oidc-sign-in.ts', {
      env: {
        OAUTH2_ISSUER: provider.issuer,
        OAUTH2_CLIENT_ID: 'web-app',
        OAUTH2_CLIENT_SECRET: WEB_SECRET,
        OAUTH2_REDIRECT_URI: REDIRECT_URI,
      },
      answer: signInAtProvider(),
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/alice alice@example\.com$/m)
  })

  it('refresh-revoke-persist.ts refreshes an expired stored token, introspects and revokes it', async () => {
    // A token as an app stores it after the code flow (offline_access: with a refresh token).
    const { Client, pkce } = await import('@gatehouse/oauth2')
    const client = new Client('web-app', WEB_SECRET, {
      site: provider.issuer,
      authorizeUrl: '/auth',
      tokenUrl: '/token',
      redirect_uri: REDIRECT_URI,
    })
    const { code_verifier, code_challenge, code_challenge_method } = pkce()
    const params = await authorize(
      client.authCode.authorizeUrl({
        scope: 'openid offline_access',
        prompt: 'consent',
        code_challenge,
        code_challenge_method,
      }),
    )
    const stored = await client.authCode.getToken(params.get('code') ?? '', { code_verifier })
    expect(stored.refreshToken).toBeDefined()
    const file = join(workDir, 'token.json')
    await writeFile(file, JSON.stringify({ ...stored.toHash(), expires_at: 1 }))

    const run = await runExample('packages/oauth2/examples/refresh-revoke-persist.ts', {
      env: {
        OAUTH2_SITE: provider.issuer,
        OAUTH2_TOKEN_URL: '/token',
        OAUTH2_REVOKE_URL: '/token/revocation',
        OAUTH2_INTROSPECT_URL: '/token/introspection',
        OAUTH2_CLIENT_ID: 'web-app',
        OAUTH2_CLIENT_SECRET: WEB_SECRET,
        OAUTH2_TOKEN_FILE: file,
      },
    })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('refreshed and saved')
    expect(run.stdout).toContain('active: true')
    expect(run.stdout).toContain('active after revocation: false')
    const saved = JSON.parse(await readFile(file, 'utf8')) as { access_token: string }
    expect(saved.access_token).not.toBe(stored.token)
    expect(await provider.provider.AccessToken.find(saved.access_token)).toBeUndefined()
  })
})
