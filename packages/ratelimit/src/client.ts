/**
 * A small client of the rate limit service: the command line parsing of
 * `gatehouse-ratelimit-client` (upstream's `cmd/client` flags) and a one-shot `ShouldRateLimit`
 * call over @grpc/grpc-js.
 *
 * @module
 */
import * as grpc from '@grpc/grpc-js'
import { systemClock, type Clock } from './clock.js'
import type { Descriptor, RateLimitRequest, RateLimitResponse } from './protocol/types.js'
import { rateLimitServiceDefinition } from './server/grpc.js'

/** Parsed command line. */
export interface ClientArgs {
  readonly dialString: string
  readonly domain: string
  readonly descriptors: readonly Descriptor[]
}

/**
 * Parses the command line (Go `flag` syntax).
 *
 * @throws {Error} With a usage message for unknown flags, missing values or malformed descriptors.
 */
export function parseClientArgs(argv: readonly string[]): ClientArgs {
  let dialString = 'localhost:8081'
  let domain = ''
  const descriptors: Descriptor[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? ''
    const match = /^--?([a-z_]+)(?:=(.*))?$/s.exec(arg)
    if (match === null) throw new Error(`unexpected argument: ${arg}`)
    const name = match[1] ?? ''
    if (name === 'h' || name === 'help') throw new Error('help requested')
    let value = match[2]
    if (value === undefined) {
      value = argv[++i]
      if (value === undefined) throw new Error(`flag needs an argument: -${name}`)
    }
    switch (name) {
      case 'dial_string':
        dialString = value
        break
      case 'domain':
        domain = value
        break
      case 'descriptors':
        descriptors.push({
          entries: value.split(',').map((pair) => {
            const at = pair.indexOf('=')
            if (at <= 0) throw new Error(`invalid descriptor entry "${pair}": expected key=value`)
            return { key: pair.slice(0, at), value: pair.slice(at + 1) }
          }),
        })
        break
      default:
        throw new Error(`flag provided but not defined: -${name}`)
    }
  }
  return { dialString, domain, descriptors }
}

/**
 * Sends one request.
 *
 * @param timeoutMs The call's deadline, in milliseconds from now. @default 10000
 * @param clock What "now" is. @default {@link systemClock}
 * @throws {Error} The gRPC error (status and details).
 */
export function callShouldRateLimit(
  dialString: string,
  request: RateLimitRequest,
  timeoutMs = 10_000,
  clock: Clock = systemClock,
): Promise<RateLimitResponse> {
  const Client = grpc.makeGenericClientConstructor(rateLimitServiceDefinition, 'RateLimitService')
  const client = new Client(dialString, grpc.credentials.createInsecure())
  return new Promise<RateLimitResponse>((resolve, reject) => {
    client.makeUnaryRequest(
      rateLimitServiceDefinition.ShouldRateLimit.path,
      rateLimitServiceDefinition.ShouldRateLimit.requestSerialize,
      rateLimitServiceDefinition.ShouldRateLimit.responseDeserialize,
      request,
      { deadline: clock.now() + timeoutMs },
      (error, response) => {
        client.close()
        if (error !== null) reject(error)
        else if (response === undefined) reject(new Error('empty response'))
        else resolve(response)
      },
    )
  })
}

/** Options of {@link RateLimitClient}. */
export interface RateLimitClientOptions {
  /**
   * Deadline of each call, in milliseconds from its start; a call past it fails with gRPC
   * `DEADLINE_EXCEEDED`. @default 10000
   */
  readonly timeoutMs?: number
  /** What "now" is (deadlines are absolute epoch milliseconds). @default {@link systemClock} */
  readonly clock?: Clock
  /** @default plaintext (`grpc.credentials.createInsecure()`) */
  readonly credentials?: grpc.ChannelCredentials
}

/**
 * A long-lived client of the service's `ShouldRateLimit` (gRPC `envoy.service.ratelimit.v3`):
 * one channel, reconnected by grpc-js when the service comes back, and a bounded deadline per
 * call. For embedding (the auth server asks it for each decision); the one-shot
 * {@link callShouldRateLimit} serves the command-line client.
 *
 * Per-request `hitsAddend` (0 means 1, upstream) and per-descriptor `hitsAddend` are sent as
 * given; each status's `durationUntilReset` (seconds) says when an `OVER_LIMIT` window ends.
 *
 * @example
 * ```ts
 * const client = new RateLimitClient('127.0.0.1:8081', { timeoutMs: 250 })
 * const answer = await client.shouldRateLimit({
 *   domain: 'gatehouse-auth',
 *   descriptors: [{ entries: [{ key: 'operation', value: 'token' }] }],
 *   hitsAddend: 1,
 * })
 * client.close()
 * ```
 */
export class RateLimitClient {
  readonly #client: grpc.Client
  readonly #timeoutMs: number
  readonly #clock: Clock

  /**
   * @param dialString `host:port` of the service's gRPC listener (grpc-js target syntax).
   */
  constructor(dialString: string, options: RateLimitClientOptions = {}) {
    const Client = grpc.makeGenericClientConstructor(rateLimitServiceDefinition, 'RateLimitService')
    this.#client = new Client(dialString, options.credentials ?? grpc.credentials.createInsecure())
    this.#timeoutMs = options.timeoutMs ?? 10_000
    this.#clock = options.clock ?? systemClock
  }

  /**
   * Asks for one decision.
   *
   * @throws {Error} The gRPC error (`code`, `details`): `UNAVAILABLE` when the service cannot be
   *   reached, `DEADLINE_EXCEEDED` past the deadline, `UNKNOWN` for the service's own errors.
   */
  shouldRateLimit(request: RateLimitRequest): Promise<RateLimitResponse> {
    return new Promise<RateLimitResponse>((resolve, reject) => {
      this.#client.makeUnaryRequest(
        rateLimitServiceDefinition.ShouldRateLimit.path,
        rateLimitServiceDefinition.ShouldRateLimit.requestSerialize,
        rateLimitServiceDefinition.ShouldRateLimit.responseDeserialize,
        request,
        { deadline: this.#clock.now() + this.#timeoutMs },
        (error, response) => {
          if (error !== null) reject(error)
          else if (response === undefined) reject(new Error('empty response'))
          else resolve(response)
        },
      )
    })
  }

  /** Closes the channel; calls made afterwards fail. */
  close(): void {
    this.#client.close()
  }
}
