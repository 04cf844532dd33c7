/**
 * The lean gRPC server's deadline sweeper: every call waits in one slot of a table with its
 * deadline (the earlier of its `grpc-timeout` and `GRPC_MAX_CALL_DURATION`), and one timer per
 * server ends the overdue calls with DEADLINE_EXCEEDED, forgets the calls clients reset, and
 * sends GOAWAY to connections without a call for `GRPC_MAX_CONNECTION_IDLE`. A call takes a free
 * slot and gives it back: no timer of its own, no hashing of the stream, and nothing allocated
 * once the table has grown to the calls in flight.
 *
 * @module
 */
import type { Http2Session, ServerHttp2Stream } from 'node:http2'
import type { MonotonicClock } from '../clock.js'
import { GRPC_STATUS } from './status.js'
import { sendError } from './grpc-wire.js'

/** How often deadlines and idle connections are checked, in milliseconds. */
const HOUSEKEEPING_MS = 50

/** Options of {@link CallDeadlines}. */
export interface CallDeadlinesOptions {
  /** Deadlines and idleness. */
  readonly clock: MonotonicClock
  /** `GRPC_MAX_CONNECTION_IDLE` in milliseconds; 0 never closes idle connections. */
  readonly maxConnectionIdleMs: number
  /** Called when ending an overdue call throws (a bug): the caller answers INTERNAL. */
  readonly onFailure: (stream: ServerHttp2Stream, error: unknown) => void
}

/** The calls and connections of one server, with their deadlines and idleness. */
export class CallDeadlines {
  readonly #clock: MonotonicClock
  readonly #maxIdleMs: number
  readonly #onFailure: (stream: ServerHttp2Stream, error: unknown) => void
  /**
   * Calls not answered yet, by slot (`undefined`: a free slot), and their deadlines
   * ({@link MonotonicClock} milliseconds). Answers free their slot; the sweep ends the overdue
   * calls and frees the slots of the ones the client reset.
   */
  readonly #calls: (ServerHttp2Stream | undefined)[] = []
  readonly #deadlines: number[] = []
  /** Free slots of {@link #calls}, taken last freed first. */
  readonly #free: number[] = []
  /** Calls in {@link #calls}. */
  #pending = 0
  /** `Health/Watch` calls being served (they keep their connection busy). */
  readonly #watching = new Set<ServerHttp2Stream>()
  /** Watch calls whose `grpc-timeout` passed: their trailers say DEADLINE_EXCEEDED. */
  readonly #expiredWatches = new WeakSet<ServerHttp2Stream>()
  /** Per connection: when it last started a call and was last seen with one in flight. */
  readonly #activity = new Map<Http2Session, { lastCall: number; lastBusy: number }>()
  #timer: NodeJS.Timeout | undefined

  /** @param options The clock, the idle limit and the failure callback. */
  constructor(options: CallDeadlinesOptions) {
    this.#clock = options.clock
    this.#maxIdleMs = options.maxConnectionIdleMs
    this.#onFailure = options.onFailure
  }

  /** Starts watching a connection for idleness; the sweep runs while there are connections. */
  connectionOpened(session: Http2Session): void {
    const now = this.#clock.now()
    this.#activity.set(session, { lastCall: now, lastBusy: now })
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => {
        this.#sweep()
      }, HOUSEKEEPING_MS)
      this.#timer.unref()
    }
  }

  /** Forgets a closed connection. */
  connectionClosed(session: Http2Session): void {
    this.#activity.delete(session)
  }

  /**
   * A call started: it must be answered within `timeoutMs`.
   *
   * @param timeoutMs Milliseconds from now.
   * @returns The call's slot, for {@link callAnswered} and {@link watchStarted}.
   */
  callStarted(stream: ServerHttp2Stream, timeoutMs: number): number {
    const now = this.#clock.now()
    const slot = this.#free.pop() ?? this.#calls.length
    this.#calls[slot] = stream
    this.#deadlines[slot] = now + timeoutMs
    this.#pending++
    const state = this.#activity.get(stream.session as Http2Session)
    if (state !== undefined) state.lastCall = now
    return slot
  }

  /**
   * The call is being answered: its deadline no longer applies.
   *
   * @param slot What {@link callStarted} returned for the call's stream.
   */
  callAnswered(slot: number, stream: ServerHttp2Stream): void {
    // The sweep may have freed the slot already (a reset), and another call may hold it now.
    if (this.#calls[slot] === stream) this.#release(slot)
  }

  /**
   * A `Health/Watch` call is being served: it keeps its connection busy until it closes, and
   * keeps its deadline only when the client sent `grpc-timeout`.
   *
   * @param slot What {@link callStarted} returned for the call.
   */
  watchStarted(slot: number, stream: ServerHttp2Stream, clientTimeout: boolean): void {
    if (!clientTimeout) this.callAnswered(slot, stream)
    this.#watching.add(stream)
    stream.once('close', () => this.#watching.delete(stream))
  }

  /** Whether a watch call ended because its `grpc-timeout` passed. */
  watchExpired(stream: ServerHttp2Stream): boolean {
    return this.#expiredWatches.has(stream)
  }

  /** Stops the sweep (on shutdown). */
  stop(): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  #release(slot: number): void {
    this.#calls[slot] = undefined
    this.#free.push(slot)
    this.#pending--
  }

  /** Ends a call whose deadline passed with DEADLINE_EXCEEDED, as grpc-js does. */
  #expire(stream: ServerHttp2Stream): void {
    if (this.#watching.has(stream)) {
      this.#expiredWatches.add(stream)
      stream.end()
    } else sendError(stream, { code: GRPC_STATUS.DEADLINE_EXCEEDED, details: 'Deadline exceeded' })
  }

  /**
   * Every {@link HOUSEKEEPING_MS}: ends overdue calls, forgets calls the client reset, and sends
   * GOAWAY to connections that have had no call for `GRPC_MAX_CONNECTION_IDLE`.
   */
  #sweep(): void {
    const now = this.#clock.now()
    const busy = new Set<Http2Session | undefined>()
    const calls = this.#calls
    for (let slot = 0; slot < calls.length; slot++) {
      const stream = calls[slot]
      if (stream === undefined) continue
      if (
        stream.destroyed ||
        stream.closed ||
        (stream.headersSent && !this.#watching.has(stream))
      ) {
        this.#release(slot) // reset by the client, or being answered
      } else if ((this.#deadlines[slot] as number) <= now) {
        this.#release(slot)
        try {
          this.#expire(stream)
        } catch (error) {
          this.#onFailure(stream, error)
        }
      } else busy.add(stream.session)
    }
    for (const stream of this.#watching) busy.add(stream.session)
    for (const [session, state] of this.#activity) {
      if (busy.has(session)) state.lastBusy = now
      else if (
        this.#maxIdleMs > 0 &&
        !session.closed &&
        now - Math.max(state.lastCall, state.lastBusy) >= this.#maxIdleMs
      ) {
        session.close() // GOAWAY; nothing is in flight
      }
    }
    if (this.#pending === 0) {
      // Nothing in flight: the table starts small again, so that a burst of calls does not leave
      // every later sweep walking its empty slots.
      this.#calls.length = 0
      this.#deadlines.length = 0
      this.#free.length = 0
      if (this.#activity.size === 0) this.stop()
    }
  }
}
