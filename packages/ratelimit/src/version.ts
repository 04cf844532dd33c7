/**
 * The package's version, for both executables' `--version` (a module of its own, so that the
 * client's command line does not load the service's).
 *
 * @module
 */
import { readPackageVersion } from '@gatehouse/settings'

/** The version of the installed `@gatehouse/ratelimit`, from its `package.json`. */
export function packageVersion(): string {
  return readPackageVersion(new URL('../package.json', import.meta.url))
}
