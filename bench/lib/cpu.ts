/**
 * CPU time per process, read from Linux's `/proc`, so that a benchmark can say what one operation
 * costs each process (the bench itself, its load generator, a server, PostgreSQL's backends).
 * CPU per operation changes far less with the machine's background load than operations per
 * second, which makes it the steadier evidence on a shared machine.
 */
import { readdirSync, readFileSync } from 'node:fs'

/** Clock ticks per second of `/proc/<pid>/stat` (`getconf CLK_TCK`; 100 on Linux). */
const TICKS_PER_SECOND = 100

/** Fields of `/proc/<pid>/stat` after the `(comm)` field, or `undefined` when unreadable. */
function statFields(pid: number | 'self'): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${String(pid)}/stat`, 'utf8')
    return text.slice(text.lastIndexOf(')') + 2).split(' ')
  } catch {
    return undefined
  }
}

/**
 * User plus system CPU time of a process, in milliseconds; with `which` = `children`, that of its
 * children that have exited and been waited for instead (such as a load generator run
 * synchronously).
 *
 * @returns 0 when the process does not exist (any more).
 */
export function processCpuMs(pid: number | 'self', which: 'own' | 'children' = 'own'): number {
  const f = statFields(pid)
  if (!f) return 0
  // utime, stime, cutime, cstime are fields 14–17 of stat: 12–15 after (comm) and the state.
  const [a, b] = which === 'own' ? [11, 12] : [13, 14]
  return ((Number(f[a]) + Number(f[b])) * 1000) / TICKS_PER_SECOND
}

/**
 * CPU time, in milliseconds, of every PostgreSQL backend of one database on this machine
 * (processes titled `postgres: … <user> <database> …`). Backends that exit between two readings
 * take their time with them: keep the connections open across a measurement.
 */
export function databaseBackendsCpuMs(database: string): number {
  let total = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let title: string
    try {
      title = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
    } catch {
      continue
    }
    if (title.startsWith('postgres:') && title.split(' ').includes(database)) {
      total += processCpuMs(Number(entry))
    }
  }
  return total
}

/** A set of named CPU readings, each a function returning milliseconds. */
export type CpuProbes = Readonly<Record<string, () => number>>

/**
 * Reads every probe now and returns a function that gives, when called, the CPU milliseconds
 * each probe used since.
 */
export function startCpu(probes: CpuProbes): () => Record<string, number> {
  const start = Object.fromEntries(Object.entries(probes).map(([name, read]) => [name, read()]))
  return () =>
    Object.fromEntries(
      Object.entries(probes).map(([name, read]) => [name, read() - (start[name] ?? 0)]),
    )
}
