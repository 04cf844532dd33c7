/**
 * What the primary process does when one of its `RATELIMIT_WORKERS` workers exits (pure, so that
 * every case is tested without forking).
 *
 * @module
 */

/** How a worker ended and what the primary knew about it. */
export interface WorkerExit {
  /** The primary is stopping (it forwarded `stopSignal` to every worker). */
  stopping: boolean
  /** The signal the primary forwarded, when stopping. */
  stopSignal: NodeJS.Signals | undefined
  /** The worker had bound all its listeners (it sent "ready"). */
  serving: boolean
  /** Exit code, `null` when a signal ended it. */
  code: number | null
  /** Signal that ended it, `null` when it exited. */
  signal: NodeJS.Signals | null
}

/**
 * The verdict on a worker's exit:
 * - `restart`: it died while serving; start another.
 * - `stop`: it died before serving (it cannot start, restarting would loop); stop them all, failed.
 * - `drained`: the primary is stopping; `failed` unless it exited 0 or was ended by the very signal
 *   the primary forwarded (a worker still starting has no handler yet and dies of that signal,
 *   which is a clean stop, not a failure).
 */
export function workerExitVerdict(exit: WorkerExit): {
  action: 'restart' | 'stop' | 'drained'
  failed: boolean
} {
  if (!exit.stopping) {
    return exit.serving ? { action: 'restart', failed: false } : { action: 'stop', failed: true }
  }
  const clean = exit.code === 0 || (exit.code === null && exit.signal === exit.stopSignal)
  return { action: 'drained', failed: !clean }
}
