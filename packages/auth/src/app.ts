/**
 * Wiring: builds the auth server from settings and dependencies (the one place where
 * implementations are chosen) and returns it not listening and with nothing opened; the database
 * and the keys are opened by {@link AuthApp.start}. The executable listens and supervises
 * (`serve.ts`, run by `main.ts` through `cli.ts`); tests `inject` or listen on port 0.
 *
 * @module
 */
import type { FetchLike } from '@gatehouse/oauth2'
import { RateLimitClient, type RateLimitClientCounts } from '@gatehouse/ratelimit/client'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { serializeUser } from './api/http/serializers.js'
import { authRoutes } from './api/routes.js'
import { systemClock, type Clock } from './clock.js'
import type { Settings } from './conf/settings.js'
import { startWarnings } from './conf/start-warnings.js'
import type { AppContext } from './context.js'
import { JwtKeys } from './crypto/jwt.js'
import { Hooks, type HookTransportOptions } from './hooks/hooks.js'
import type { PasswordHasher } from './crypto/password-hasher.js'
import { InMemoryEmailSendLimiter, type EmailSendLimiter } from './limiter/email-send-limiter.js'
import type { Limiter } from './limiter/limiter.js'
import { PasswordBackoff } from './limiter/password-backoff.js'
import { requestRates } from './limiter/rates.js'
import { ServiceLimiter, type ServiceLimiterStats } from './limiter/service-limiter.js'
import { serviceRules } from './limiter/service-config.js'
import { TokenBucketLimiter } from './limiter/token-bucket.js'
import { NoopMailer, type Mailer } from './mailer/mailer.js'
import { SmtpMailer } from './mailer/smtp.js'
import { ProviderRegistry } from './provider/registry.js'
import { CustomProviders } from './provider/custom.js'
import { SecretBox } from './crypto/secret-box.js'
import { guardedFetch, type HostLookup } from './security/url-guard.js'
import { sendNotification } from './services/shared/notifications.js'
import { CleanupJob, type CleanupResult } from './services/cleanup.js'
import { mailJobHandlers } from './services/shared/mail-jobs.js'
import { AuditTrail } from './services/shared/audit-trail.js'
import { MailQueue } from './services/shared/mail-queue.js'
import { cryptoRandom, type Random } from './random.js'
import { NoCaptcha, SiteverifyCaptcha, type CaptchaVerifier } from './security/captcha.js'
import { RangeApiPwnedPasswords, type PwnedPasswords } from './security/pwned-passwords.js'
import { createServer, passwordHasherFor } from './server.js'
import { LoggedSmsProvider } from './sms/logged.js'
import { MessagebirdProvider } from './sms/messagebird.js'
import { NoSmsProvider, type SmsHttpOptions, type SmsProvider } from './sms/sms-provider.js'
import { TextlocalProvider } from './sms/textlocal.js'
import { TwilioProvider } from './sms/twilio.js'
import { TwilioVerifyProvider } from './sms/twilio-verify.js'
import { VonageProvider } from './sms/vonage.js'
import type { Db } from './storage/db.js'
import { migrate, readMigrations } from './storage/migrate.js'
import { openDb } from './storage/open.js'
import type { AuthMetrics } from './telemetry/auth-metrics.js'
import { CountedMailer, CountedSmsProvider } from './telemetry/counted.js'
import { addRequestTelemetry } from './telemetry/request-telemetry.js'
import { buildTelemetry } from './telemetry/telemetry.js'
import { tracedDb } from './telemetry/traced-db.js'
import { TokenService } from './sessions/token-service.js'

