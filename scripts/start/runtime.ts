/**
 * The rate limit service's config directory under `npm start` (`.data/ratelimit/config/`): a
 * copy of the service's example config, made once and then the user's to edit (the service
 * reloads it on save), and the auth server's domain, written at each start from its settings.
 *
 * @module
 */
import {
  copyFileSync,
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
 * Fills the config directory.
 *
 * @param configDir The directory (created when missing).
 * @param examplesDir The service's examples (`packages/ratelimit/examples/config`): each
 *   `*.yaml` is copied unless the directory has that file already.
 * @param authConfig The auth server's domain (`gatehouse-auth ratelimit-config`), written to
 *   `gatehouse-auth.yaml` when it differs from what is there.
 */
export function prepareRatelimitConfig(
  configDir: string,
  examplesDir: string,
  authConfig: string,
): void {
  mkdirSync(configDir, { recursive: true })
  for (const name of readdirSync(examplesDir).filter((n) => n.endsWith('.yaml'))) {
    const target = join(configDir, name)
    if (!existsSync(target)) copyFileSync(join(examplesDir, name), target)
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
