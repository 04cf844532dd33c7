import { HookAnswerError, InternalServerError } from '../errors.js'

/**
 * Reads a hook's answer (upstream `hookserrors.Check`, then the JSON decoding of the output): an
 * error object `{ "error": { "http_code", "message" } }` with a message fails the request with
 * {@link HookAnswerError}; anything else is the hook's output.
 *
 * @param json The answer's text (HTTP) or the function's result (PostgreSQL), `undefined` when
 *   there was none (HTTP 204, SQL `null`).
 * @returns The output (`undefined` when there was none).
 * @throws {@link HookAnswerError} For an error object; {@link InternalServerError} 500
 *   `unexpected_failure` "Error unmarshaling JSON output." for text that is not JSON.
 */
export function readHookAnswer(json: string | undefined): unknown {
  if (json === undefined) return undefined
  let output: unknown
  try {
    output = JSON.parse(json)
  } catch (error) {
    throw new InternalServerError('unexpected_failure', 'Error unmarshaling JSON output.', {
      cause: error,
    })
  }
  checkHookError(output)
  return output
}

/**
 * Throws the error a hook's output carries, if any (`error.message` non-empty, as upstream).
 *
 * @throws {@link HookAnswerError} With the hook's `http_code` (500 when absent) and message.
 */
export function checkHookError(output: unknown): void {
  if (!isObject(output) || !isObject(output.error)) return
  const { http_code: code, message } = output.error
  if (typeof message !== 'string' || message === '') return
  throw new HookAnswerError(typeof code === 'number' && code !== 0 ? code : 500, message)
}

/** Whether a value is a JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
