/**
 * Protobuf encoding of the gRPC health checking protocol: `grpc.health.v1.HealthCheckRequest
 * {service=1}` and `HealthCheckResponse{status=1}`.
 *
 * @see https://github.com/grpc/grpc/blob/master/doc/health-checking.md
 * @module
 */
import { lenFieldSize, utf8Length, WIRE, WireReader, WireWriter } from './wire.js'

/** `grpc.health.v1.HealthCheckResponse.ServingStatus` numbers. */
export const SERVING_STATUS = {
  UNKNOWN: 0,
  SERVING: 1,
  NOT_SERVING: 2,
  SERVICE_UNKNOWN: 3,
} as const

/** Name of a health serving status. */
export type ServingStatus = keyof typeof SERVING_STATUS

/** `grpc.health.v1.HealthCheckRequest`. */
export interface HealthCheckRequest {
  readonly service: string
}

/** Decodes `grpc.health.v1.HealthCheckRequest{service = 1}`. */
export function decodeHealthCheckRequest(buf: Buffer): HealthCheckRequest {
  const r = new WireReader(buf)
  let service = ''
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) service = r.string()
    else r.skip(type)
  }
  return { service }
}

/** Encodes `grpc.health.v1.HealthCheckRequest{service = 1}`. */
export function encodeHealthCheckRequest({ service }: HealthCheckRequest): Buffer {
  const length = utf8Length(service)
  const w = new WireWriter(service === '' ? 0 : lenFieldSize(length))
  if (service !== '') w.string(1, service, length)
  return w.buf
}

/** Encodes `grpc.health.v1.HealthCheckResponse{status = 1}`. */
export function encodeHealthCheckResponse(status: ServingStatus): Buffer {
  const value = SERVING_STATUS[status]
  const w = new WireWriter(value === 0 ? 0 : 2)
  if (value !== 0) {
    w.tag(1, WIRE.VARINT)
    w.varint(value)
  }
  return w.buf
}

/** Decodes `grpc.health.v1.HealthCheckResponse{status = 1}`. */
export function decodeHealthCheckResponse(buf: Buffer): ServingStatus {
  const r = new WireReader(buf)
  let value = 0
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) value = r.int32()
    else r.skip(type)
  }
  const names = Object.keys(SERVING_STATUS) as ServingStatus[]
  return names.find((name) => SERVING_STATUS[name] === value) ?? 'UNKNOWN'
}
