/**
 * Runs the example on this machine, with no GitHub account needed: a stand-in for GitHub's OAuth
 * and API (the fake the auth tests use), a Gatehouse auth server on embedded PGlite with GitHub
 * enabled against it, and the app. Open the printed URL and click "Sign in with GitHub".
 *
 * Run from the repository root:
 * `node --conditions=dev-source --import tsx examples/github-sign-in/run-local.ts`
 */
import { createAuthApp, loadSettings } from '@gatehouse/auth'
import { getFreePort } from '@gatehouse/testing'
import { FakeProvider } from '../../packages/auth/test/support/fake-provider.js'
import { DESCRIPTIONS } from '../../packages/auth/test/support/provider-descriptions.js'
import { startApp } from './app.js'

const github = DESCRIPTIONS.find((d) => d.name === 'github')
if (github === undefined) throw new Error('no GitHub description')
const fake = await FakeProvider.start(github, {
  id: '583231',
  email: 'octocat@example.com',
  emailVerified: true,
  name: 'The Octocat',
  avatar: 'https://avatars.example/octocat.png',
})
const authPort = await getFreePort()
const appPort = await getFreePort()
const authUrl = `http://127.0.0.1:${String(authPort)}`
const auth = await createAuthApp(
  loadSettings({
    AUTHSVC_SITE_URL: `http://127.0.0.1:${String(appPort)}`,
    AUTHSVC_API_EXTERNAL_URL: authUrl,
    AUTHSVC_JWT_SECRET: 'an-example-secret-of-at-least-32-characters',
    AUTHSVC_DB_DRIVER: 'postgres',
    DATABASE_URL: 'pglite://memory',
    AUTHSVC_JWT_AUD: 'authenticated',
    ...fake.env(`${authUrl}/callback`),
  }),
)
await auth.server.listen({ host: '127.0.0.1', port: authPort })
const app = await startApp({ authUrl, port: appPort })
process.stdout.write(`open ${app.url} and sign in with the stand-in GitHub (Ctrl-C to stop)\n`)
process.once('SIGINT', () => {
  app.server.close()
  void auth.close().then(() => fake.stop())
})
