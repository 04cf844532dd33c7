/**
 * In-process statistics: counters, gauges and timers by name, flushed periodically to a sink.
 * Names follow envoy's ratelimit (lyft/gostats): dotted scopes such as
 * `ratelimit.service.rate_limit.<domain>.<key>.total_hits`.
 *
 * @module
 */
import { systemRandom, type Random } from '../clock.js'

/** A monotonically increasing count; flushed as the delta since the previous flush. */
export interface Counter {
  /** Adds `amount` (default 1). */
  add(amount?: number): void
  /** Current total since start. */
  value(): number
}

/** A value that is set rather than added; flushed as its current value. */
export interface Gauge {
  set(value: number): void
  value(): number
}

/** Records durations in milliseconds. */
export interface Timer {
  /** Records one sample, in milliseconds. */
  record(ms: number): void
}

/** One flushed value, as handed to a {@link StatsSink}. */
export interface FlushedStat {
  readonly name: string
  readonly type: 'counter' | 'gauge' | 'timer'
  readonly value: number
  /**
   * For timers: fraction of the samples that were kept (1 = all); statsd's `|@rate`.
   */
  readonly sampleRate?: number
}

/** Where flushed stats go (statsd, standard output, nowhere). */
export interface StatsSink {
  /** Receives one flush: counter deltas (non-zero only), all gauges and the timer samples. */
  flush(stats: readonly FlushedStat[]): void
  /** Releases connections. */
  close(): Promise<void>
}

/** A counter with its running total and the total at the last flush (for deltas). */
class StoredCounter implements Counter {
  total = 0
  flushed = 0
  add(amount = 1): void {
    this.total += amount
  }
  value(): number {
    return this.total
  }
}

/** A gauge: the last value set. */
class StoredGauge implements Gauge {
  current = 0
  set(value: number): void {
    this.current = value
  }
  value(): number {
    return this.current
  }
}

/** Samples kept per timer between two flushes; the rest are sampled out. */
const MAX_TIMER_SAMPLES = 1000

/** A timer keeping a uniform sample of at most {@link MAX_TIMER_SAMPLES} durations per flush. */
class SampledTimer implements Timer {
  samples: number[] = []
  seen = 0
  readonly #random: Random
  constructor(random: Random) {
    this.#random = random
  }
  record(ms: number): void {
    this.seen++
    if (this.samples.length < MAX_TIMER_SAMPLES) this.samples.push(ms)
    else {
      // Reservoir sampling keeps a uniform sample of the interval.
      const slot = Math.floor(this.#random() * this.seen)
      if (slot < MAX_TIMER_SAMPLES) this.samples[slot] = ms
    }
  }
}

/** Options of {@link StatsStore}. */
export interface StatsStoreOptions {
  /**
   * Tags appended to every `ratelimit.*` name as `.__k=v`, sorted by key (envoy's `EXTRA_TAGS`;
   * `.`, `:`, `|` and control characters in values become `_`, as gostats does).
   */
  extraTags?: Readonly<Record<string, string>>
  /** Random source for the timers' reservoir sampling. @default {@link systemRandom} */
  random?: Random
}

/** The entry of `map` called `name`, created by `create` on first use. */
function getOrCreate<T>(map: Map<string, T>, name: string, create: () => T): T {
  let entry = map.get(name)
  if (entry === undefined) {
    entry = create()
    map.set(name, entry)
  }
  return entry
}

/**
 * Holds every stat by its full name. Stats are created on first use and live for the life of the
 * process (as in gostats).
 */
export class StatsStore {
  readonly #counters = new Map<string, StoredCounter>()
  readonly #gauges = new Map<string, StoredGauge>()
  readonly #timers = new Map<string, SampledTimer>()
  readonly #suffix: string
  readonly #random: Random

  constructor(options: StatsStoreOptions = {}) {
    this.#random = options.random ?? systemRandom
    const tags = Object.entries(options.extraTags ?? {}).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    )
    // Tag values as gostats' ReplaceChars leaves them: `.`, `:` and `|` become `_` (and control
    // characters too, which gostats lets through).
    this.#suffix = tags.map(([k, v]) => `.__${k}=${v.replace(/[.:|\p{Cc}]/gu, '_')}`).join('')
  }

  #name(name: string): string {
    return this.#suffix !== '' && name.startsWith('ratelimit.') ? name + this.#suffix : name
  }

  /** The counter called `name`, created at zero on first use. */
  counter(name: string): Counter {
    return getOrCreate(this.#counters, this.#name(name), () => new StoredCounter())
  }

  /** The gauge called `name`, created at zero on first use. */
  gauge(name: string): Gauge {
    return getOrCreate(this.#gauges, this.#name(name), () => new StoredGauge())
  }

  /** The timer called `name` (milliseconds). */
  timer(name: string): Timer {
    return getOrCreate(this.#timers, this.#name(name), () => new SampledTimer(this.#random))
  }

  /**
   * Current totals: every counter and gauge by full name, sorted by name (for `/stats`).
   */
  snapshot(): { name: string; type: 'counter' | 'gauge'; value: number }[] {
    const all: { name: string; type: 'counter' | 'gauge'; value: number }[] = []
    for (const [name, c] of this.#counters) all.push({ name, type: 'counter', value: c.total })
    for (const [name, g] of this.#gauges) all.push({ name, type: 'gauge', value: g.current })
    return all.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  }

  /**
   * Collects what changed since the previous call: counter deltas (zero deltas skipped), every
   * gauge, and the timer samples (then cleared). Hand the result to a {@link StatsSink}.
   */
  collect(): FlushedStat[] {
    const out: FlushedStat[] = []
    for (const [name, c] of this.#counters) {
      const delta = c.total - c.flushed
      if (delta === 0) continue
      c.flushed = c.total
      out.push({ name, type: 'counter', value: delta })
    }
    for (const [name, g] of this.#gauges) out.push({ name, type: 'gauge', value: g.current })
    for (const [name, t] of this.#timers) {
      if (t.seen === 0) continue
      const sampleRate = t.samples.length / t.seen
      for (const value of t.samples) out.push({ name, type: 'timer', value, sampleRate })
      t.samples = []
      t.seen = 0
    }
    return out
  }
}
