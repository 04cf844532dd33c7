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

/** Every process on this machine: pid, parent pid and command line (arguments joined by spaces). */
function processes(): { pid: number; ppid: number; command: string }[] {
  const list: { pid: number; ppid: number; command: string }[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ')
      const ppid = Number(statFields(Number(entry))?.[1] ?? 0)
      list.push({ pid: Number(entry), ppid, command })
    } catch {
      // The process ended while being read.
    }
  }
  return list
}

/**
 * CPU time, in milliseconds, of every process whose command line `matches` (for example
 * `redis-server 127.0.0.1:6380`). Processes that exit between two readings take their time with
 * them.
 */
export function matchingProcessesCpuMs(matches: (command: string) => boolean): number {
  let total = 0
  for (const p of processes()) if (matches(p.command)) total += processCpuMs(p.pid)
  return total
}

/**
 * A probe of the CPU time, in milliseconds, of every PostgreSQL backend of one database on this
 * machine (processes titled `postgres: … <user> <database> …`), as a running total that never
 * goes back: each reading adds what every backend used since the one before (a backend new since
 * then counts whole). A backend that exits between two readings takes only its time since the
 * last reading with it, so a pool that closes idle connections between slices does not make a
 * slice's figure negative.
 */
export function databaseBackendsCpuProbe(database: string): () => number {
  const last = new Map<number, number>()
  let total = 0
  return () => {
    const seen = new Set<number>()
    for (const p of processes()) {
      if (!p.command.startsWith('postgres:') || !p.command.split(' ').includes(database)) continue
      const now = processCpuMs(p.pid)
      total += Math.max(0, now - (last.get(p.pid) ?? 0))
      last.set(p.pid, now)
      seen.add(p.pid)
    }
    for (const pid of last.keys()) if (!seen.has(pid)) last.delete(pid)
    return total
  }
}

/** A process and all its living descendants (such as workers): their pids, `pid` first. */
export function processTree(pid: number): number[] {
  const list = processes()
  const tree = new Set([pid])
  for (let grew = true; grew;) {
    grew = false
    for (const p of list) {
      if (!tree.has(p.pid) && tree.has(p.ppid)) {
        tree.add(p.pid)
        grew = true
      }
    }
  }
  return [...tree]
}

/** CPU time, in milliseconds, of a process and all its living descendants (such as workers). */
export function processTreeCpuMs(pid: number): number {
  let total = 0
  for (const member of processTree(pid)) total += processCpuMs(member)
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
