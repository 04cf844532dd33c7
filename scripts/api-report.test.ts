/**
 * The checked-in API reports (`packages/<name>/api/*.api.d.ts`) are what the build exports: a
 * change of a published package's public surface fails here until `npm run api-report` has
 * rewritten its report (and the change is reviewed with it).
 */
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import { API_PACKAGES, apiReports, type ApiReport } from './api-report.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
let reports: ApiReport[] = []

beforeAll(async () => {
  // The reports are read from the built declarations: bring them up to date (incremental).
  await promisify(execFile)(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-b'],
    {
      cwd: root,
    },
  )
  reports = await apiReports()
}, 120_000)

describe('API reports', () => {
  it('cover every published package, each of its entry points', () => {
    for (const dir of API_PACKAGES) {
      expect(reports.some((report) => report.path === join(dir, 'api', 'index.api.d.ts'))).toBe(
        true,
      )
    }
    expect(reports.map((report) => report.path)).toContain('packages/ratelimit/api/client.api.d.ts')
  })

  it('are up to date (else run `npm run api-report` and review the change)', () => {
    for (const report of reports) {
      let checkedIn = ''
      try {
        checkedIn = readFileSync(join(root, report.path), 'utf8')
      } catch {
        // Missing: compared as empty, so the message names it.
      }
      expect(checkedIn, `${report.path} is stale: run npm run api-report`).toBe(report.text)
    }
  })
})
