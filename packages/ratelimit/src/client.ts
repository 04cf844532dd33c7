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
