import { describe, expect, it } from 'vitest'
import { workerExitVerdict, type WorkerExit } from './workers.js'

const base: WorkerExit = {
  stopping: false,
  stopSignal: undefined,
  serving: true,
  code: 1,
  signal: null,
}

describe('workerExitVerdict', () => {
  it('restarts a worker that died while serving', () => {
    expect(workerExitVerdict(base)).toEqual({ action: 'restart', failed: false })
    expect(workerExitVerdict({ ...base, code: null, signal: 'SIGKILL' })).toEqual({
      action: 'restart',
      failed: false,
    })
  })

  it('stops everything, failed, when a worker dies before serving', () => {
    expect(workerExitVerdict({ ...base, serving: false })).toEqual({ action: 'stop', failed: true })
  })

  it('counts a worker that exits 0 while stopping as clean', () => {
    expect(workerExitVerdict({ ...base, stopping: true, stopSignal: 'SIGTERM', code: 0 })).toEqual({
      action: 'drained',
      failed: false,
    })
  })

  it('counts a worker still starting, ended by the forwarded signal, as clean', () => {
    const exit = {
      ...base,
      stopping: true,
      stopSignal: 'SIGTERM' as const,
      serving: false,
      code: null,
      signal: 'SIGTERM' as const,
    }
    expect(workerExitVerdict(exit)).toEqual({ action: 'drained', failed: false })
  })

  it('counts any other end while stopping as a failure', () => {
    const stopping = { ...base, stopping: true, stopSignal: 'SIGTERM' as const }
    expect(workerExitVerdict({ ...stopping, code: 1 }).failed).toBe(true)
    expect(workerExitVerdict({ ...stopping, code: null, signal: 'SIGSEGV' }).failed).toBe(true)
  })
})
