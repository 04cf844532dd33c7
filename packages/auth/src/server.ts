import { randomUUID } from 'node:crypto'
import { availableParallelism } from 'node:os'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { adminRoutes } from './api/admin.js'
import { BODY_LIMIT, registerBodyParser } from './api/body.js'
import type { AppContext } from './api/context.js'
import { registerCors } from './api/cors.js'
import { registerRequestDeadline } from './api/deadline.js'
import { registerErrorHandler } from './api/errors/error-handler.js'
import { healthRoutes } from './api/health.js'
import { inviteRoutes } from './api/invite.js'
import { logoutRoutes } from './api/logout.js'
import { registerAuthDecorators } from './api/middleware.js'
import { settingsRoutes } from './api/settings.js'
import { signupRoutes } from './api/signup.js'
import { tokenRoutes } from './api/token.js'
import { userRoutes } from './api/user.js'
import { systemClock, type Clock } from './clock.js'
import type { Settings } from './conf/settings.js'
import type { JwtKeys } from './crypto/jwt.js'
import { PasswordHasher } from './crypto/password-hasher.js'
import { NoLimiter, type Limiter } from './limiter/limiter.js'
import { NoopMailer, type Mailer } from './mailer/mailer.js'
import { NoCaptcha, type CaptchaVerifier } from './security/captcha.js'
import { NoSmsProvider, type SmsProvider } from './sms/sms-provider.js'
import type { Db } from './storage/db.js'
import { TokenService } from './tokens/service.js'

/** Services {@link buildServer} wires in; the optional ones default to no-op implementations. */
export interface ServerDeps {
  readonly db: Db
  readonly keys: JwtKeys
  /** @default the system clock */
  readonly clock?: Clock
  /** @default {@link NoopMailer} */
  readonly mailer?: Mailer
  /** @default {@link NoSmsProvider} */
  readonly sms?: SmsProvider
  /** @default {@link NoCaptcha} */
  readonly captcha?: CaptchaVerifier
  /** @default {@link NoLimiter} */
  readonly limiter?: Limiter
  /** @default no logging */
  readonly logger?: Logger
  /** @default {@link passwordHasherFor} the settings (bcrypt, bounded) */
  readonly passwordHasher?: PasswordHasher
}

/**
 * The bcrypt runner of `PASSWORD_HASH_CONCURRENCY` (0: one slot per CPU core) and
 * `PASSWORD_HASH_QUEUE_SIZE`.
 *
 * @param cores CPU cores for a concurrency of 0. @default os.availableParallelism()
 */
export function passwordHasherFor(
  settings: Settings,
  cores: number = availableParallelism(),
): PasswordHasher {
  const { hashConcurrency, hashQueueSize } = settings.password
  return new PasswordHasher({
    concurrency: hashConcurrency > 0 ? hashConcurrency : Math.max(1, cores),
    queueSize: hashQueueSize,
  })
}

/**
 * Builds the HTTP API (Fastify), not listening: call `listen()` on the result (only `main.ts`
 * does) or drive it with `inject()` in tests. The database must already be migrated.
 *
 * @example
 * ```ts
 * let settings!: Settings, db!: Db, keys!: JwtKeys
 * const app = buildServer(settings, { db, keys })
 * await app.listen({ host: settings.apiHost, port: settings.port })
 * ```
 */
export function buildServer(settings: Settings, deps: ServerDeps): FastifyInstance {
  const clock = deps.clock ?? systemClock
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger | undefined,
    logController: new LogController({
      disableRequestLogging: deps.logger === undefined,
      requestIdLogLabel: 'request_id',
    }),
    bodyLimit: BODY_LIMIT,
    // API_MAX_REQUEST_DURATION also bounds receiving the request (a client trickling its body);
    // the whole request is cut by registerRequestDeadline.
    requestTimeout: settings.apiMaxRequestDuration,
    requestIdHeader:
      settings.requestIdHeader === '' ? false : settings.requestIdHeader.toLowerCase(),
    genReqId: () => randomUUID(),
    trustProxy: false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true },
  })
  const ctx: AppContext = {
    settings,
    db: deps.db,
    clock,
    keys: deps.keys,
    tokens: new TokenService(settings, deps.keys, clock),
    passwords: deps.passwordHasher ?? passwordHasherFor(settings),
    mailer: deps.mailer ?? new NoopMailer(),
    sms: deps.sms ?? new NoSmsProvider(),
    captcha: deps.captcha ?? new NoCaptcha(),
    limiter: deps.limiter ?? new NoLimiter(),
  }
  registerAuthDecorators(app)
  registerRequestDeadline(app, settings.apiMaxRequestDuration)
  registerBodyParser(app)
  registerErrorHandler(app)
  registerCors(app)
  healthRoutes(app, ctx)
  settingsRoutes(app, ctx)
  signupRoutes(app, ctx)
  tokenRoutes(app, ctx)
  userRoutes(app, ctx)
  logoutRoutes(app, ctx)
  inviteRoutes(app, ctx)
  adminRoutes(app, ctx)
  return app
}
