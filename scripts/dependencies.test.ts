import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import semver from 'semver'
import { describe, expect, it } from 'vitest'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

interface LockEntry {
  version?: string
  engines?: Record<string, string> | string[]
  dev?: boolean
  optional?: boolean
}

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(join(root, path), 'utf8'))
}

describe('dependencies', () => {
  // The oldest Node.js we support, from the root package.json's engines.
  const { engines } = readJson('package.json') as { engines: { node: string } }
  const oldest = semver.minVersion(engines.node)?.version ?? ''

  it('supports Node.js 20.19, the oldest we promise', () => {
    expect(oldest).toBe('20.19.0')
  })

  it('installs nothing whose engines exclude the oldest supported Node.js', () => {
    const lock = readJson('package-lock.json') as { packages: Record<string, LockEntry> }
    const excluded = Object.entries(lock.packages)
      .filter(([path]) => path.includes('node_modules/'))
      .flatMap(([path, entry]) => {
        const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node
        if (range === undefined || semver.satisfies(oldest, range)) return []
        return [
          `${path.slice(path.lastIndexOf('node_modules/') + 13)}@${entry.version ?? '?'} needs node ${range}`,
        ]
      })
    expect(excluded).toEqual([])
  })
})
