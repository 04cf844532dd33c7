import { expect } from 'vitest'

/** Matches a coded argument `TypeError` whose message contains `message`. */
export function argError(
  code: 'ERR_INVALID_ARG_TYPE' | 'ERR_INVALID_ARG_VALUE' | undefined,
  message: string,
): unknown {
  return expect.objectContaining({
    name: 'TypeError',
    ...(code === undefined ? {} : { code }),
    message: expect.stringContaining(message) as unknown,
  }) as unknown
}
