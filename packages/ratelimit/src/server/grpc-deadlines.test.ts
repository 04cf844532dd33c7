import { EventEmitter } from 'node:events'
import type { Http2Session, ServerHttp2Stream } from 'node:http2'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { CallDeadlines } from './grpc-deadlines.js'

/** The parts of a stream the sweeper and `sendError` read, with what was answered. */
function fakeStream(session: object) {
  const answered: Record<string, unknown>[] = []
  const stream = {
    session,
    destroyed: false,
    closed: false,
    headersSent: false,
    writableEnded: false,
    readableEnded: true,
    respond(headers: Record<string, unknown>) {
      answered.push(headers)
      stream.headersSent = true
    },
    close() {
      stream.closed = true
    },
  }
  return { stream, asStream: stream as unknown as ServerHttp2Stream, answered }
}

describe('CallDeadlines', () => {
  let now = 0
  let deadlines: CallDeadlines
  // Only compared by identity: the sweeper keys its idleness records by session.
  const session = new EventEmitter() as unknown as Http2Session

  beforeEach(() => {
    vi.useFakeTimers()
    now = 0
    deadlines = new CallDeadlines({
      clock: { now: () => now },
      maxConnectionIdleMs: 0,
      onFailure: (_stream, error) => {
        throw error
      },
    })
    deadlines.connectionOpened(session)
  })
  afterEach(() => {
    deadlines.stop()
    vi.useRealTimers()
  })

  /** Moves the clock and runs the sweeps due by then. */
  function advance(ms: number) {
    now += ms
    vi.advanceTimersByTime(ms)
  }

  it('ends an unanswered call at its deadline with DEADLINE_EXCEEDED, and never an answered one', () => {
    const late = fakeStream(session)
    const answered = fakeStream(session)
    deadlines.callStarted(late.asStream, 100)
    deadlines.callAnswered(deadlines.callStarted(answered.asStream, 100), answered.asStream)
    advance(60)
    expect(late.answered).toEqual([])
    advance(60)
    expect(late.answered).toEqual([
      expect.objectContaining({ 'grpc-status': '4', 'grpc-message': 'Deadline exceeded' }),
    ])
    expect(answered.answered).toEqual([])
  })

  it("gives a freed slot to the next call, and a late answer of the first does not free the next one's", () => {
    const first = fakeStream(session)
    const slot = deadlines.callStarted(first.asStream, 100)
    deadlines.callAnswered(slot, first.asStream)
    const next = fakeStream(session)
    expect(deadlines.callStarted(next.asStream, 100)).toBe(slot)
    deadlines.callAnswered(slot, first.asStream)
    advance(150)
    expect(next.answered).toEqual([expect.objectContaining({ 'grpc-status': '4' })])
  })

  it('frees the slot of a call its client reset, at the next sweep', () => {
    const reset = fakeStream(session)
    const slot = deadlines.callStarted(reset.asStream, 10_000)
    reset.stream.destroyed = true
    advance(60)
    const next = fakeStream(session)
    expect(deadlines.callStarted(next.asStream, 10_000)).toBe(slot)
    expect(reset.answered).toEqual([])
  })

  it('starts its table again once no call is in flight', () => {
    const streams = [fakeStream(session), fakeStream(session), fakeStream(session)]
    const slots = streams.map((s) => deadlines.callStarted(s.asStream, 1000))
    expect(slots).toEqual([0, 1, 2])
    streams.forEach((s, i) => {
      deadlines.callAnswered(slots[i] as number, s.asStream)
    })
    advance(60)
    const next = fakeStream(session)
    expect(deadlines.callStarted(next.asStream, 1000)).toBe(0)
    advance(1100)
    expect(next.answered).toEqual([expect.objectContaining({ 'grpc-status': '4' })])
  })
})
