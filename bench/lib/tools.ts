/**
 * Checks, before a benchmark starts, that the load generators it drives are installed, so that a
 * missing one stops the run at once with the command that installs it instead of a crash minutes
 * into the run.
 */
import { spawnSync } from 'node:child_process'

/** A command-line tool and the Debian package that provides it. */
export interface RequiredTool {
  /** Executable looked up on `PATH`, e.g. `wrk`. */
  readonly command: string
  /** Debian package that installs it, e.g. `nghttp2-client` for `h2load`. */
  readonly debianPackage: string
}

/**
 * Exits the process with status 1 and an `apt-get install` line naming every missing tool.
 * Returns normally when all are on `PATH`.
 */
export function requireTools(tools: readonly RequiredTool[]): void {
  const missing = tools.filter(
    ({ command }) => spawnSync('sh', ['-c', `command -v ${command}`]).status !== 0,
  )
  if (missing.length === 0) return
  const names = missing.map((t) => t.command).join(', ')
  const packages = [...new Set(missing.map((t) => t.debianPackage))].join(' ')
  console.error(
    `This benchmark needs ${names}, which ${missing.length === 1 ? 'is' : 'are'} not installed.\n` +
      `Install with: apt-get update && apt-get install -y ${packages}`,
  )
  process.exit(1)
}
