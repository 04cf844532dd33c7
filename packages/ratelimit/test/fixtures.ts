/**
 * Paths of this package's test inputs (`test/fixtures/`): rate limit configs written for our
 * tests (`config/` for loading and matching, `integration/` for the running service, `service/`
 * for the decision tests) and the TLS material (`tls/`). Nothing is read from outside the
 * repository.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** Directory of this package's fixtures, with a trailing separator. */
export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url))

/** Reads a fixture by its path under `test/fixtures/`, e.g. `integration/basic.yaml`. */
export function fixture(path: string): string {
  return readFileSync(FIXTURES + path, 'utf8')
}