/** Optional replacements for the real dependencies (tests, embedding). */
export interface AuthDeps {
  /**
   * A database to use instead of opening `DATABASE_URL`; it is migrated by `start()` but not
   * closed by `close()` (its owner closes it).
   */
  readonly db?: Db
  /** Keys to use instead of loading `JWT_SECRET`/`JWT_KEYS`. */
  readonly keys?: JwtKeys
  /** @default the system clock */
  readonly clock?: Clock
  /** @default {@link cryptoRandom} */
  readonly random?: Random
  /** @default {@link SmtpMailer} when `SMTP_HOST` is set, else {@link NoopMailer} */
  readonly mailer?: Mailer
  /** @default the provider of `SMS_PROVIDER` ({@link smsProviderFor}), else {@link NoSmsProvider} */
  readonly sms?: SmsProvider
  /** @default {@link SiteverifyCaptcha} when `SECURITY_CAPTCHA_ENABLED`, else {@link NoCaptcha} */
  readonly captcha?: CaptchaVerifier
  /**
   * The leaked-password lookup.
   * @default {@link RangeApiPwnedPasswords} when `PASSWORD_HIBP_ENABLED`, else none
   */
  readonly pwnedPasswords?: PwnedPasswords
  /**
   * @default by `RATE_LIMIT_BACKEND`: a {@link TokenBucketLimiter} of the `RATE_LIMIT_*` rates
   *   (`memory`) or a {@link ServiceLimiter} asking `RATE_LIMIT_SERVICE_ADDRESS` (`ratelimit`)
   */
  readonly limiter?: Limiter
  /**
   * @default by `RATE_LIMIT_BACKEND`: an {@link InMemoryEmailSendLimiter} of
   *   `RATE_LIMIT_EMAIL_SENT`, or the rate limit service's `email_sent` budget
   */
  readonly emailLimiter?: EmailSendLimiter
  /**
   * @default by `RATE_LIMIT_BACKEND`: an {@link InMemoryEmailSendLimiter} of
   *   `RATE_LIMIT_SMS_SENT`, or the rate limit service's `sms_sent` budget
   */
  readonly smsLimiter?: EmailSendLimiter
  /** @default no logging */
  readonly logger?: Logger
  /**
   * A `fetch` for every call to an external OAuth provider.
   * @default `@gatehouse/oauth2`'s transport (undici)
   */
  readonly providerFetch?: FetchLike
  /**
   * The resolver of the SSRF guard of URLs an administrator registers (custom providers), at
   * registration and at connect time.
   * @default the system's (`dns.lookup`)
   */
  readonly urlLookup?: HostLookup
  /** @default {@link passwordHasherFor} the settings (bcrypt, bounded) */
  readonly passwordHasher?: PasswordHasher
  /**
   * Counters to call instead of the ones `METRICS_ENABLED` builds (embedding: the caller's own
   * metrics). The HTTP server metrics and pool gauges still come from the settings.
   */
  readonly metrics?: AuthMetrics
  /**
   * The auth hooks' `fetch` and limits (tests shorten the timeouts).
   * @default the global `fetch`, upstream's limits (HTTP: 5 s, 3 attempts 2 s apart, 200 KiB
   *   answers; `pg-functions://`: 2 s)
   */
  readonly hooks?: HookTransportOptions
}

/** The auth server, built by {@link buildAuthApp}. */
export interface AuthApp {
  readonly settings: Settings
  /**
   * The Fastify instance with every route, not listening: `listen()` on it after
   * {@link AuthApp.start} (`serveCommand` does), or `inject()` requests.
   */
  readonly server: FastifyInstance
  /**
   * The database: the one given or opened (with spans under `TRACING_ENABLED`). A request's
   * statements go through its deadline as well (`request.ctx`, `guardedDb`); these do not.
   *
   * @throws {Error} Before {@link AuthApp.start} has resolved.
   */
  readonly db: Db
  /** The signing and verification keys. @throws {Error} Before {@link AuthApp.start}. */
  readonly keys: JwtKeys
  /**
   * Whether this start created the database's schema (it applied the first migration): an
   * in-memory database always, a PGlite directory or a PostgreSQL schema only the first time.
   */
  readonly freshDatabase: boolean
  /**
   * The counters of the rate limit service's client (decisions, failures, fail-open and
   * fail-closed answers) under `RATE_LIMIT_BACKEND=ratelimit`; `undefined` otherwise.
   */
  readonly rateLimitStats: Readonly<ServiceLimiterStats> | undefined
  /**
   * What the rate limit service's client sent under `RATE_LIMIT_BACKEND=ratelimit`: the decisions
   * asked (`requests`) and the `ShouldRateLimit` calls made (`calls`; fewer with
   * `RATE_LIMIT_SERVICE_COALESCE`); `undefined` otherwise.
   */
  readonly rateLimitClientCounts: RateLimitClientCounts | undefined
  /**
   * The Prometheus scrape endpoint's URL once {@link AuthApp.start} has opened it
   * (`METRICS_ENABLED` with `METRICS_EXPORTER=prometheus`); undefined otherwise.
   */
  readonly metricsUrl: string | undefined
  /** Exports the buffered spans and pending OTLP metrics now (tests, before a shutdown). */
  flushTelemetry(): Promise<void>
  /**
   * Runs every due job of the mail queue now, and the mails they queue, and resolves when none
   * is due (tests; a failed send is not due again until its back-off ends). Before
   * {@link AuthApp.start}, nothing to run.
   */
  flushMail(): Promise<void>
  /**
   * Runs the clean-up of expired flow states and MFA challenges now (it also runs every
   * `DB_CLEANUP_INTERVAL`).
   *
   * @throws {Error} Before {@link AuthApp.start}, or the database's error.
   */
  cleanup(): Promise<CleanupResult>
  /**
   * Loads the keys, opens the database (unless one was given) and applies pending migrations,
   * opens the Prometheus endpoint (when configured), then makes the server ready. Logs at `warn`
   * what the settings leave unable to work (`startWarnings`: confirmations that cannot be
   * sent). Calling it again returns the same promise.
   *
   * @throws {Error} When the database cannot be reached or a key cannot be imported (what was
   *   opened is closed again).
   */
  start(): Promise<void>
  /**
   * Closes the server (draining requests), then the mail queue (sending what is due, for at
   * most 10 s), then the database it opened, then exports what telemetry is buffered and closes
   * the metrics endpoint; waits for a start in progress first.
   * Nothing to do for an app that never started.
   */
  close(): Promise<void>
}

