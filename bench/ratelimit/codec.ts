/**
 * The hand-written protobuf codec of @gatehouse/ratelimit against @bufbuild/protobuf code generated
 * from the same `proto/` files (`packages/ratelimit/test/reference/`), on the server's work per
 * call: decoding a `RateLimitRequest` (into the service's request type) and encoding a
 * `RateLimitResponse` (gRPC-framed), for the benchmark's one-descriptor request and for a larger
 * one (8 descriptors of 3 entries, with headers). Contenders run in interleaved slices; each
 * figure is the median over the rounds, and each round's ratio is taken within the round.
 *
 * Usage (from the repository root): npx tsx bench/ratelimit/codec.ts [--ms 200] [--rounds 7]
 */
import { fromBinary } from '@bufbuild/protobuf'
import { DEFAULT_REQUEST_LIMITS } from '#internal/ratelimit/protocol/limits.js'
import {
  decodeRateLimitRequest,
  encodeRateLimitRequest,
} from '#internal/ratelimit/protocol/protobuf/request.js'
import { encodeRateLimitResponse } from '#internal/ratelimit/protocol/protobuf/response.js'
import type { RateLimitRequest, RateLimitResponse } from '#internal/ratelimit/protocol/types.js'
import {
  RateLimitRequestSchema,
  RateLimitResponseSchema,
} from '../../packages/ratelimit/test/reference/envoy/service/ratelimit/v3/rls_pb.js'
import { requestFromBuf, responseToBuf } from '../../packages/ratelimit/test/reference/convert.js'
import { machineInfo } from '../lib/report.js'

function parseArgs(argv: string[]): { ms: number; rounds: number } {
  const options = { ms: 200, rounds: 7 }
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--ms') options.ms = Number(argv[++i])
    else if (argv[i] === '--rounds') options.rounds = Number(argv[++i])
    else throw new Error(`unknown argument ${String(argv[i])}`)
  }
  return options
}

const SMALL: RateLimitRequest = {
  domain: 'bench',
  descriptors: [{ entries: [{ key: 'client_id', value: 'bench-client' }] }],
  hitsAddend: 0,
}
const LARGE: RateLimitRequest = {
  domain: 'edge-proxy',
  descriptors: Array.from({ length: 8 }, (_, i) => ({
    entries: [
      { key: 'remote_address', value: `10.0.${String(i)}.17` },
      { key: 'path', value: `/api/v1/resource/${String(i)}` },
      { key: 'user_id', value: `user-${String(1000 + i)}` },
    ],
  })),
  hitsAddend: 1,
}

function responseFor(request: RateLimitRequest, headers: boolean): RateLimitResponse {
  return {
    overallCode: 'OK',
    statuses: request.descriptors.map(() => ({
      code: 'OK' as const,
      currentLimit: { requestsPerUnit: 4_000_000_000, unit: 'HOUR' as const },
      limitRemaining: 3_999_999_000,
      durationUntilReset: 1234,
    })),
    responseHeadersToAdd: headers
      ? [
          { key: 'RateLimit-Limit', value: '4000000000' },
          { key: 'RateLimit-Remaining', value: '3999999000' },
          { key: 'RateLimit-Reset', value: '1234' },
        ]
      : [],
  }
}

/** @bufbuild/protobuf decoding into the service's request type. */
function bufDecode(bytes: Buffer): RateLimitRequest {
  return requestFromBuf(fromBinary(RateLimitRequestSchema, bytes))
}

/** @bufbuild/protobuf encoding of the service's response type, framed for gRPC. */
function bufEncode(response: RateLimitResponse): Buffer {
  const bytes = responseToBuf(response)
  const framed = Buffer.allocUnsafe(5 + bytes.length)
  framed[0] = 0
  framed.writeUInt32BE(bytes.length, 1)
  framed.set(bytes, 5)
  return framed
}

/** Runs `fn` for about `ms` milliseconds; returns operations per second. */
function opsPerSecond(fn: () => unknown, ms: number): number {
  let count = 0
  let sink = 0
  const start = performance.now()
  let now = start
  while (now - start < ms) {
    for (let i = 0; i < 256; i++) {
      if (fn() !== undefined) sink++
    }
    count += 256
    now = performance.now()
  }
  if (sink < 0) console.log(sink)
  return (count / (now - start)) * 1000
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

const { ms, rounds } = parseArgs(process.argv.slice(2))
const cases = [
  { name: 'decode RateLimitRequest, 1 descriptor', request: SMALL, kind: 'decode' },
  { name: 'decode RateLimitRequest, 8 descriptors × 3 entries', request: LARGE, kind: 'decode' },
  { name: 'encode RateLimitResponse, 1 status (framed)', request: SMALL, kind: 'encode' },
  { name: 'encode RateLimitResponse, 8 statuses + 3 headers', request: LARGE, kind: 'encode' },
] as const

// Both codecs must agree before they are timed.
for (const c of cases) {
  const bytes = encodeRateLimitRequest(c.request)
  const ours = JSON.stringify(decodeRateLimitRequest(bytes, DEFAULT_REQUEST_LIMITS))
  if (ours !== JSON.stringify(bufDecode(bytes))) throw new Error(`decoders disagree: ${c.name}`)
  const response = responseFor(c.request, c.request === LARGE)
  if (!encodeRateLimitResponse(response, true).equals(bufEncode(response))) {
    // Field order may differ (rls.proto declares RateLimit.name first): compare decoded.
    const a = fromBinary(RateLimitResponseSchema, encodeRateLimitResponse(response))
    const b = fromBinary(RateLimitResponseSchema, bufEncode(response).subarray(5))
    if (
      JSON.stringify(a, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)) !==
      JSON.stringify(b, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))
    ) {
      throw new Error(`encoders disagree: ${c.name}`)
    }
  }
}

console.log(`Machine: ${machineInfo()}; ${String(rounds)} rounds of ${String(ms)} ms per contender`)
console.log('')
console.log(
  '| operation | hand-written ops/s | @bufbuild/protobuf ops/s | hand-written / @bufbuild (rounds min–max) |',
)
console.log('|---|---:|---:|---:|')
for (const c of cases) {
  const bytes = encodeRateLimitRequest(c.request)
  const response = responseFor(c.request, c.request === LARGE)
  const ours =
    c.kind === 'decode'
      ? () => decodeRateLimitRequest(bytes, DEFAULT_REQUEST_LIMITS)
      : () => encodeRateLimitResponse(response, true)
  const theirs = c.kind === 'decode' ? () => bufDecode(bytes) : () => bufEncode(response)
  opsPerSecond(ours, ms) // warm-up
  opsPerSecond(theirs, ms)
  const a: number[] = []
  const b: number[] = []
  for (let r = 0; r < rounds; r++) {
    a.push(opsPerSecond(ours, ms))
    b.push(opsPerSecond(theirs, ms))
  }
  const ratios = a.map((x, i) => x / (b[i] ?? Number.NaN))
  console.log(
    `| ${c.name} | ${median(a).toFixed(0)} | ${median(b).toFixed(0)} | ${median(ratios).toFixed(1)}× (${Math.min(...ratios).toFixed(1)}–${Math.max(...ratios).toFixed(1)}×) |`,
  )
}
