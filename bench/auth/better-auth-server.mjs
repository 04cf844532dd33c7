/**
 * The peer of `bench/auth/peer.ts`: better-auth with its email-and-password sign-in, on its
 * PostgreSQL adapter (a `pg` Pool), served by Node's HTTP server through `toNodeHandler`, in a
 * process of its own (as the bench runs our server). It creates its schema with better-auth's
 * migration API, then prints `listening on <port>`.
 *
 * Passwords are hashed with bcrypt cost 10 through the `bcrypt` package our server uses
 * (better-auth's `password.hash`/`verify` options; its default is scrypt), so that the two servers
 * pay the same for the hash.
 *
 * Usage: node bench/auth/better-auth-server.mjs <database-url> <port> <pool-size>
 *
 * Plain JavaScript, not TypeScript: better-auth's packages export their TypeScript sources under
 * the same `dev-source` condition as ours, which `tsconfig.check.json` turns on, and those sources
 * do not type-check with our settings.
 */
import { createServer } from 'node:http'
import bcrypt from 'bcrypt'
import { betterAuth } from 'better-auth'
import { getMigrations } from 'better-auth/db/migration'
import { toNodeHandler } from 'better-auth/node'
import pg from 'pg'

const [databaseUrl = '', portText = '0', poolText = '16'] = process.argv.slice(2)
const port = Number(portText)
const baseURL = `http://127.0.0.1:${String(port)}`

const auth = betterAuth({
  baseURL,
  secret: 'bench-secret-bench-secret-bench-secret!',
  // Connections stay open between slices (pg's default closes them after 10 s idle), so that the
  // bench's CPU reading of its PostgreSQL backends loses none.
  database: new pg.Pool({
    connectionString: databaseUrl,
    max: Number(poolText),
    idleTimeoutMillis: 0,
  }),
  emailAndPassword: {
    enabled: true,
    // No mail round trip, as our server's MAILER_AUTOCONFIRM: a sign-up signs in at once.
    requireEmailVerification: false,
    autoSignIn: true,
    password: {
      hash: (password) => bcrypt.hash(password, 10),
      verify: ({ hash, password }) => bcrypt.compare(password, hash),
    },
  },
  // Like our bench server, which runs with no rate limits: the bench's 50 clients share one IP.
  rateLimit: { enabled: false },
  telemetry: { enabled: false },
  trustedOrigins: [baseURL],
})

const { runMigrations } = await getMigrations(auth.options)
await runMigrations()

const handler = toNodeHandler(auth)
const server = createServer((req, res) => {
  void handler(req, res)
})
server.keepAliveTimeout = 60_000
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening on ${String(port)}\n`)
})
const stop = () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
