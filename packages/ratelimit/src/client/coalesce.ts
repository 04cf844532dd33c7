/**
 * Coalescing of `ShouldRateLimit` calls for the `coalesce` option of `RateLimitClient`: the
 * requests made in one event-loop turn that share `domain` and effective `hits_addend` go out as
 * one request carrying all their descriptors, and each caller gets the statuses of its own.
 *
 * @module
 */
import type {
  Descriptor,
  DescriptorStatus,
  RateLimitRequest,
  RateLimitResponse,
} from '../protocol/types.js'

/** A request waiting for the end of the turn. */
interface Waiter {
  readonly request: RateLimitRequest
  readonly resolve: (response: RateLimitResponse) => void
  readonly reject: (error: unknown) => void
}

/** What a {@link RequestCoalescer} sends with and how it fails. */
export interface CoalescerDeps {
  /** Sends one `ShouldRateLimit` call. */
  readonly send: (request: RateLimitRequest) => Promise<RateLimitResponse>
  /**
   * The most descriptors one call may carry (the service's `gatehouse-coalesce-max-descriptors`),
   * read at each flush; undefined sends every request alone.
   */
  readonly maxDescriptors: () => number | undefined
  /** The error of every caller of a call whose answer does not fit its descriptors. */
  readonly malformed: (details: string) => Error
  /**
   * Whether a call's error says the service refused the request itself before counting anything
   * (one of its descriptors is at fault): the batch is then sent again as one call per request.
   * @default never
   */
  readonly refusedRequest?: (error: unknown) => boolean
  /** Schedules the flush after the current turn. @default setImmediate */
  readonly schedule?: (flush: () => void) => void
}

const NO_HEADERS: RateLimitResponse['responseHeadersToAdd'] = Object.freeze([])

/**
 * Collects the requests of one event-loop turn and flushes them with one `setImmediate`: per
 * `domain` and effective request `hitsAddend` (0 counts as 1, as the service counts it), the
 * requests' descriptors concatenated in order (each keeps its own `hitsAddend`), in calls of at
 * most {@link CoalescerDeps.maxDescriptors} descriptors. A request with no descriptor or with more
 * than the maximum goes alone (the service refuses it as it would have), as does every request
 * of a flush when the maximum is unknown.
 *
 * A call with one request answers it with the service's response unchanged. A call with several
 * answers each with `{ overallCode, statuses, responseHeadersToAdd: [] }`: its own statuses (by
 * position) and `OVER_LIMIT` when one of them is `OVER_LIMIT` and the whole answer is (so
 * `SHADOW_MODE`'s OK stands); the fields that describe a whole request (`responseHeadersToAdd`,
 * `dynamicMetadata`) are left out. A call of several requests that the service refused as a
 * request ({@link CoalescerDeps.refusedRequest}) is sent again as one call per request, so that
 * one caller's bad descriptor fails that caller only; a call that fails otherwise fails all its
 * requests with its error; an answer whose number of statuses differs from the number of
 * descriptors sent fails them with {@link CoalescerDeps.malformed}.
 *
 * Memory: the waiting requests are those of the current turn only; each flush empties the queue.
 */
export class RequestCoalescer {
  readonly #deps: CoalescerDeps
  readonly #schedule: (flush: () => void) => void
  /** Waiting requests per `domain` and effective `hitsAddend`. */
  #pending = new Map<string, Waiter[]>()
  #scheduled = false
  readonly #flush = (): void => {
    this.#flushNow()
  }

  constructor(deps: CoalescerDeps) {
    this.#deps = deps
    this.#schedule = deps.schedule ?? setImmediate
  }

  /** Queues a request for the end of this turn. */
  add(request: RateLimitRequest): Promise<RateLimitResponse> {
    return new Promise<RateLimitResponse>((resolve, reject) => {
      const group = `${String(Math.max(1, request.hitsAddend))} ${request.domain}`
      const waiters = this.#pending.get(group)
      const waiter: Waiter = { request, resolve, reject }
      if (waiters === undefined) this.#pending.set(group, [waiter])
      else waiters.push(waiter)
      if (!this.#scheduled) {
        this.#scheduled = true
        this.#schedule(this.#flush)
      }
    })
  }

  #flushNow(): void {
    const pending = this.#pending
    this.#pending = new Map()
    this.#scheduled = false
    const max = this.#deps.maxDescriptors() ?? 0
    for (const waiters of pending.values()) {
      let batch: Waiter[] = []
      let size = 0
      for (const waiter of waiters) {
        const count = waiter.request.descriptors.length
        if (count === 0 || count > max) {
          this.#alone(waiter)
          continue
        }
        if (size + count > max) {
          this.#send(batch, size)
          batch = []
          size = 0
        }
        batch.push(waiter)
        size += count
      }
      if (batch.length > 0) this.#send(batch, size)
    }
  }

  #alone(waiter: Waiter): void {
    this.#deps.send(waiter.request).then(waiter.resolve, waiter.reject)
  }

  /** One call for `batch`, whose requests carry `size` descriptors together. */
  #send(batch: readonly Waiter[], size: number): void {
    const first = batch[0] as Waiter
    if (batch.length === 1) {
      this.#alone(first)
      return
    }
    const descriptors = new Array<Descriptor>(size)
    let at = 0
    for (const waiter of batch) {
      for (const descriptor of waiter.request.descriptors) descriptors[at++] = descriptor
    }
    this.#deps
      .send({ domain: first.request.domain, descriptors, hitsAddend: first.request.hitsAddend })
      .then(
        (response) => {
          const statuses = response.statuses
          if (statuses.length !== size) {
            const error = this.#deps.malformed(
              `coalesced response has ${String(statuses.length)} statuses for ${String(size)} descriptors`,
            )
            for (const waiter of batch) waiter.reject(error)
            return
          }
          const over = response.overallCode === 'OVER_LIMIT'
          let from = 0
          for (const waiter of batch) {
            const to = from + waiter.request.descriptors.length
            const own: DescriptorStatus[] = statuses.slice(from, to)
            from = to
            waiter.resolve({
              overallCode: over && own.some(isOverLimit) ? 'OVER_LIMIT' : 'OK',
              statuses: own,
              responseHeadersToAdd: NO_HEADERS,
            })
          }
        },
        (error: unknown) => {
          if (this.#deps.refusedRequest?.(error) === true) {
            for (const waiter of batch) this.#alone(waiter)
            return
          }
          for (const waiter of batch) waiter.reject(error)
        },
      )
  }
}

function isOverLimit(status: DescriptorStatus): boolean {
  return status.code === 'OVER_LIMIT'
}
