/**
 * The `BENCH_*` settings every auth benchmark reads (bench/auth/README.md), in one place.
 */

/** Clients in flight (`BENCH_CONCURRENCY`). */
export const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50)
/** Figure/baseline rounds (`BENCH_ROUNDS`). */
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
/** Length of a measured slice, in milliseconds (`BENCH_SLICE_MS`). */
export const SLICE_MS = Number(process.env.BENCH_SLICE_MS ?? 4000)
/** Unmeasured load before a slice, in milliseconds (`BENCH_WARMUP_MS`). */
export const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 1000)
/** bcrypt-bound phases have seconds of latency at c=50: let the pipeline fill first. */
export const SLOW_WARMUP_MS = Math.max(WARMUP_MS, 5000)
/** The benchmarked servers' `DB_MAX_POOL_SIZE` (`BENCH_SERVER_POOL`). */
export const SERVER_POOL = process.env.BENCH_SERVER_POOL ?? '16'
/** The password of every seeded user. */
export const PASSWORD = 'bench-password-1'

/** The figures `BENCH_ONLY` (comma-separated) asks for, else `all`. */
export function onlyFigures(all: string): Set<string> {
  return new Set((process.env.BENCH_ONLY ?? all).split(','))
}
