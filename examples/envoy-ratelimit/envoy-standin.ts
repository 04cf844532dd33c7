/**
 * A STAND-IN FOR ENVOY, not Envoy: a small HTTP proxy that does for each request what Envoy's
 * `envoy.filters.http.ratelimit` filter does with `envoy.yaml` (Debian has no Envoy package, so
 * the example runs with this where Envoy is not installed). It speaks the filter's protocol to the
 * rate limit service over gRPC (`envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`,
 * through @grpc/grpc-js and the package's `.proto` files):
 *
 * - the descriptors of the route's `rate_limits` actions: `(user_id, <x-user-id>)` and
 *   `(user_id, <x-user-id>), (path, <:path>)`; without the header no descriptor and no call;
 * - `OVER_LIMIT`: 429 with `x-envoy-ratelimited: true`; `OK`: the request goes to the backend;
 *   either way the `x-ratelimit-*` headers of `enable_x_ratelimit_headers: DRAFT_VERSION_03`
 *   and the service's `response_headers_to_add`;
 * - the service unreachable or slower than 250 ms: the request goes through
 *   (`failure_mode_deny: false`).
 *
 * Run: `node --conditions=dev-source --import tsx examples/envoy-ratelimit/envoy-standin.ts`
 * (`LISTEN_PORT` 10000, `BACKEND_URL` http://127.0.0.1:8000, `RATELIMIT_ADDRESS` 127.0.0.1:8081).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'

const PROTO_DIR = fileURLToPath(new URL('../../packages/ratelimit/proto/', import.meta.url))
const UNIT_SECONDS: Readonly<Record<string, number>> = {
  SECOND: 1,
  MINUTE: 60,
  HOUR: 3600,
  DAY: 86_400,
  WEEK: 604_800,
  MONTH: 2_592_000,
  YEAR: 31_536_000,
}

/** `RateLimitResponse` as proto-loader decodes it (enum names, Duration as seconds). */
interface RateLimitResponse {
  overallCode?: string
  statuses?: {
    code?: string
    currentLimit?: { requestsPerUnit?: number; unit?: string; name?: string }
    limitRemaining?: number
    durationUntilReset?: { seconds?: number }
  }[]
  responseHeadersToAdd?: { key?: string; value?: string }[]
}

type Entry = { key: string; value: string }

/** Options of {@link startEnvoyStandin}. */
export interface EnvoyStandinOptions {
  /** The backend every allowed request goes to, such as `http://127.0.0.1:8000`. */
  readonly backendUrl: string
  /** The rate limit service's gRPC address, `host:port`. */
  readonly rateLimitAddress: string
  /** The filter's `domain`. @default 'edge' */
  readonly domain?: string
  /** @default 10000; 0 picks a free port */
  readonly port?: number
  /** The filter's `timeout` (then the request goes through), milliseconds. @default 250 */
  readonly timeoutMs?: number
}

/** The descriptors envoy.yaml's actions make of a request (none without `x-user-id`). */
function descriptorsOf(request: IncomingMessage): { entries: Entry[] }[] {
  const user = request.headers['x-user-id']
  if (typeof user !== 'string') return []
  return [
    { entries: [{ key: 'user_id', value: user }] },
    {
      entries: [
        { key: 'user_id', value: user },
        { key: 'path', value: request.url ?? '/' },
      ],
    },
  ]
}

/** `x-ratelimit-*` (DRAFT_VERSION_03) of the status closest to its limit. */
function rateLimitHeaders(response: RateLimitResponse): Record<string, string> {
  const limited = (response.statuses ?? []).filter((status) => status.currentLimit !== undefined)
  const closest = limited.reduce<(typeof limited)[number] | undefined>(
    (best, status) =>
      best === undefined || (status.limitRemaining ?? 0) < (best.limitRemaining ?? 0)
        ? status
        : best,
    undefined,
  )
  if (closest === undefined) return {}
  const policy = (status: (typeof limited)[number]) =>
    `${String(status.currentLimit?.requestsPerUnit ?? 0)};w=${String(UNIT_SECONDS[status.currentLimit?.unit ?? ''] ?? 0)}`
  return {
    'x-ratelimit-limit': [
      String(closest.currentLimit?.requestsPerUnit ?? 0),
      ...limited.map(policy),
    ].join(', '),
    'x-ratelimit-remaining': String(closest.limitRemaining ?? 0),
    'x-ratelimit-reset': String(closest.durationUntilReset?.seconds ?? 0),
  }
}

/** Starts the stand-in; `close()` stops it and its gRPC channel. */
export async function startEnvoyStandin(
  options: EnvoyStandinOptions,
): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const definition = protoLoader.loadSync('envoy/service/ratelimit/v3/rls.proto', {
    includeDirs: [PROTO_DIR],
    enums: String,
    longs: Number,
    defaults: false,
  })
  const { RateLimitService } = (
    grpc.loadPackageDefinition(definition) as unknown as {
      envoy: { service: { ratelimit: { v3: { RateLimitService: grpc.ServiceClientConstructor } } } }
    }
  ).envoy.service.ratelimit.v3
  const client = new RateLimitService(options.rateLimitAddress, grpc.credentials.createInsecure())
  const shouldRateLimit = (descriptors: { entries: Entry[] }[]) =>
    new Promise<RateLimitResponse>((resolve, reject) => {
      const call = client.ShouldRateLimit as (
        request: object,
        options: grpc.CallOptions,
        callback: (error: grpc.ServiceError | null, response?: RateLimitResponse) => void,
      ) => void
      call.call(
        client,
        { domain: options.domain ?? 'edge', descriptors },
        { deadline: Date.now() + (options.timeoutMs ?? 250) }, // the filter's `timeout: 0.25s`
        (error, response) => {
          if (error !== null) reject(error)
          else resolve(response ?? {})
        },
      )
    })

  const server = createServer((request, response) => {
    const descriptors = descriptorsOf(request)
    const decided: Promise<RateLimitResponse | undefined> =
      descriptors.length === 0
        ? Promise.resolve(undefined)
        : // failure_mode_deny: false — an unreachable or late service lets the request through.
          shouldRateLimit(descriptors).catch(() => undefined)
    void decided.then((decision) => {
      const headers: Record<string, string> =
        decision === undefined ? {} : rateLimitHeaders(decision)
      for (const { key, value } of decision?.responseHeadersToAdd ?? []) {
        if (key !== undefined) headers[key] = value ?? ''
      }
      if (decision?.overallCode === 'OVER_LIMIT') {
        response.writeHead(429, { ...headers, 'x-envoy-ratelimited': 'true' }).end()
        request.resume()
        return
      }
      const upstream = httpRequest(
        new URL(request.url ?? '/', options.backendUrl),
        { method: request.method, headers: request.headers },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, { ...answer.headers, ...headers })
          answer.pipe(response)
        },
      )
      upstream.on('error', () => {
        if (!response.headersSent) response.writeHead(503).end('upstream connect error')
      })
      request.pipe(upstream)
    })
  })
  await new Promise<void>((resolve) => server.listen(options.port ?? 10_000, '127.0.0.1', resolve))
  return {
    server,
    url: `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`,
    async close() {
      client.close()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const standin = await startEnvoyStandin({
    backendUrl: process.env.BACKEND_URL ?? 'http://127.0.0.1:8000',
    rateLimitAddress: process.env.RATELIMIT_ADDRESS ?? '127.0.0.1:8081',
    port: Number(process.env.LISTEN_PORT ?? '10000'),
  })
  process.stdout.write(`Envoy stand-in on ${standin.url} (Ctrl-C to stop)\n`)
}
