/**
 * Paths of test inputs: upstream's fixtures (kept outside the repository, in
 * `shared/fixtures/envoy-ratelimit/`, found by `sharedFixturesDir`) and our own (`test/fixtures/`).
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { sharedFixturesDir } from '@gatehouse/testing'

/** Directory of envoyproxy/ratelimit's own test configs (config/, integration/, examples/). */
export const UPSTREAM_FIXTURES = sharedFixturesDir('envoy-ratelimit')

/** Directory of this package's own fixtures. */
export const OWN_FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url))

/** Reads an upstream fixture, e.g. `config/basic_config.yaml`. */
export function upstreamFixture(path: string): string {
  return readFileSync(UPSTREAM_FIXTURES + path, 'utf8')
}

/** Reads one of our fixtures, e.g. `config/float_value.yaml`. */
export function ownFixture(path: string): string {
  return readFileSync(OWN_FIXTURES + path, 'utf8')
}
