/**
 * The running stack's record, `<data dir>/stack.json` (owner-only): which `npm start` owns the
 * data directory (its pid), what runs where and the development keys, for `npm run status`. It is
 * claimed before `npm start` writes anything else, so that a second `npm start` on the same data
 * directory stops without touching the running stack's files.
 *
 * @module
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Endpoint } from './plan.js'

/** A health check of one part of the stack. */
export interface Check {
  readonly name: string
  readonly url: string
}

/** What `stack.json` holds. */
export interface StackState {
  readonly pid: number
  /** ISO 8601. */
  readonly startedAt: string
  readonly ready: boolean
  readonly endpoints: readonly Endpoint[]
  readonly checks: readonly Check[]
  /** The development keys, once signed. */
  readonly keys?: { readonly anon: string; readonly serviceRole: string }
}

/** The record's path in a data directory. */
export const stateFile = (dataDir: string): string => join(dataDir, 'stack.json')

/** The record, or `undefined` when there is none (or it is unreadable). */
export function readState(dataDir: string): StackState | undefined {
  try {
    const value = JSON.parse(readFileSync(stateFile(dataDir), 'utf8')) as Partial<StackState>
    return typeof value.pid === 'number' && Array.isArray(value.endpoints)
      ? (value as StackState)
      : undefined
  } catch {
    return undefined
  }
}

/** Whether a process with this id runs (on this machine, as any user). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Claims the data directory for this process: creates it and the record, unless a live process
 * holds it (a record left by a process that died is replaced).
 *
 * @returns `undefined` when claimed, else the live holder's record.
 */
export function claimState(dataDir: string, state: StackState): StackState | undefined {
  mkdirSync(dataDir, { recursive: true })
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(stateFile(dataDir), JSON.stringify(state, null, 2), {
        flag: 'wx',
        mode: 0o600,
      })
      return undefined
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const holder = readState(dataDir)
      if (holder !== undefined && isAlive(holder.pid) && holder.pid !== process.pid) return holder
      rmSync(stateFile(dataDir), { force: true })
    }
  }
  return readState(dataDir)
}

/** Replaces the record (atomically: a reader never sees half of it). */
export function writeState(dataDir: string, state: StackState): void {
  const temporary = `${stateFile(dataDir)}.${String(process.pid)}.tmp`
  writeFileSync(temporary, JSON.stringify(state, null, 2), { mode: 0o600 })
  renameSync(temporary, stateFile(dataDir))
}

/** Removes the record if this process holds it. */
export function releaseState(dataDir: string): void {
  if (readState(dataDir)?.pid === process.pid) rmSync(stateFile(dataDir), { force: true })
}