interface Limiters {
  readonly limiter: Limiter
  readonly emailLimiter: EmailSendLimiter
  readonly smsLimiter: EmailSendLimiter
  readonly stats?: ServiceLimiterStats
  readonly counts?: () => RateLimitClientCounts
  readonly close: () => void
}

/**
 * The request and email limiters of `RATE_LIMIT_BACKEND`: token buckets in this instance's memory
 * (as upstream), or decisions of the shared rate limit service over gRPC.
 */
function limitersFor(settings: Settings, deps: AuthDeps): Limiters {
  const { rateLimit } = settings
  if (rateLimit.backend === 'memory') {
    return {
      limiter: deps.limiter ?? new TokenBucketLimiter(requestRates(settings)),
      emailLimiter: deps.emailLimiter ?? new InMemoryEmailSendLimiter(rateLimit.emailSent),
      smsLimiter: deps.smsLimiter ?? new InMemoryEmailSendLimiter(rateLimit.smsSent),
      close: () => undefined,
    }
  }
  const client = new RateLimitClient(rateLimit.serviceAddress, {
    timeoutMs: rateLimit.serviceTimeoutMs,
    coalesce: rateLimit.serviceCoalesce,
  })
  const service = new ServiceLimiter(client, {
    domain: rateLimit.domain,
    rules: serviceRules(settings),
    failClosed: rateLimit.failClosed,
    logger: deps.logger,
  })
  return {
    limiter: deps.limiter ?? service,
    // Never fail open: each cap falls back to this process's count while the service is down.
    emailLimiter:
      deps.emailLimiter ??
      service.sendLimiter('email_sent', new InMemoryEmailSendLimiter(rateLimit.emailSent)),
    smsLimiter:
      deps.smsLimiter ??
      service.sendLimiter('sms_sent', new InMemoryEmailSendLimiter(rateLimit.smsSent)),
    stats: service.stats,
    counts: () => client.counts,
    close: () => {
      client.close()
    },
  }
}

/**
 * The mailer the settings choose (upstream): SMTP when `SMTP_HOST` is set, else one that sends
 * nothing. A template URL that cannot be used is logged as a warning.
 */
function mailerFor(settings: Settings, clock: Clock, logger: Logger | undefined): Mailer {
  if (settings.smtp.host === '') return new NoopMailer()
  return new SmtpMailer(settings, {
    clock,
    onTemplateFallback: (kind, url, reason) => {
      logger?.warn(
        { component: 'mailer', kind, url, reason: reason.message },
        'mail template unavailable; the built-in template is used',
      )
    },
  })
}

/**
 * The SMS provider `SMS_PROVIDER` chooses, with its `SMS_<PROVIDER>_*` settings (upstream
 * `sms_provider.GetSmsProvider`); {@link NoSmsProvider} when none is set. With a logger, each
 * send's message id (or failure) is logged.
 *
 * @param options Transport options (timeout, `fetch`) for the HTTP providers.
 */
