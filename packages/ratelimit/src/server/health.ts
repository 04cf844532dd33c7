/**
 * The overall health: healthy only when every enabled component is. Components (the spec's
 * States table): `backend` (starts unhealthy, turns healthy once the store answers), `sigterm`
 * (healthy until SIGTERM), and `config` (only with `HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED`:
 * healthy while the last successful load had at least one domain). Drives `/healthcheck` and
 * `grpc.health.v1.Health`.
 *
 * @module
 */

/** Names of the health components. */
export type HealthComponent = 'backend' | 'sigterm' | 'config'

/** Called with the new overall state whenever it changes. */
export type HealthListener = (healthy: boolean) => void

/** Tracks component health. */
export class HealthChecker {
  readonly #components = new Map<HealthComponent, boolean>()
  readonly #listeners = new Set<HealthListener>()
  #healthy: boolean

  /**
   * @param options.configComponent Enable the `config` component
   *   (`HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED`).
   */
  constructor(options: { configComponent?: boolean } = {}) {
    this.#components.set('backend', false)
    this.#components.set('sigterm', true)
    if (options.configComponent === true) this.#components.set('config', false)
    this.#healthy = false
  }

  /** True when every enabled component is healthy. */
  healthy(): boolean {
    return this.#healthy
  }

  /** Current state of each enabled component. */
  components(): Readonly<Record<string, boolean>> {
    return Object.fromEntries(this.#components)
  }

  /** Marks a component healthy or not (ignored for a disabled component). */
  set(component: HealthComponent, healthy: boolean): void {
    if (!this.#components.has(component)) return
    this.#components.set(component, healthy)
    const overall = [...this.#components.values()].every(Boolean)
    if (overall !== this.#healthy) {
      this.#healthy = overall
      for (const listener of this.#listeners) listener(overall)
    }
  }

  /**
   * Subscribes to overall state changes.
   *
   * @returns A function that unsubscribes.
   */
  subscribe(listener: HealthListener): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }
}
