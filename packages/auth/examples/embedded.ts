/**
 * Runs the auth server in-process on embedded PGlite and talks to it with @supabase/auth-js:
 * sign up, sign in, read the user, refresh, and list users with the service_role key.
 *
 * Run from the repository root: `node --conditions=dev-source --import tsx packages/auth/examples/embedded.ts`
 */
import { GoTrueAdminApi, GoTrueClient } from '@supabase/auth-js'
import { createAuthApp, loadSettings, serviceRoleKey } from '@gatehouse/auth'

function print(...parts: unknown[]): void {
  process.stdout.write(`${parts.map(String).join(' ')}\n`)
}

const settings = loadSettings({
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://127.0.0.1:9999',
  AUTHSVC_JWT_SECRET: 'an-example-secret-of-at-least-32-characters',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'pglite://memory',
  AUTHSVC_MAILER_AUTOCONFIRM: 'true',
})
const app = await createAuthApp(settings)
const url = await app.server.listen({ host: '127.0.0.1', port: 0 })

const auth = new GoTrueClient({ url, autoRefreshToken: false, persistSession: false })
await auth.signUp({ email: 'ada@example.com', password: 'correct-horse-1' })
const { data, error } = await auth.signInWithPassword({
  email: 'ada@example.com',
  password: 'correct-horse-1',
})
if (error) throw error
print('signed in as', data.user.email)
print('user id', (await auth.getUser()).data.user?.id)
print('new refresh token', (await auth.refreshSession()).data.session?.refresh_token)

const key = await serviceRoleKey(app.keys, Math.floor(Date.now() / 1000))
const admin = new GoTrueAdminApi({ url, headers: { Authorization: `Bearer ${key}` } })
print('users', (await admin.listUsers()).data.users.length)

await app.close()
