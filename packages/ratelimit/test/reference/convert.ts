/**
 * Conversions between the service's protocol types and the @bufbuild/protobuf reference messages
 * generated from `proto/` (`npm run generate:reference`), shared by the codec's reference test and
 * the codec benchmark (`bench/ratelimit/codec.ts`).
 */
import { create, toBinary } from '@bufbuild/protobuf'
import {
  UNIT_NUMBERS,
  UNITS,
  type RateLimitRequest,
  type RateLimitResponse,
  type Unit,
} from '#internal/protocol/types.js'
import {
  RateLimitResponse_Code,
  RateLimitResponseSchema,
  type RateLimitRequest as BufRequest,
} from './envoy/service/ratelimit/v3/rls_pb.js'

/** The unit name of a `RateLimitUnit` number (`UNKNOWN` for numbers the service does not know). */
export const unitName = (value: number): Unit =>
  UNITS.find((u) => UNIT_NUMBERS[u] === value) ?? 'UNKNOWN'

/** A @bufbuild/protobuf request in the service's shape. */
export function requestFromBuf(request: BufRequest): RateLimitRequest {
  return {
    domain: request.domain,
    descriptors: request.descriptors.map((d) => ({
      entries: d.entries.map((e) => ({ key: e.key, value: e.value })),
      limit:
        d.limit === undefined
          ? undefined
          : { requestsPerUnit: d.limit.requestsPerUnit, unit: unitName(d.limit.unit) },
      hitsAddend: d.hitsAddend === undefined ? undefined : Number(d.hitsAddend),
    })),
    hitsAddend: request.hitsAddend,
  }
}

/** The service's response encoded by @bufbuild/protobuf (the message bytes, not gRPC-framed). */
export function responseToBuf(response: RateLimitResponse): Uint8Array {
  return toBinary(
    RateLimitResponseSchema,
    create(RateLimitResponseSchema, {
      overallCode: RateLimitResponse_Code[response.overallCode],
      statuses: response.statuses.map((s) => ({
        code: RateLimitResponse_Code[s.code],
        limitRemaining: s.limitRemaining,
        ...(s.currentLimit === undefined
          ? {}
          : {
              currentLimit: {
                requestsPerUnit: s.currentLimit.requestsPerUnit,
                unit: UNIT_NUMBERS[s.currentLimit.unit],
                name: s.currentLimit.name ?? '',
              },
            }),
        ...(s.durationUntilReset === undefined
          ? {}
          : { durationUntilReset: { seconds: BigInt(s.durationUntilReset) } }),
      })),
      responseHeadersToAdd: response.responseHeadersToAdd.map((h) => ({
        key: h.key,
        value: h.value,
      })),
      ...(response.dynamicMetadata === undefined
        ? {}
        : { dynamicMetadata: response.dynamicMetadata }),
    }),
  )
}
