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

describe('HealthChecker.reasons', () => {
  it('says why each unhealthy component is, with the given reason or a default', () => {
    const health = new HealthChecker({ configComponent: true })
    expect(health.reasons()).toEqual([
      'backend: the backend has not answered yet',
      'config: no configuration with at least one domain is loaded (HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED)',
    ])
    health.set('config', true)
    health.set('backend', false, 'the main redis at 127.0.0.1:1 (REDIS_URL) is not connected')
    expect(health.reasons()).toEqual([
      'backend: the main redis at 127.0.0.1:1 (REDIS_URL) is not connected',
    ])
    health.set('backend', true, 'ignored when healthy')
    expect(health.reasons()).toEqual([])
    health.set('backend', false)
    expect(health.reasons()).toEqual(['backend: the backend has not answered yet'])
  })
})
