import type { ConfigFile } from '../config/config.js'

/**
 * One provider update: the complete current set of configuration files, or why they could not
 * be read. Every update replaces the whole configuration (state of the world).
 */
export type ConfigUpdate = { readonly files: readonly ConfigFile[] } | { readonly error: Error }

/** Receives provider updates. */
export type ConfigUpdateListener = (update: ConfigUpdate) => void

/**
 * A source of configuration (files now; an xDS management server later). Upstream:
 * `src/provider/provider.go`.
 */
export interface ConfigProvider {
  /**
   * Delivers the initial configuration to `listener` (resolves after that first delivery), then
   * keeps delivering updates until {@link ConfigProvider.stop}.
   */
  start(listener: ConfigUpdateListener): Promise<void>
  /** Stops watching; resolves when no update is in flight. */
  stop(): Promise<void>
}