export function smsProviderFor(
  settings: Settings,
  logger?: Logger,
  options: SmsHttpOptions = {},
): SmsProvider {
  const { sms } = settings
  let provider: SmsProvider
  switch (sms.provider) {
    case 'twilio':
      provider = new TwilioProvider(sms.twilio, options)
      break
    case 'twilio_verify':
      provider = new TwilioVerifyProvider(sms.twilioVerify, options)
      break
    case 'messagebird':
      provider = new MessagebirdProvider(sms.messagebird, options)
      break
    case 'textlocal':
      provider = new TextlocalProvider(sms.textlocal, options)
      break
    case 'vonage':
      provider = new VonageProvider(sms.vonage, options)
      break
    case '':
      return new NoSmsProvider()
  }
  return logger ? new LoggedSmsProvider(provider, sms.provider, logger) : provider
}

interface Started {
  /** The database as {@link AuthApp.db} gives it: traced, without the requests' deadlines. */
  readonly db: Db
  readonly ctx: AppContext
  readonly freshDatabase: boolean
  readonly mailQueue: MailQueue
  readonly cleanup: CleanupJob
}

/**
 * Builds the auth server: the Fastify instance with its routes, and the services chosen from
 * `deps` (or their defaults). Nothing is opened and nothing listens: see {@link AuthApp.start}.
 *
 * @example
 * ```ts
 * let settings!: Settings
 * const app = buildAuthApp(settings)
 * await app.start()
 * await app.server.listen({ host: settings.apiHost, port: settings.port })
 * ```
 */
