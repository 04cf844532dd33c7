import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * Directory of upstream's own test inputs (`shared/fixtures/`), which live beside the repository
 * and are never copied into it. Looked up, in order: `GATEHOUSE_SHARED_DIR` (the `shared`
 * directory), `shared/` next to the repository checkout, then `/work/shared`.
 *
 * @param subdirectory Optional path inside `fixtures/`, such as `envoy-ratelimit`.
 * @returns The absolute directory path, with a trailing separator.
 * @throws {Error} Naming every place looked at, when none holds the fixtures.
 */
export function sharedFixturesDir(subdirectory = '', env: NodeJS.ProcessEnv = process.env): string {
  const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..')
  const candidates = [
    ...(env.GATEHOUSE_SHARED_DIR === undefined ? [] : [env.GATEHOUSE_SHARED_DIR]),
    join(repoRoot, '..', 'shared'),
    '/work/shared',
  ].map((shared) => join(shared, 'fixtures', subdirectory))
  const found = candidates.find((dir) => existsSync(dir))
  if (found === undefined) {
    throw new Error(
      `upstream fixtures not found; set GATEHOUSE_SHARED_DIR. Looked in: ${candidates.join(', ')}`,
    )
  }
  return found.endsWith('/') ? found : `${found}/`
}
