import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { answers, onPath, planInstall, requirements } from './test-setup.js'

const memcached = requirements.find((r) => r.command === 'memcached')!
const redis = requirements.find((r) => r.command === 'redis-server')!

describe('planInstall', () => {
  it('does nothing when every program is there', () => {
    expect(planInstall([], { isRoot: false, hasAptGet: false })).toEqual({ kind: 'nothing' })
  })

  it('installs the missing Debian packages as root with apt-get', () => {
    expect(planInstall([memcached, redis], { isRoot: true, hasAptGet: true })).toEqual({
      kind: 'install',
      packages: ['memcached', 'redis-server'],
    })
  })

  it('stops with the exact command when it may not install', () => {
    const plan = planInstall([memcached], { isRoot: false, hasAptGet: true })
    expect(plan.kind).toBe('stop')
    if (plan.kind !== 'stop') return
    expect(plan.message).toContain(
      'memcached (Debian package memcached), for the ratelimit memcache tests',
    )
    expect(plan.message).toContain('Run: sudo apt-get update && sudo apt-get install -y memcached')
  })

  it('names the packages without apt-get', () => {
    const plan = planInstall([memcached], { isRoot: true, hasAptGet: false })
    expect(plan).toMatchObject({ kind: 'stop' })
    if (plan.kind === 'stop')
      expect(plan.message).toContain("install memcached with your system's package manager")
  })

  it('lists each Debian package once', () => {
    const plan = planInstall([memcached, { ...memcached, command: 'memcached-tool' }], {
      isRoot: true,
      hasAptGet: true,
    })
    expect(plan).toEqual({ kind: 'install', packages: ['memcached'] })
  })
})

describe('onPath', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-path-'))
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it('finds a program in any PATH directory and nothing in an empty PATH', () => {
    writeFileSync(join(dir, 'some-tool'), '')
    expect(onPath('some-tool', ['/nonexistent', dir].join(delimiter))).toBe(true)
    expect(onPath('other-tool', dir)).toBe(false)
    expect(onPath('some-tool', undefined)).toBe(false)
  })
})

describe('answers', () => {
  it('tells a listening port from a closed one', async () => {
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    if (address === null || typeof address === 'string') throw new Error('no port')
    expect(await answers('127.0.0.1', address.port)).toBe(true)
    await new Promise<void>((resolve, reject) => {
      server.close((e) => {
        if (e) reject(e)
        else resolve()
      })
    })
    expect(await answers('127.0.0.1', address.port)).toBe(false)
  })
})
