/**
 * The package's `.proto` files loaded with @grpc/proto-loader (protobufjs): an independent
 * implementation of the wire format, used to check our hand-written codec and as the gRPC client
 * in integration tests.
 */
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { fileURLToPath } from 'node:url'

/** Directory of the package's `.proto` files. */
export const PROTO_DIR = fileURLToPath(new URL('../proto/', import.meta.url))

/** Loaded definitions (camelCase fields, enums as names, 64-bit as numbers, no defaults). */
export const packageDefinition = protoLoader.loadSync(
  ['envoy/service/ratelimit/v3/rls.proto', 'grpc/health/v1/health.proto'],
  { includeDirs: [PROTO_DIR], keepCase: false, enums: String, longs: Number, defaults: false },
)

type Method = protoLoader.MethodDefinition<object, object>

/** `ShouldRateLimit` as loaded from the protos (serializers included). */
export const shouldRateLimitMethod = (
  packageDefinition['envoy.service.ratelimit.v3.RateLimitService'] as protoLoader.ServiceDefinition
).ShouldRateLimit as Method

/** gRPC client constructors generated from the protos. */
export const grpcPackage = grpc.loadPackageDefinition(packageDefinition) as unknown as {
  envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } }
  grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } }
}

/** A proto-loader-shaped response (camelCase, enum names, Duration as `{seconds}`). */
export interface LoadedResponse {
  overallCode?: string
  statuses?: {
    code?: string
    currentLimit?: { name?: string; requestsPerUnit?: number; unit?: string }
    limitRemaining?: number
    durationUntilReset?: { seconds?: number }
  }[]
  responseHeadersToAdd?: { key?: string; value?: string }[]
  dynamicMetadata?: unknown
}

/** A client of our server through the proto-generated stubs. */
export interface ProtoClient {
  /** Calls ShouldRateLimit, with `metadata` (e.g. a `traceparent`) when given. */
  shouldRateLimit(request: object, metadata?: grpc.Metadata): Promise<LoadedResponse>
  check(service?: string): Promise<string>
  close(): void
}

/**
 * Connects a proto-generated client.
 *
 * @param address `host:port` or `unix:/path`.
 * @param credentials @default plaintext
 * @param options Channel options (e.g. `grpc.use_local_subchannel_pool` for a connection of its own).
 */
export function protoClient(
  address: string,
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
  options: grpc.ChannelOptions = {},
): ProtoClient {
  const rls = new grpcPackage.envoy.service.ratelimit.v3.RateLimitService(
    address,
    credentials,
    options,
  )
  const health = new grpcPackage.grpc.health.v1.Health(address, credentials, options)
  const unary = <T>(
    client: grpc.Client,
    method: string,
    request: object,
    metadata = new grpc.Metadata(),
  ): Promise<T> =>
    new Promise((resolve, reject) => {
      const fn = (
        client as unknown as Record<
          string,
          (r: object, m: grpc.Metadata, cb: (e: Error | null, v: T) => void) => void
        >
      )[method]!
      fn.call(client, request, metadata, (error, value) => {
        if (error !== null) reject(error)
        else resolve(value)
      })
    })
  return {
    shouldRateLimit: (request, metadata) =>
      unary<LoadedResponse>(rls, 'ShouldRateLimit', request, metadata),
    check: async (service = '') =>
      (await unary<{ status?: string }>(health, 'Check', { service })).status ?? 'UNKNOWN',
    close: () => {
      rls.close()
      health.close()
    },
  }
}
