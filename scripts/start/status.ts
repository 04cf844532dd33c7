/**
 * The status table `npm start` prints once every service answers, and `npm run status` prints
 * again (with each service's health now): the URLs and the development keys.
 *
 * @module
 */
import type { StackState } from './state.js'
import { isAlive, readState } from './state.js'

/**
 * The table's lines: one per endpoint (`label  value  note`), then the keys, then how to see it
 * again and stop.
 *
 * @param health Whether each check (by name) answers, for `npm run status`.
 */
export function statusTable(state: StackState, health?: ReadonlyMap<string, boolean>): string[] {
  const rows: (readonly [string, string, string])[] = state.endpoints.map((e) => [
    e.label,
    e.value,
    e.note ?? '',
  ])
  if (state.keys) {
    rows.push(['anon key', state.keys.anon, ''])
    rows.push(['service_role key', state.keys.serviceRole, 'admin: never in a browser'])
  } else if (state.ready) {
    rows.push(['keys', 'not printed: the JWT secret (or JWT_KEYS) is your own', ''])
  }
  const labelWidth = Math.max(...rows.map(([label]) => label.length))
  const valueWidth = Math.max(...rows.filter(([, v]) => v.length < 60).map(([, v]) => v.length))
  const lines = rows.map(([label, value, note]) =>
    `  ${label.padEnd(labelWidth)}  ${note === '' ? value : `${value.padEnd(valueWidth)}  ${note}`}`.trimEnd(),
  )
  if (health) {
    const checks = state.checks.map((c) => `${c.name} ${health.get(c.name) ? 'up' : 'DOWN'}`)
    lines.unshift(`  ${'services'.padEnd(labelWidth)}  ${checks.join(', ')}`)
  }
  return lines
}

/** Whether `url` answers 2xx within `timeoutMs`. */
export async function answers(url: string, timeoutMs = 2000): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
    await response.body?.cancel()
    return response.ok
  } catch {
    return false
  }
}

/**
 * `npm run status`: prints the running stack's table with each service's health.
 *
 * @param dataDir The data directory (`GATEHOUSE_DATA_DIR`), absolute.
 * @param shownDataDir The same, as messages show it.
 * @param out Where lines go.
 * @returns The exit code: 0 when every service answers, 1 when one does not, 3 when no
 *   `npm start` runs on this data directory.
 */
export async function runStatus(
  dataDir: string,
  shownDataDir: string,
  out: (line: string) => void,
): Promise<number> {
  const state = readState(dataDir)
  if (state === undefined || !isAlive(state.pid)) {
    out(
      `gatehouse: no npm start is running on ${shownDataDir} (${state === undefined ? 'no stack.json' : `its process ${String(state.pid)} has ended`}); start the stack with npm start`,
    )
    return 3
  }
  const results = await Promise.all(
    state.checks.map(async (c) => [c.name, await answers(c.url)] as const),
  )
  const health = new Map(results)
  const allUp = results.every(([, up]) => up)
  out(
    `gatehouse: npm start (pid ${String(state.pid)}, since ${state.startedAt}) ${allUp ? 'is ready' : state.ready ? 'has a service that does not answer' : 'is starting'}:`,
  )
  for (const line of statusTable(state, health)) out(line)
  return allUp ? 0 : 1
}
