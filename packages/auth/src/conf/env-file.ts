/**
 * `.env` files, parsed with Node's `util.parseEnv` by `@gatehouse/settings`. Kept here for the
 * package's exports.
 *
 * @module
 */
export { parseEnvFile } from '@gatehouse/settings'
