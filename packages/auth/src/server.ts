/**
 * The HTTP server: Fastify's options and the request plumbing every route shares (deadline, body
 * and query parsing, guard state, CORS, the one error handler), and the bounded bcrypt runner
 * that serves its requests. Routes are added by `app.ts`.
 *
 * @module
 */
import { availableParallelism } from 'node:os'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import type { Bindings, ChildLoggerOptions, LogFn, Logger } from 'pino'
import { BODY_LIMIT, parseQueryString, registerBodyParser } from './api/http/body.js'
import { registerCors } from './api/http/cors.js'
import { registerRequestDeadline } from './api/http/deadline.js'
import { registerErrorHandler } from './api/http/errors/error-handler.js'
import { registerGuardState } from './api/http/hooks.js'
import { AJV_OPTIONS } from './api/http/schema.js'
import type { Settings } from './conf/settings.js'
import { PasswordHasher } from './crypto/password-hasher.js'
import type { Random } from './random.js'

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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const

/**
 * Fastify's per-request logger, made only when a line is logged at an enabled level: pino
 * serializes a child's bindings (through the redaction paths) when it is made, a cost every
 * request would pay for a logger most requests never use.
 */
function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined) return logger.child(bindings, options)
  let child: FastifyBaseLogger | undefined
  const made = (): FastifyBaseLogger => (child ??= logger.child(bindings, options))
  // Fastify is given a pino logger (ServerOptions.logger), so its children are pino loggers too.
  const pinoLogger = logger as unknown as Logger
  const lazy = Object.create(logger) as FastifyBaseLogger
  for (const level of LOG_LEVELS) {
    lazy[level] = (...args: Parameters<LogFn>) => {
      if (pinoLogger.isLevelEnabled(level)) made()[level](...args)
    }
  }
  lazy.child = (more, moreOptions) => made().child(more, moreOptions)
  return lazy
}

/** What {@link createServer} needs besides the settings. */
export interface ServerOptions {
  /** Request ids (when `REQUEST_ID_HEADER` gives none). */
  readonly random: Random
  /** @default no logging */
  readonly logger?: Logger
}

/**
 * A Fastify instance with the shared plumbing and no routes, not listening.
 *
 * @see https://fastify.dev/docs/latest/Guides/Testing/ (build, then listen or inject)
 */
export function createServer(settings: Settings, options: ServerOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger | undefined,
    logController: new LogController({
      disableRequestLogging: options.logger === undefined,
      requestIdLogLabel: 'request_id',
    }),
    bodyLimit: BODY_LIMIT,
    // API_MAX_REQUEST_DURATION also bounds receiving the request (a client trickling its body);
    // the whole request is cut by registerRequestDeadline.
    requestTimeout: settings.apiMaxRequestDurationMs,
    requestIdHeader:
      settings.requestIdHeader === '' ? false : settings.requestIdHeader.toLowerCase(),
    genReqId: () => options.random.uuid(),
    ...(options.logger === undefined ? {} : { childLoggerFactory: lazyChildLogger }),
    trustProxy: false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, querystringParser: parseQueryString },
    ajv: { customOptions: { ...AJV_OPTIONS, keywords: [...AJV_OPTIONS.keywords] } },
  })
  registerRequestDeadline(app, settings.apiMaxRequestDurationMs)
  registerBodyParser(app)
  registerGuardState(app)
  registerErrorHandler(app)
  registerCors(app)
  return app
}
