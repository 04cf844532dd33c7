/**
 * Stats sinks: statsd over TCP (upstream's gostats default), JSON lines on standard output
 * (`USE_STATSD=false`, in gostats' logging-sink format), or nothing (`DISABLE_STATS`).
 *
 * @module
 */
import { Socket } from 'node:net'
import type { Writable } from 'node:stream'
import type { Clock } from '../clock.js'
import { STATSD_ILLEGAL } from './manager.js'
import type { FlushedStat, StatsSink } from './store.js'

/**
 * Formats one stat as a statsd line: `name:value|c`, `|g`, or `|ms` (with `|@rate`). Characters
 * a statsd name cannot hold (`:`, `|`, control characters) become `_`, so every stat is exactly
 * one line whatever its name.
 */
export function statsdLine(stat: FlushedStat): string {
  const name = stat.name.replace(STATSD_ILLEGAL, '_')
  switch (stat.type) {
    case 'counter':
      return `${name}:${String(stat.value)}|c\n`
    case 'gauge':
      return `${name}:${String(stat.value)}|g\n`
    case 'timer': {
      const rate =
        stat.sampleRate !== undefined && stat.sampleRate < 1
          ? `|@${stat.sampleRate.toFixed(6)}`
          : ''
      return `${name}:${stat.value.toFixed(6)}|ms${rate}\n`
    }
  }
}

/** Discards everything (`DISABLE_STATS=true`). */
export class NullSink implements StatsSink {
  flush(): void {
    // Nothing to do: stats are disabled.
  }
  close(): Promise<void> {
    return Promise.resolve()
  }
}

/**
 * Writes each flush as JSON lines to a stream (standard output), in gostats' logging-sink shape:
 * `{"level":"debug","ts":…,"logger":"gostats.loggingsink","msg":"flushing counter","json":{…}}`.
 */
export class StreamSink implements StatsSink {
  readonly #out: Writable
  readonly #clock: Clock

  constructor(out: Writable, clock: Clock) {
    this.#out = out
    this.#clock = clock
  }

  flush(stats: readonly FlushedStat[]): void {
    const ts = (this.#clock.now() / 1000).toFixed(6)
    const line = (msg: string, json: object): string =>
      `${JSON.stringify({ level: 'debug', ts: Number(ts), logger: 'gostats.loggingsink', msg, json })}\n`
    let text = ''
    for (const s of stats) {
      text += line(`flushing ${s.type}`, { name: s.name, type: s.type, value: s.value.toFixed(6) })
    }
    text += line('flushing all stats', { type: 'all stats', value: '0.000000' })
    this.#out.write(text)
  }

  close(): Promise<void> {
    return Promise.resolve()
  }
}

/** Most bytes buffered while statsd is unreachable; older lines are dropped beyond this. */
const MAX_PENDING_BYTES = 1024 * 1024

/**
 * Sends stats to statsd over TCP (`STATSD_HOST:STATSD_PORT`), reconnecting in the background.
 * Never throws and never blocks the service: while statsd is down, lines are buffered up to
 * 1 MiB and then dropped.
 */
export class StatsdSink implements StatsSink {
  readonly #host: string
  readonly #port: number
  #socket: Socket | undefined
  #connected = false
  #pending = ''
  #closed = false
  #retry: NodeJS.Timeout | undefined

  constructor(host: string, port: number) {
    this.#host = host
    this.#port = port
    this.#connect()
  }

  #connect(): void {
    if (this.#closed) return
    const socket = new Socket()
    this.#socket = socket
    socket.setNoDelay(true)
    socket.on('connect', () => {
      this.#connected = true
      if (this.#pending !== '') {
        socket.write(this.#pending)
        this.#pending = ''
      }
    })
    socket.on('error', () => {
      // Reported through 'close'; statsd being down must not affect the service.
    })
    socket.on('close', () => {
      this.#connected = false
      if (this.#closed) return
      this.#retry = setTimeout(() => {
        this.#connect()
      }, 1000)
      this.#retry.unref()
    })
    socket.unref()
    socket.connect(this.#port, this.#host)
  }

  flush(stats: readonly FlushedStat[]): void {
    const text = stats.map(statsdLine).join('')
    if (text === '') return
    if (this.#connected && this.#socket !== undefined) this.#socket.write(text)
    else {
      this.#pending += text
      if (this.#pending.length > MAX_PENDING_BYTES)
        this.#pending = this.#pending.slice(-MAX_PENDING_BYTES)
    }
  }

  close(): Promise<void> {
    this.#closed = true
    clearTimeout(this.#retry)
    const socket = this.#socket
    if (socket === undefined || !this.#connected) {
      socket?.destroy()
      return Promise.resolve()
    }
    return new Promise((resolve) => {
      socket.end(() => {
        resolve()
      })
      setTimeout(() => {
        socket.destroy()
        resolve()
      }, 1000).unref()
    })
  }
}
