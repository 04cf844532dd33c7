/**
 * An xDS management server for tests: the State-of-the-World Aggregated Discovery Service on
 * @grpc/grpc-js, encoding with @bufbuild/protobuf from the package's `.proto` files (an
 * implementation independent of the service's hand-written codec). It records every request and
 * the metadata of every stream, and pushes whatever a test asks, valid or not.
 */
import { create, fromBinary, toBinary, type MessageInitShape } from '@bufbuild/protobuf'
import { anyPack, type Any } from '@bufbuild/protobuf/wkt'
import * as grpc from '@grpc/grpc-js'
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from './reference/envoy/service/discovery/v3/discovery_pb.js'
import { RateLimitConfigSchema } from './reference/ratelimit/config/ratelimit/v3/rls_conf_pb.js'

/** The ADS method path. */
const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources'

/** A `RateLimitConfig` as a test writes it. */
export type RateLimitConfigInit = MessageInitShape<typeof RateLimitConfigSchema>

const adsDefinition = {
  StreamAggregatedResources: {
    path: ADS_PATH,
    requestStream: true,
    responseStream: true,
    requestSerialize: (message: DiscoveryRequest) =>
      Buffer.from(toBinary(DiscoveryRequestSchema, message)),
    requestDeserialize: (bytes: Buffer) => fromBinary(DiscoveryRequestSchema, bytes),
    responseSerialize: (message: DiscoveryResponse) =>
      Buffer.from(toBinary(DiscoveryResponseSchema, message)),
    responseDeserialize: (bytes: Buffer) => fromBinary(DiscoveryResponseSchema, bytes),
  },
} satisfies grpc.ServiceDefinition

/** Packs configurations as the resources of a response. */
export function configResources(configs: readonly RateLimitConfigInit[]): Any[] {
  return configs.map((config) =>
    anyPack(RateLimitConfigSchema, create(RateLimitConfigSchema, config)),
  )
}

/** A running test management server. */
export class TestManagementServer {
  readonly #server: grpc.Server
  readonly #streams = new Set<grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>>()
  readonly #waiting: ((request: DiscoveryRequest) => void)[] = []
  #read = 0
  #nonce = 0
  /** Every request received, in order. */
  readonly requests: DiscoveryRequest[] = []
  /** The metadata of every stream opened, in order. */
  readonly streamMetadata: grpc.Metadata[] = []
  #port = 0

  private constructor(server: grpc.Server) {
    this.#server = server
  }

  /** The bound port. */
  get port(): number {
    return this.#port
  }

  /**
   * Starts a server on loopback.
   *
   * @param port A port to bind (a restart on the same port). @default a free one
   * @param credentials @default plaintext
   */
  static async start(
    port = 0,
    credentials = grpc.ServerCredentials.createInsecure(),
  ): Promise<TestManagementServer> {
    const self = new TestManagementServer(new grpc.Server())
    self.#server.addService(adsDefinition, {
      StreamAggregatedResources: (
        call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>,
      ) => {
        self.#attach(call)
      },
    })
    self.#port = await new Promise<number>((resolve, reject) => {
      self.#server.bindAsync(`127.0.0.1:${String(port)}`, credentials, (error, bound) => {
        if (error !== null) reject(error)
        else resolve(bound)
      })
    })
    return self
  }

  /** `127.0.0.1:<port>`. */
  get address(): string {
    return `127.0.0.1:${String(this.port)}`
  }

  #attach(call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>): void {
    this.#streams.add(call)
    this.streamMetadata.push(call.metadata)
    call.on('data', (request: DiscoveryRequest) => {
      this.requests.push(request)
      const waiter = this.#waiting.shift()
      if (waiter !== undefined) {
        this.#read++
        waiter(request)
      }
    })
    call.on('error', () => undefined)
    const forget = (): void => {
      this.#streams.delete(call)
    }
    call.on('end', forget)
    call.on('cancelled', forget)
    call.on('close', forget)
  }

  /** The next request not yet returned by this method (waits for it). */
  nextRequest(): Promise<DiscoveryRequest> {
    const request = this.requests[this.#read]
    if (request !== undefined) {
      this.#read++
      return Promise.resolve(request)
    }
    return new Promise((resolve) => this.#waiting.push(resolve))
  }

  /**
   * Sends a response to every open stream.
   *
   * @returns The response's nonce.
   */
  push(
    versionInfo: string,
    resources: Any[],
    typeUrl = 'type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig',
  ): string {
    this.#nonce++
    const nonce = `nonce-${String(this.#nonce)}`
    const response = create(DiscoveryResponseSchema, { versionInfo, resources, typeUrl, nonce })
    for (const stream of this.#streams) stream.write(response)
    return nonce
  }

  /** Stops at once, breaking the open streams. */
  stop(): Promise<void> {
    this.#server.forceShutdown()
    return Promise.resolve()
  }
}
