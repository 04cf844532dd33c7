/**
 * The package's version, read at run time from its own `package.json` (the one place a release
 * sets it): `gatehouse-auth --version` and `GET /health` report it.
 *
 * @module
 */
import { readPackageVersion } from '@gatehouse/settings'

/** The version of the installed `@gatehouse/auth` (`package.json`'s `version`). */
export const VERSION: string = readPackageVersion(new URL('../package.json', import.meta.url))
