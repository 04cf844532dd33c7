import type { ConfigFile } from '../config/config.js'

/**
 * One provider update: the complete current set of configuration files, or why they could not
 * be read. Every update replaces the whole configuration (state of the world).
 */
export type ConfigUpdate = { readonly files: readonly ConfigFile[] } | { readonly error: Error }

/**
 * Receives provider updates and says whether the update was loaded: undefined when it was, else
 * the error (what an xDS provider NACKs with; the file provider ignores it).
 */
export type ConfigUpdateListener = (update: ConfigUpdate) => Error | undefined

/**
 * A source of configuration: files (`file-provider.ts`) or an xDS management server
 * (`xds-provider.ts`). Upstream: `src/provider/provider.go`.
 */
export interface ConfigProvider {
  /**
   * Delivers the initial configuration to `listener` (resolves after that first delivery; the
   * xDS provider after the first one loaded), then keeps delivering updates until
   * {@link ConfigProvider.stop}.
   */
  start(listener: ConfigUpdateListener): Promise<void>
  /** Stops watching; resolves when no update is in flight. */
  stop(): Promise<void>
}
