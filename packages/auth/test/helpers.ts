import { createTestSchema, FakeClock, type TestDatabase } from '@gatehouse/testing'
import type { LightMyRequestResponse } from 'fastify'
import {
  createAuthApp,
  loadSettings,
  PasswordHasher,
  serviceRoleKey,
  type PasswordHasherOptions,
  type AuthApp,
  type Clock,
  type AuthDeps,
  type Mailer,
  type MailMessage,
  type Settings,
} from '@gatehouse/auth'
import { hashPassword, verifyPassword } from '#internal/crypto/password.js'

/** A user as the API renders it (the fields tests read). */
export interface UserJson {
  id: string
  aud: string
  role: string
  email: string
  phone: string
  app_metadata: Record<string, unknown>
  user_metadata: Record<string, unknown>
  identities: Record<string, unknown>[]
  last_sign_in_at?: string
  confirmation_sent_at?: string
  banned_until?: string
  [key: string]: unknown
}

/** A token response. */
export interface TokenJson {
  access_token: string
  refresh_token: string
  token_type: string
  expires_in: number
  expires_at: number
  user: UserJson
  weak_password?: { reasons: string[] }
}

/** Any error shape: legacy, 2024-01-01 or OAuth. */
export interface ErrorJson {
  code: number | string
  error_code: string
  msg: string
  message: string
  error: string
  error_description: string
}

/** A response body in tests: every field a test may read (runtime assertions check them). */
export type Reply = TokenJson & UserJson & ErrorJson & { users: UserJson[] }

/** An injected response whose `json()` is typed as {@link Reply}. */
export type TestResponse = Omit<LightMyRequestResponse, 'json'> & { json(): Reply }

/** The HS256 secret of test servers. */
export const TEST_JWT_SECRET = 'test-secret-with-at-least-32-characters!!'

/** A running test server on its own PostgreSQL schema. */
export interface TestServer {
  readonly app: AuthApp
  readonly settings: Settings
  readonly database: TestDatabase
  /** A `service_role` JWT for the admin API. */
  readonly serviceKey: string
  /** `http://127.0.0.1:<port>` once {@link TestServer.listen} resolved. */
  url: string
  listen(): Promise<string>
  close(): Promise<void>
  /** JSON request through `inject`; `body` objects are sent as JSON. */
  request(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: string,
    options?: { body?: unknown; token?: string; headers?: Record<string, string> },
  ): Promise<TestResponse>
}

/** Variables every test server gets; `overrides` win. */
export function testEnv(
  databaseUrl: string,
  overrides: Record<string, string> = {},
): Record<string, string> {
  return {
    AUTHSVC_SITE_URL: 'http://localhost:3000',
    AUTHSVC_API_EXTERNAL_URL: 'http://127.0.0.1:9999',
    AUTHSVC_JWT_SECRET: TEST_JWT_SECRET,
    AUTHSVC_DB_DRIVER: 'postgres',
    DATABASE_URL: databaseUrl,
    AUTHSVC_JWT_AUD: 'authenticated',
    AUTHSVC_JWT_DEFAULT_GROUP_NAME: 'authenticated',
    AUTHSVC_MAILER_AUTOCONFIRM: 'true',
    ...overrides,
  }
}

/** Options of {@link startTestServer}. */
export interface TestServerOptions {
  /**
   * Query parameters added to the server's connection string, such as `application_name` (to
   * find its backends in `pg_stat_activity`).
   */
  connectionParams?: Record<string, string>
  /** Services passed to the server (mailer, password hashing, …). */
  deps?: Omit<AuthDeps, 'db' | 'keys' | 'clock'>
}

/**
 * Starts a server (not listening; use `request`, or `listen()` for real HTTP) on a fresh schema.
 *
 * @param label Names the schema.
 * @param overrides Settings variables.
 * @param clock Time source. @default a {@link FakeClock} at the real current time
 */
