/**
 * The reference model of issue 32's decisions (windows of several units, several windows per
 * rule) and the property test that runs the service against it on a backend: random rules
 * (fixed window, sliding window, token bucket; `unit_multiplier`; one window or a list), random
 * request sequences on an injected clock that crosses window boundaries, and after every request
 * the descriptor's code, remaining and reset compared with the model's.
 *
 * The model keeps its own counters per window start (and buckets); it borrows only two pieces of
 * arithmetic that have unit tests of their own: the sliding window's wait (`slidingWindowResetMs`)
 * and the bucket's refill (`takeTokens`).
 */
import fc from 'fast-check'
import { expect } from 'vitest'
import { slidingWindowResetMs } from '../src/limiter/sliding-window.js'
import { takeTokens, type TokenBucketState } from '../src/limiter/token-bucket.js'
import type { DescriptorStatus } from '../src/protocol/types.js'
import type { Harness } from './harness.js'

/** One window of a generated rule. */
export interface WindowSpec {
  readonly unit: 'SECOND' | 'MINUTE'
  readonly unitMultiplier: number
  readonly requestsPerUnit: number
  readonly algorithm: 'fixed_window' | 'sliding_window' | 'token_bucket'
}

/** One request of a generated sequence. */
export interface Step {
  /** Milliseconds the clock moves before the request. */
  readonly advanceMs: number
  /** The descriptor's `hits_addend` (0: check only). */
  readonly hits: number
}

/** A generated case: a rule and the requests sent to it. */
export interface WindowsCase {
  readonly windows: readonly WindowSpec[]
  /** Milliseconds after a minute boundary the first request is sent at. */
  readonly startOffsetMs: number
  readonly steps: readonly Step[]
}

const UNIT_SECONDS = { SECOND: 1, MINUTE: 60 } as const

function windowMs(w: WindowSpec): number {
  return UNIT_SECONDS[w.unit] * w.unitMultiplier * 1000
}

/** What the model expects of one window for one request. */
interface Expected {
  readonly code: 'OK' | 'OVER_LIMIT'
  readonly remaining: number
  readonly reset: number
}

/** The state of one window in the model. */
class WindowModel {
  readonly #spec: WindowSpec
  readonly #counts = new Map<number, number>()
  #bucket: TokenBucketState | undefined

  constructor(spec: WindowSpec) {
    this.#spec = spec
  }

