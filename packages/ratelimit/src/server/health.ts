/**
 * The overall health: healthy only when every enabled component is. Components (the spec's
 * States table): `backend` (starts unhealthy, turns healthy once the store answers), `sigterm`
 * (healthy until SIGTERM), and `config` (only with `HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED`:
 * healthy while the last successful load had at least one domain). Drives `/healthcheck` (which
 * also says why it is unhealthy: {@link HealthChecker.reasons}) and `grpc.health.v1.Health`.
 *
 * @module
 */

/** Names of the health components. */
export type HealthComponent = 'backend' | 'sigterm' | 'config'

/** Called with the new overall state whenever it changes. */
export type HealthListener = (healthy: boolean) => void

/** Why a component is unhealthy when nobody said more (`/healthcheck`'s body). */
const DEFAULT_REASONS: Readonly<Record<HealthComponent, string>> = {
  backend: 'the backend has not answered yet',
  sigterm: 'shutting down',
  config:
    'no configuration with at least one domain is loaded (HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED)',
}

/** Tracks component health. */
export class HealthChecker {
  readonly #components = new Map<HealthComponent, boolean>()
  readonly #reasons = new Map<HealthComponent, string>()
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

  /**
   * Why the service is unhealthy: one line per unhealthy component, `component: reason`; empty
   * when healthy.
   */
  reasons(): string[] {
    return [...this.#components]
      .filter(([, healthy]) => !healthy)
      .map(([name]) => `${name}: ${this.#reasons.get(name) ?? DEFAULT_REASONS[name]}`)
  }

  /**
   * Marks a component healthy or not (ignored for a disabled component).
   *
   * @param reason Why it is unhealthy, for {@link reasons}; a default text when omitted.
   */
  set(component: HealthComponent, healthy: boolean, reason?: string): void {
    if (!this.#components.has(component)) return
    this.#components.set(component, healthy)
    if (reason === undefined || healthy) this.#reasons.delete(component)
    else this.#reasons.set(component, reason)
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
