/**
 * The rate limit service's config directory under `npm start` (`.data/ratelimit/config/`): a
 * copy of the service's example config, made once and then the user's to edit (the service
 * reloads it on save), whose first lines name the path it is served from, and the auth server's
 * domain, written at each start from its settings.
 *
 * @module
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs'
import { dirname, join } from 'node:path'

/** The first lines of the auth server's domain file. */
export const AUTH_CONFIG_HEADER = `# Written by npm start at each start from the auth server's settings (AUTHSVC_RATE_LIMIT_*), as
# \`gatehouse-auth ratelimit-config\` prints them: change those settings, not this file.
`

/**
 * The served copy of an example: the example's own leading comment (which describes the
 * example in the repository) replaced by one that names where the copy is served from.
 *
 * @param served The copy's path as the user should see it (relative to the repository when
 *   inside it).
 * @param example The example's path, shown the same way.
 */
export function servedExample(example: string, content: string, served: string): string {
  const lines = content.split('\n')
  const firstRule = lines.findIndex((line) => !line.startsWith('#'))
  const body = lines.slice(firstRule < 0 ? lines.length : firstRule).join('\n')
  return `# Served by npm start from
#   ${served}
# Edit this file while the stack runs: the rate limit service reloads it on save. It was copied
# from ${example} on the first start and is kept after; delete it to get
# the example again at the next start.
${body}`
}

/**
 * Fills the config directory.
 *
 * @param configDir The directory (created when missing).
 * @param examplesDir The service's examples (`packages/ratelimit/examples/config`): each
 *   `*.yaml` is copied ({@link servedExample}) unless the directory has that file already.
 * @param authConfig The auth server's domain (`gatehouse-auth ratelimit-config`), written to
 *   `gatehouse-auth.yaml` when it differs from what is there.
 * @param shown How a path is shown to the user (in the copies' first lines). @default the path
 */
export function prepareRatelimitConfig(
  configDir: string,
  examplesDir: string,
  authConfig: string,
  shown: (path: string) => string = (path) => path,
): void {
  mkdirSync(configDir, { recursive: true })
  for (const name of readdirSync(examplesDir).filter((n) => n.endsWith('.yaml'))) {
    const target = join(configDir, name)
    if (existsSync(target)) continue
    const example = join(examplesDir, name)
    writeFileSync(
      target,
      servedExample(shown(example), readFileSync(example, 'utf8'), shown(target)),
      { flag: 'wx' },
    )
  }
  const file = join(configDir, 'gatehouse-auth.yaml')
  const content = `${AUTH_CONFIG_HEADER}${authConfig.endsWith('\n') ? authConfig : `${authConfig}\n`}`
  const current = existsSync(file) ? readFileSync(file, 'utf8') : undefined
  if (current === content) return
  // A rename, so that the service never reads half a file; the temporary file is outside the
  // directory, which the service reads whole.
  const temporary = join(dirname(configDir), `.gatehouse-auth.yaml.${String(process.pid)}.tmp`)
  writeFileSync(temporary, content)
  renameSync(temporary, file)
}
