import { describe, expect, it } from 'vitest'
import { HealthChecker } from './health.js'

describe('HealthChecker', () => {
  it('is healthy only when every enabled component is', () => {
    const health = new HealthChecker()
    const changes: boolean[] = []
    health.subscribe((h) => changes.push(h))
    expect(health.healthy()).toBe(false)
    health.set('backend', true)
    expect(health.healthy()).toBe(true)
    health.set('config', false) // disabled component: ignored
    expect(health.healthy()).toBe(true)
    health.set('sigterm', false)
    expect(health.healthy()).toBe(false)
    expect(changes).toEqual([true, false])
    expect(health.components()).toEqual({ backend: true, sigterm: false })
  })

  it('adds the config component with HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED', () => {
    const health = new HealthChecker({ configComponent: true })
    health.set('backend', true)
    expect(health.healthy()).toBe(false)
    health.set('config', true)
    expect(health.healthy()).toBe(true)
  })
})