export function buildAuthApp(settings: Settings, deps: AuthDeps = {}): AuthApp {
  const clock = deps.clock ?? systemClock
  const random = deps.random ?? cryptoRandom
  const passwords = deps.passwordHasher ?? passwordHasherFor(settings)
  const server = createServer(settings, { random, logger: deps.logger })
  let started: Started | undefined
  // Telemetry: nothing is built (no hook, no wrapper, no span) for what is off.
  const limiters = limitersFor(settings, deps)
  const telemetry = buildTelemetry(
    settings,
    deps.logger,
    () => started?.ctx.db.poolStats?.(),
    () => limiters.stats,
  )
  const metrics = deps.metrics ?? telemetry.authMetrics
  if (telemetry.tracing !== undefined || telemetry.metrics !== undefined) {
    addRequestTelemetry(
      server,
      telemetry.tracing,
      telemetry.spans,
      telemetry.metrics ? telemetry.authMetrics : undefined,
    )
  }
  let metricsUrl: string | undefined
  const passwordBackoff = new PasswordBackoff({ freeFailures: settings.rateLimit.passwordFailures })
  let starting: Promise<void> | undefined
  let ownedDb: Db | undefined
  const ready = (): Started => {
    if (!started) throw new Error('the auth app is not started: call start() first')
    return started
  }
  // Route options are read when the plugin loads, during start()'s server.ready().
  void server.register(authRoutes, () => ({ ctx: ready().ctx }))

  async function open(): Promise<void> {
    const keys = deps.keys ?? (await JwtKeys.load(settings.jwt))
    const opened =
      deps.db ?? (await openDb(settings.db.url, settings.db.namespace, settings.db.maxPoolSize))
    if (!deps.db) ownedDb = opened
    // Each request's work sees `db` under its deadline (`request.ctx`, api/http/request-app-context.ts).
    const db = telemetry.tracing ? tracedDb(opened, telemetry.tracing, telemetry.spans) : opened
    const mailer = deps.mailer ?? mailerFor(settings, clock, deps.logger)
    const sms = deps.sms ?? smsProviderFor(settings, deps.logger)
    for (const warning of startWarnings(settings, {
      mailer: deps.mailer !== undefined,
      sms: deps.sms !== undefined,
    })) {
      deps.logger?.warn({ component: 'settings', setting: warning.setting }, warning.message)
    }
    const counted = telemetry.metrics !== undefined || deps.metrics !== undefined
    try {
      const migrations = await readMigrations()
      const applied = await migrate(db, migrations)
      let handlers: ReturnType<typeof mailJobHandlers> = {}
      const mailQueue = new MailQueue({
        db,
        clock,
        random,
        handlerFor: (job) => (Object.hasOwn(handlers, job) ? handlers[job] : undefined),
        lifetimeMs: settings.mailer.otpExpMs,
        pollIntervalMs: settings.mailer.queuePollIntervalMs,
        logger: deps.logger,
      })
      const sender = counted ? new CountedMailer(mailer, metrics) : mailer
      const audit = new AuditTrail({
        postgres: !settings.log.auditDisablePostgres,
        logger: deps.logger,
      })
      const guard = {
        allowPrivate: settings.security.allowPrivateUrls,
        ...(deps.urlLookup === undefined ? {} : { lookup: deps.urlLookup }),
      }
      const boxSecret = settings.customOauth.encryptionKey || settings.jwt.secret
      const customProviders = new CustomProviders({
        settings,
        db,
        clock,
        box:
          boxSecret === ''
            ? undefined
            : new SecretBox(boxSecret, 'custom_oauth_providers.client_secret', random),
        // Private addresses allowed: the providers' own transport (tests give theirs).
        fetch: guard.allowPrivate ? deps.providerFetch : guardedFetch(guard),
        guard,
      })
      const hooks = new Hooks(settings.hook, {
        db,
        clock,
        random,
        userJson: serializeUser,
        log: deps.logger,
        ...deps.hooks,
      })
      started = {
        db,
        freshDatabase: migrations[0] !== undefined && applied.includes(migrations[0].version),
        mailQueue,
        cleanup: new CleanupJob({
          db,
          clock,
          settings,
          intervalMs: settings.db.cleanupIntervalMs,
          logger: deps.logger,
        }),
        ctx: {
          settings,
          db,
          clock,
          random,
          keys,
          tokens: new TokenService(settings, keys, clock, random, {
            metrics,
            audit,
            hooks,
            onNewDevice: (user, device) =>
              sendNotification(
                { settings, mailer: sender, hooks },
                'new_sign_in_notification',
                user,
                device,
                deps.logger,
              ).then(() => undefined),
          }),
          audit,
          hooks,
          passwords,
          mailer: sender,
          sms: counted ? new CountedSmsProvider(sms, metrics) : sms,
          captcha:
            deps.captcha ??
            (settings.security.captcha.enabled
              ? new SiteverifyCaptcha(settings.security.captcha)
              : new NoCaptcha()),
          limiter: limiters.limiter,
          emailLimiter: limiters.emailLimiter,
          smsLimiter: limiters.smsLimiter,
          passwordBackoff,
          providers: new ProviderRegistry(settings, clock, deps.providerFetch, customProviders),
          customIdTokenIssuers: customProviders,
          customProviders,
          metrics,
          mailQueue,
          pwnedPasswords:
            deps.pwnedPasswords ??
            (settings.password.hibp.enabled
              ? new RangeApiPwnedPasswords(settings.password.hibp, { log: deps.logger })
              : undefined),
        },
      }
      handlers = mailJobHandlers(started.ctx)
      metricsUrl = await telemetry.listen()
      await server.ready()
      mailQueue.start()
      started.cleanup.start()
    } catch (error) {
      started = undefined
      ownedDb = undefined
      if (!deps.db) await opened.close()
      throw error
    }
  }

  return {
    settings,
    server,
    get db() {
      return ready().db
    },
    get keys() {
      return ready().ctx.keys
    },
    get freshDatabase() {
      return ready().freshDatabase
    },
    rateLimitStats: limiters.stats,
    get rateLimitClientCounts() {
      return limiters.counts?.()
    },
    get metricsUrl() {
      return metricsUrl
    },
    flushTelemetry: () => telemetry.flush(),
    flushMail: () => started?.mailQueue.flush() ?? Promise.resolve(),
    cleanup: () => ready().cleanup.runOnce(),
    start() {
      starting ??= open()
      return starting
    },
    async close() {
      await starting?.catch(() => undefined)
      // A server that never started has nothing to drain (and closing it would load its routes).
      if (started) await server.close()
      // After the requests (whose jobs are committed): the due mails go out before the database
      // closes, within the queue's drain timeout; the rest stays queued.
      await started?.mailQueue.close()
      await started?.cleanup.close()
      await ownedDb?.close()
      ownedDb = undefined
      limiters.close()
      await telemetry.shutdown()
    },
  }
}

/**
 * Builds the auth server and starts it (see {@link buildAuthApp} and {@link AuthApp.start}): it
 * is ready for `inject()` or `server.listen()`.
 *
 * @throws {Error} As {@link AuthApp.start}.
 */
export async function createAuthApp(settings: Settings, deps: AuthDeps = {}): Promise<AuthApp> {
  const app = buildAuthApp(settings, deps)
  await app.start()
  return app
}