  decide(nowMs: number, hits: number): Expected {
    const spec = this.#spec
    const lengthMs = windowMs(spec)
    const rpu = spec.requestsPerUnit
    const start = Math.floor(nowMs / lengthMs) * lengthMs
    switch (spec.algorithm) {
      case 'fixed_window': {
        const after = (this.#counts.get(start) ?? 0) + hits
        this.#counts.set(start, after)
        const seconds = lengthMs / 1000
        const reset = seconds - (Math.floor(nowMs / 1000) % seconds)
        return after > rpu
          ? { code: 'OVER_LIMIT', remaining: 0, reset }
          : { code: 'OK', remaining: rpu - after, reset }
      }
      case 'sliding_window': {
        const previous = this.#counts.get(start - lengthMs) ?? 0
        let current = (this.#counts.get(start) ?? 0) + hits
        const elapsedMs = nowMs - start
        const weighted =
          previous === 0 ? 0 : Math.floor((previous * (lengthMs - elapsedMs)) / lengthMs)
        const estimate = weighted + current
        const over = estimate > rpu
        if (over) current -= hits
        this.#counts.set(start, current)
        const ms = slidingWindowResetMs(
          { previous, current, elapsedMs, windowMs: lengthMs },
          rpu,
          over,
        )
        const reset = Math.ceil(ms / 1000)
        return over
          ? { code: 'OVER_LIMIT', remaining: 0, reset }
          : { code: 'OK', remaining: rpu - estimate, reset }
      }
      case 'token_bucket': {
        if (rpu === 0) {
          // A bucket that never refills: empty, so only a check (0 hits) passes.
          return { code: hits > 0 ? 'OVER_LIMIT' : 'OK', remaining: 0, reset: lengthMs / 1000 }
        }
        const taken = takeTokens(
          this.#bucket,
          nowMs,
          { requestsPerUnit: rpu, unitMs: lengthMs, burst: rpu },
          hits,
        )
        this.#bucket = taken.state
        const seconds = Math.ceil(taken.waitMs / 1000)
        return taken.allowed
          ? { code: 'OK', remaining: taken.tokens, reset: seconds }
          : { code: 'OVER_LIMIT', remaining: 0, reset: Math.max(1, seconds) }
      }
    }
  }
}

/**
 * The status of a descriptor with these windows' answers: over the limit, the first window that
 * is; otherwise the one with the least remaining (the first on a tie).
 */
function combine(answers: readonly Expected[]): { expected: Expected; window: number } {
  const over = answers.findIndex((a) => a.code === 'OVER_LIMIT')
  if (over >= 0) return { expected: answers[over] as Expected, window: over }
  let best = 0
  for (let i = 1; i < answers.length; i++) {
    if ((answers[i] as Expected).remaining < (answers[best] as Expected).remaining) best = i
  }
  return { expected: answers[best] as Expected, window: best }
}

/** The rule's YAML: `rate_limit` as one block, or as a list when there are several windows. */
export function ruleYaml(value: string, windows: readonly WindowSpec[]): string {
  const block = (w: WindowSpec): string => {
    const fields = [
      `unit: ${w.unit.toLowerCase()}`,
      `requests_per_unit: ${String(w.requestsPerUnit)}`,
    ]
    if (w.unitMultiplier !== 1) fields.push(`unit_multiplier: ${String(w.unitMultiplier)}`)
    if (w.algorithm !== 'fixed_window') fields.push(`algorithm: ${w.algorithm}`)
    return `{ ${fields.join(', ')} }`
  }
  const [first] = windows
  const rateLimit =
    windows.length === 1 && first !== undefined
      ? block(first)
      : `[${windows.map(block).join(', ')}]`
  return `  - key: k\n    value: "${value}"\n    rate_limit: ${rateLimit}\n`
}

/** Options of {@link windowsCases}. */
export interface CaseOptions {
  /** Most windows per rule (1: `unit_multiplier` alone). */
  readonly maxWindows: number
  /** The backend runs token buckets (memcache does not). */
  readonly tokenBucket: boolean
}

/** Generated cases: rules of 1..maxWindows distinct windows and 1..14 requests. */
export function windowsCases(options: CaseOptions): fc.Arbitrary<WindowsCase> {
  const algorithms: WindowSpec['algorithm'][] = ['fixed_window', 'sliding_window']
  if (options.tokenBucket) algorithms.push('token_bucket')
  const window = fc.record({
    unit: fc.constantFrom<WindowSpec['unit']>('SECOND', 'SECOND', 'MINUTE'),
    unitMultiplier: fc.oneof(fc.constant(1), fc.integer({ min: 2, max: 10 })),
    requestsPerUnit: fc.integer({ min: 0, max: 6 }),
    algorithm: fc.constantFrom(...algorithms),
  })
  return fc.record({
    windows: fc.uniqueArray(window, {
      minLength: 1,
      maxLength: options.maxWindows,
      selector: (w) => windowMs(w),
    }),
    startOffsetMs: fc.integer({ min: 0, max: 59_999 }),
    steps: fc.array(
      fc.record({
        advanceMs: fc.oneof(
          fc.integer({ min: 0, max: 400 }),
          fc.integer({ min: 0, max: 12_000 }),
          fc.integer({ min: 0, max: 200_000 }),
        ),
        hits: fc.oneof(fc.constant(1), fc.integer({ min: 0, max: 3 })),
      }),
      { minLength: 1, maxLength: 14 },
    ),
  })
}

/** A minute boundary the cases start after. */
export const MODEL_EPOCH_MS = Date.UTC(2026, 0, 1, 0, 0, 0)

/**
 * Runs `runs` generated cases against the service of `h` (domain `windows`, reloaded per case,
 * one fresh descriptor value per case), calling `settle` after each request (memcache: the
 * background writes), and checks every answer against the model.
 */
export async function checkAgainstModel(
  h: Harness,
  settle: () => Promise<void>,
  options: CaseOptions & { readonly runs: number; readonly seed?: number },
): Promise<void> {
  let run = 0
  await fc.assert(
    fc.asyncProperty(windowsCases(options), async (c) => {
      run++
      const value = `v${String(run)}_${String(Date.now())}`
      const loaded = h.app.service.loadConfig([
        {
          name: 'windows.yaml',
          content: `domain: windows\ndescriptors:\n${ruleYaml(value, c.windows)}`,
        },
      ])
      expect(loaded.ok).toBe(true)
      const models = c.windows.map((w) => new WindowModel(w))
      // Each case starts on its own day, so cases never share a window or a bucket.
      let now = MODEL_EPOCH_MS + run * 86_400_000 + c.startOffsetMs
      for (const step of c.steps) {
        now += step.advanceMs
        h.clock.set(now)
        const response = await h.app.service.shouldRateLimit({
          domain: 'windows',
          descriptors: [{ entries: [{ key: 'k', value }], hitsAddend: step.hits }],
          hitsAddend: 0,
        })
        await settle()
        const { expected, window } = combine(models.map((m) => m.decide(now, step.hits)))
        const status = response.statuses[0] as DescriptorStatus
        const spec = c.windows[window] as WindowSpec
        expect({
          code: status.code,
          remaining: status.limitRemaining,
          reset: status.durationUntilReset,
          unit: status.currentLimit?.unit,
          requestsPerUnit: status.currentLimit?.requestsPerUnit,
          unitMultiplier: status.currentLimit?.unitMultiplier ?? 1,
        }).toEqual({
          code: expected.code,
          remaining: expected.remaining,
          reset: expected.reset,
          unit: spec.unit,
          requestsPerUnit: spec.requestsPerUnit,
          unitMultiplier: spec.unitMultiplier,
        })
      }
    }),
    { numRuns: options.runs, ...(options.seed === undefined ? {} : { seed: options.seed }) },
  )
}
