/**
 * Protobuf encoding of the State-of-the-World discovery messages the xDS client exchanges
 * (`proto/envoy/service/discovery/v3/discovery.proto`): it sends
 * `DiscoveryRequest{version_info=1, node=2 (Node{id=1, metadata=3}), resource_names=3,
 * type_url=4, response_nonce=5, error_detail=6 (google.rpc.Status{code=1, message=2})}` and
 * receives `DiscoveryResponse{version_info=1, resources=2 (google.protobuf.Any{type_url=1,
 * value=2}), type_url=4, nonce=5}`.
 *
 * @see https://github.com/envoyproxy/envoy/blob/main/api/envoy/service/discovery/v3/discovery.proto
 * @module
 */
import type { JsonObject } from '../types.js'
import { structSize, writeStructFields } from './struct.js'
import { varintSize, WIRE, WireReader, WireWriter } from './wire.js'

/** `envoy.config.core.v3.Node`, the part the rate limit service sends. */
export interface XdsNode {
  /** `CONFIG_GRPC_XDS_NODE_ID`. */
  readonly id: string
  /** `CONFIG_GRPC_XDS_NODE_METADATA`, as a `google.protobuf.Struct`. */
  readonly metadata: JsonObject
}

/** `google.rpc.Status`, as a NACK's `error_detail`. */
export interface RpcStatus {
  /** A gRPC status code. */
  readonly code: number
  readonly message: string
}

/** `envoy.service.discovery.v3.DiscoveryRequest`. */
export interface DiscoveryRequest {
  /** The version last applied ('' before the first). */
  readonly versionInfo: string
  readonly node: XdsNode | undefined
  /** Empty: every resource of the type. */
  readonly resourceNames: readonly string[]
  readonly typeUrl: string
  /** The nonce of the response being ACKed or NACKed ('' on the first request). */
  readonly responseNonce: string
  /** Set on a NACK. */
  readonly errorDetail: RpcStatus | undefined
}

/** `google.protobuf.Any`: a type URL and the serialized message. */
export interface AnyMessage {
  readonly typeUrl: string
  readonly value: Buffer
}

/** `envoy.service.discovery.v3.DiscoveryResponse`. */
export interface DiscoveryResponse {
  readonly versionInfo: string
  readonly resources: readonly AnyMessage[]
  readonly typeUrl: string
  readonly nonce: string
}

const EMPTY: Buffer = Buffer.alloc(0)

/** A length-delimited field (`field` below 16): tag, length, payload. */
function lenField(field: number, payload: Buffer): Buffer {
  const head = new WireWriter(1 + varintSize(payload.length))
  head.tag(field, WIRE.LEN)
  head.varint(payload.length)
  return Buffer.concat([head.buf, payload])
}

/** A string field, left out when empty (proto3). */
function stringField(field: number, value: string): Buffer {
  return value === '' ? EMPTY : lenField(field, Buffer.from(value, 'utf8'))
}

function encodeNode(node: XdsNode): Buffer {
  const parts = [stringField(1, node.id)]
  if (Object.keys(node.metadata).length > 0) {
    const struct = new WireWriter(structSize(node.metadata))
    writeStructFields(struct, node.metadata)
    parts.push(lenField(3, struct.buf))
  }
  return Buffer.concat(parts)
}

function encodeStatus(status: RpcStatus): Buffer {
  const parts: Buffer[] = []
  if (status.code !== 0) {
    const code = new WireWriter(1 + varintSize(status.code))
    code.tag(1, WIRE.VARINT)
    code.varint(status.code)
    parts.push(code.buf)
  }
  parts.push(stringField(2, status.message))
  return Buffer.concat(parts)
}

/** Encodes a `DiscoveryRequest`. */
export function encodeDiscoveryRequest(request: DiscoveryRequest): Buffer {
  const parts = [stringField(1, request.versionInfo)]
  if (request.node !== undefined) parts.push(lenField(2, encodeNode(request.node)))
  for (const name of request.resourceNames) parts.push(lenField(3, Buffer.from(name, 'utf8')))
  parts.push(stringField(4, request.typeUrl), stringField(5, request.responseNonce))
  if (request.errorDetail !== undefined) parts.push(lenField(6, encodeStatus(request.errorDetail)))
  return Buffer.concat(parts)
}

/** Reads the bytes of a length-delimited field. */
function readBytes(r: WireReader): Buffer {
  const stop = r.delimited()
  const bytes = r.buf.subarray(r.pos, stop)
  r.pos = stop
  return bytes
}

function readAny(r: WireReader): AnyMessage {
  let typeUrl = ''
  let value = EMPTY
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) typeUrl = r.string()
    else if (field === 2 && type === WIRE.LEN) value = readBytes(r)
    else r.skip(type)
  }
  return { typeUrl, value }
}

/**
 * Decodes a `DiscoveryResponse`. Resource values are views into `buf`, decoded later by type.
 *
 * @throws {@link WireFormatError} On malformed data or invalid UTF-8 in a string field.
 */
export function decodeDiscoveryResponse(buf: Buffer): DiscoveryResponse {
  const r = new WireReader(buf)
  let versionInfo = ''
  let typeUrl = ''
  let nonce = ''
  const resources: AnyMessage[] = []
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) versionInfo = r.string()
    else if (field === 2 && type === WIRE.LEN) {
      const outer = r.enter()
      resources.push(readAny(r))
      r.leave(outer)
    } else if (field === 4 && type === WIRE.LEN) typeUrl = r.string()
    else if (field === 5 && type === WIRE.LEN) nonce = r.string()
    else r.skip(type)
  }
  return { versionInfo, resources, typeUrl, nonce }
}
