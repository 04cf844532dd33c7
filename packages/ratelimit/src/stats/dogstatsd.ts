/**
 * The tagged statsd sink (`USE_TAGGED_STATSD`, upstream's `USE_DOG_STATSD`): DogStatsD lines
 * (`name:1|c|#tag:value`) in UDP datagrams to `STATSD_HOST:STATSD_PORT`, with upstream's
 * mogrifiers turning parts of dotted names into tags (`src/godogstats/mogrifier_map.go`).
 *
 * @see https://docs.datadoghq.com/developers/dogstatsd/datagram_shell/
 * @module
 */
import { createSocket, type Socket } from 'node:dgram'
import { isIPv6 } from 'node:net'
import type { MogrifierSettings } from '../settings/settings.js'
import { splitExtraTags } from './prometheus.js'
import { statsdLine } from './sinks.js'
import type { FlushedStat, StatsSink } from './store.js'

/** A compiled mogrifier. */
interface Mogrifier {
  readonly regex: RegExp
  readonly name: string
  readonly tags: readonly (readonly [string, string])[]
}

const GROUP = /\$(\d+)/g

function expand(template: string, match: RegExpExecArray): string {
  return template.replace(GROUP, (_, n: string) => match[Number(n)] ?? '')
}

/** Characters a DogStatsD tag cannot hold (`,` separates tags, `|` fields). */
const TAG_ILLEGAL = /[,|#\p{Cc}]/gu

/**
 * Renames stats and gives them tags: gostats' `.__k=v` extra tags become `k:v` tags, then the
 * first mogrifier whose pattern matches the rest renames it (`$1` = a group) and adds its tags.
 */
export class Mogrifiers {
  readonly #list: readonly Mogrifier[]

  constructor(settings: readonly MogrifierSettings[]) {
    this.#list = settings.map((m) => ({
      regex: new RegExp(m.pattern),
      name: m.name,
      tags: Object.entries(m.tags),
    }))
  }

  /** The DogStatsD name and tags (`k:v`) of a stat. */
  apply(statName: string): { name: string; tags: string[] } {
    const { name, tags: extra } = splitExtraTags(statName)
    const tags = Object.entries(extra).map(([k, v]) => `${k}:${v}`)
    for (const m of this.#list) {
      const match = m.regex.exec(name)
      if (match === null) continue
      return {
        name: expand(m.name, match),
        tags: [...m.tags.map(([k, v]) => `${k}:${expand(v, match)}`), ...tags],
      }
    }
    return { name, tags }
  }
}

/** Formats one stat as a DogStatsD line (without the newline). */
export function dogStatsdLine(stat: FlushedStat, mogrifiers: Mogrifiers): string {
  const { name, tags } = mogrifiers.apply(stat.name)
  const tagText =
    tags.length > 0 ? `|#${tags.map((t) => t.replace(TAG_ILLEGAL, '_')).join(',')}` : ''
  // The plain statsd line without its newline, then the tags.
  return statsdLine({ ...stat, name }).slice(0, -1) + tagText
}

/** Largest datagram payload: DogStatsD's default for UDP (fits a 1500-byte MTU). */
export const MAX_DATAGRAM_BYTES = 1432

/**
 * Sends each flush as DogStatsD lines over UDP, packed into datagrams of at most
 * {@link MAX_DATAGRAM_BYTES}. Never throws and never waits: a send error (no listener, no
 * route) drops that datagram, as UDP statsd does.
 */
export class TaggedStatsdSink implements StatsSink {
  readonly #socket: Socket
  readonly #host: string
  readonly #port: number
  readonly #mogrifiers: Mogrifiers
  #sending = 0
  #drained: (() => void) | undefined

  constructor(host: string, port: number, mogrifiers: readonly MogrifierSettings[]) {
    this.#host = host
    this.#port = port
    this.#mogrifiers = new Mogrifiers(mogrifiers)
    this.#socket = createSocket(isIPv6(host) ? 'udp6' : 'udp4')
    this.#socket.on('error', () => {
      // Statsd being unreachable must not affect the service.
    })
    this.#socket.unref()
  }

  flush(stats: readonly FlushedStat[]): void {
    let datagram = ''
    const send = (): void => {
      if (datagram === '') return
      this.#sending++
      this.#socket.send(datagram, this.#port, this.#host, () => {
        // Errors are dropped (see the class comment).
        if (--this.#sending === 0) this.#drained?.()
      })
      datagram = ''
    }
    for (const stat of stats) {
      const line = dogStatsdLine(stat, this.#mogrifiers)
      if (
        datagram !== '' &&
        Buffer.byteLength(datagram) + 1 + Buffer.byteLength(line) > MAX_DATAGRAM_BYTES
      ) {
        send()
      }
      datagram = datagram === '' ? line : `${datagram}\n${line}`
    }
    send()
  }

  /** Waits for the datagrams being sent (at most 1 s), then closes the socket. */
  async close(): Promise<void> {
    if (this.#sending > 0) {
      await new Promise<void>((resolve) => {
        this.#drained = resolve
        setTimeout(resolve, 1000).unref()
      })
    }
    await new Promise<void>((resolve) => {
      this.#socket.close(() => {
        resolve()
      })
    })
  }
}
