/**
 * OpenTelemetry SDK diagnostics (`DEBUG=true` upstream) through the server's own logger.
 *
 * The SDK reports its own problems (failed exports, dropped spans, bad attributes) through the
 * OpenTelemetry API's `diag` logger, which is process-wide by design: this module is the only
 * place that sets it, and the function it returns unsets it.
 *
 * @see https://opentelemetry.io/docs/languages/js/getting-started/nodejs/#troubleshooting
 * @module
 */
import { diag, DiagLogLevel } from '@opentelemetry/api'

/** The part of a pino logger the diagnostics write to. */
export interface DiagnosticsLogger {
  debug(object: object, message: string): void
  info(object: object, message: string): void
  warn(object: object, message: string): void
  error(object: object, message: string): void
}

/** Longest message passed on, in characters (an SDK message may quote a whole payload). */
const MAX_MESSAGE = 1000

/**
 * Sends the SDK's diagnostics (every level down to debug) to `logger` as
 * `{ component: 'opentelemetry' }` lines. Only the message text is logged, never the objects the
 * SDK passes beside it (exporter options carry headers), and each of `secrets` (OTLP header
 * values) is replaced by `[REDACTED]` in it.
 *
 * @param secrets Values that must never reach a log; empty strings are ignored.
 * @returns A function that stops the diagnostics again.
 */
export function enableDiagnostics(
  logger: DiagnosticsLogger,
  secrets: readonly string[] = [],
): () => void {
  const hidden = secrets.filter((s) => s !== '')
  const clean = (message: string): string => {
    let out = message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message
    for (const secret of hidden) out = out.split(secret).join('[REDACTED]')
    return out
  }
  const fields = { component: 'opentelemetry' }
  diag.setLogger(
    {
      verbose: (message) => {
        logger.debug(fields, clean(message))
      },
      debug: (message) => {
        logger.debug(fields, clean(message))
      },
      info: (message) => {
        logger.info(fields, clean(message))
      },
      warn: (message) => {
        logger.warn(fields, clean(message))
      },
      error: (message) => {
        logger.error(fields, clean(message))
      },
    },
    { logLevel: DiagLogLevel.DEBUG, suppressOverrideMessage: true },
  )
  return () => {
    diag.disable()
  }
}