export async function startTestServer(
  label: string,
  overrides: Record<string, string> = {},
  clock: Clock = new FakeClock(Date.now()),
  options: TestServerOptions = {},
): Promise<TestServer> {
  const database = await createTestSchema(`auth_${label}`)
  const url = new URL(database.url)
  for (const [name, value] of Object.entries(options.connectionParams ?? {})) {
    url.searchParams.set(name, value)
  }
  const settings = loadSettings(testEnv(url.toString(), overrides))
  const app = await createAuthApp(settings, { ...options.deps, clock })
  const serviceKey = await serviceRoleKey(app.keys, Math.floor(clock.now() / 1000))
  const server: TestServer = {
    app,
    settings,
    database,
    serviceKey,
    url: '',
    async listen() {
      await app.server.listen({ host: '127.0.0.1', port: 0 })
      const address = app.server.server.address()
      if (address === null || typeof address === 'string') throw new Error('no address')
      server.url = `http://127.0.0.1:${String(address.port)}`
      return server.url
    },
    async close() {
      await app.close()
      await database.drop()
    },
    async request(method, url, options = {}) {
      const headers: Record<string, string> = { ...options.headers }
      if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
      let payload: string | undefined
      if (options.body !== undefined) {
        payload = typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
        headers['content-type'] ??= 'application/json'
      }
      const response = await app.server.inject({
        method,
        url,
        headers,
        ...(payload === undefined ? {} : { payload }),
      })
      // What the request queued (mails, recovery and magic-link jobs) has run before the test
      // reads the mailer: the queue's worker runs it, this only waits for it.
      await app.flushMail()
      return response
    },
  }
  return server
}

/** Signs a user up (auto-confirm on) and returns the token response. */
export async function signUp(
  server: TestServer,
  email: string,
  password = 'password123',
): Promise<TokenJson> {
  const res = await server.request('POST', '/signup', { body: { email, password } })
  if (res.statusCode !== 200) throw new Error(`signup failed: ${res.body}`)
  return res.json()
}

/** A {@link PasswordHasher} whose checks a test holds open; see {@link gatedPasswordHasher}. */
export interface GatedPasswordHasher {
  readonly hasher: PasswordHasher
  /** What held work waits for: resolved while the gate is open. */
  readonly gate: Promise<void>
  /** Closes the gate: password checks (and anything awaiting {@link gate}) wait from now on. */
  hold(): void
  /** Opens the gate: everything waiting goes on. */
  release(): void
}

/**
 * A bcrypt {@link PasswordHasher} of the given bounds whose password checks wait while the test
 * holds the gate, so that the test decides when slots are busy and queues full. The gate starts
 * open.
 */
export function gatedPasswordHasher(options: PasswordHasherOptions): GatedPasswordHasher {
  let gate = Promise.resolve()
  let open: () => void = () => undefined
  const hasher = new PasswordHasher(options, {
    hash: (password) => hashPassword(password),
    async verify(password, hash) {
      await gate
      return verifyPassword(password, hash)
    },
  })
  return {
    hasher,
    get gate() {
      return gate
    },
    hold() {
      gate = new Promise((resolve) => {
        open = resolve
      })
    },
    release() {
      open()
    },
  }
}

/**
 * A {@link Mailer} that records what it is given, for tests that read links and codes out of the
 * mails. `failing = true` makes every send throw (an SMTP server that is down).
 */
export class RecordingMailer implements Mailer {
  readonly messages: MailMessage[] = []
  failing = false

  send(message: MailMessage): Promise<void> {
    if (this.failing) return Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:2525'))
    this.messages.push(message)
    const waiters = [...this.#waiters]
    this.#waiters.clear()
    for (const wake of waiters) wake()
    return Promise.resolve()
  }

  readonly #waiters = new Set<() => void>()

  /**
   * The `count`-th message to `to` (of `kind`, if given), once it is sent: for mails the queue
   * sends after the answer, when the test talks to the server over HTTP.
   *
   * @throws {Error} When it has not come within `timeoutMs`.
   */
  async waitFor(
    to: string,
    kind?: MailMessage['kind'],
    count = 1,
    timeoutMs = 10_000,
  ): Promise<MailMessage> {
    const found = () => this.to(to, kind)[count - 1]
    const deadline = Date.now() + timeoutMs
    for (let mail = found(); ; mail = found()) {
      if (mail) return mail
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no ${kind ?? 'mail'} #${String(count)} to ${to}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, left)
        this.#waiters.add(done)
        function done() {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  }

  /** The messages sent to `to` (optionally of one kind), oldest first. */
  to(to: string, kind?: MailMessage['kind']): MailMessage[] {
    return this.messages.filter((m) => m.to === to && (kind === undefined || m.kind === kind))
  }

  /**
   * The newest message to `to` (of `kind`, if given).
   *
   * @throws {Error} When there is none.
   */
  last(to: string, kind?: MailMessage['kind']): MailMessage {
    const found = this.to(to, kind).at(-1)
    if (!found) throw new Error(`no ${kind ?? 'mail'} to ${to}`)
    return found
  }
}
