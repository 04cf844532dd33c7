/**
 * Minimal protobuf wire-format reader and writer: just what the rate limit messages need (varints,
 * length-delimited fields, 64-bit doubles). Hand-written so that decoding allocates nothing but the
 * result objects and rejects invalid UTF-8 in string fields, as Go's protobuf runtime does.
 *
 * @module
 */
import { isUtf8 } from 'node:buffer'
import { RateLimitError } from '../../errors.js'

/** Wire types of the protobuf encoding. */
export const WIRE = { VARINT: 0, I64: 1, LEN: 2, SGROUP: 3, EGROUP: 4, I32: 5 } as const

/**
 * Thrown when bytes are not a valid encoding of the expected message. The message mimics Go's
 * protobuf runtime (`proto: cannot parse invalid wire-format data`).
 */
export class WireFormatError extends RateLimitError {
  declare readonly code: 'ERR_INVALID_WIRE_FORMAT'
  constructor(message: string) {
    super('ERR_INVALID_WIRE_FORMAT', message)
  }
}

/**
 * Reads protobuf fields from a byte range. Nested messages are read between {@link enter} and
 * {@link leave}: while inside, `end` is the nested message's end, so every length, varint and
 * skip is checked against the enclosing message rather than the whole buffer (as protobuf does;
 * a string claiming bytes beyond its message is invalid wire-format data).
 */
export class WireReader {
  readonly buf: Buffer
  pos: number
  /** End (exclusive) of the message being read: the buffer's, or a nested message's. */
  end: number

  /**
   * @param buf Bytes to read.
   * @param start First byte (inclusive). @default 0
   * @param end Last byte (exclusive). @default buf.length
   */
  constructor(buf: Buffer, start = 0, end = buf.length) {
    this.buf = buf
    this.pos = start
    this.end = end
  }

  /** True while bytes remain. */
  more(): boolean {
    return this.pos < this.end
  }

  /**
   * Reads a varint as a number: exact up to 2^53, approximate above (callers that need a bounded
   * value check it).
   *
   * @throws {@link WireFormatError} When the varint is truncated or longer than 10 bytes.
   */
  varint(): number {
    const { buf, end } = this
    let result = 0
    let multiplier = 1
    for (let i = 0; i < 10; i++) {
      if (this.pos >= end) throw new WireFormatError('proto: cannot parse invalid wire-format data')
      const byte = buf[this.pos++] ?? 0
      result += (byte & 0x7f) * multiplier
      if (byte < 0x80) return result
      multiplier *= 128
    }
    throw new WireFormatError('proto: cannot parse invalid wire-format data')
  }

  /**
   * Reads a varint and keeps its low 32 bits, as protobuf does for `uint32` fields.
   *
   * @returns A value in 0..2^32-1.
   */
  uint32(): number {
    const { buf, end } = this
    let result = 0
    for (let shift = 0; shift < 70; shift += 7) {
      if (this.pos >= end) throw new WireFormatError('proto: cannot parse invalid wire-format data')
      const byte = buf[this.pos++] ?? 0
      if (shift < 32) result = (result | ((byte & 0x7f) << shift)) >>> 0
      if (byte < 0x80) return result
    }
    throw new WireFormatError('proto: cannot parse invalid wire-format data')
  }

  /** Reads a varint as a signed 32-bit integer (`int32`, enums). */
  int32(): number {
    return this.uint32() | 0
  }

  /** Reads a field tag; returns `[fieldNumber, wireType]`. */
  tag(): [number, number] {
    const tag = this.uint32()
    const field = tag >>> 3
    if (field === 0) throw new WireFormatError('proto: cannot parse invalid wire-format data')
    return [field, tag & 7]
  }

  /**
   * Reads a length prefix and returns the end of the delimited range.
   *
   * @throws {@link WireFormatError} When the range runs past the end of the current message.
   */
  delimited(): number {
    const length = this.varint()
    const stop = this.pos + length
    if (stop > this.end) throw new WireFormatError('proto: cannot parse invalid wire-format data')
    return stop
  }

  /**
   * Reads a length prefix and enters the nested message it delimits: until {@link leave},
   * {@link more} and every read stop at its end.
   *
   * @returns The enclosing message's end, to hand to {@link leave}.
   * @throws {@link WireFormatError} When the nested message runs past the current one.
   */
  enter(): number {
    const stop = this.delimited()
    const outer = this.end
    this.end = stop
    return outer
  }

  /**
   * Leaves a nested message entered with {@link enter}: moves past its end and restores the
   * enclosing message's end.
   */
  leave(outer: number): void {
    this.pos = this.end
    this.end = outer
  }

  /**
   * Reads a length-delimited UTF-8 string.
   *
   * @throws {@link WireFormatError} When the bytes are not valid UTF-8 (Go's message).
   */
  string(): string {
    return this.text(this.delimited())
  }

  /**
   * Decodes the UTF-8 string from the current position to `stop` (an end returned by
   * {@link delimited}, which callers may check first) and moves past it.
   *
   * @throws {@link WireFormatError} When the bytes are not valid UTF-8 (Go's message).
   */
  text(stop: number): string {
    const start = this.pos
    this.pos = stop
    const { buf } = this
    let ascii = true
    for (let i = start; i < stop; i++) {
      if ((buf[i] ?? 0) >= 0x80) {
        ascii = false
        break
      }
    }
    if (ascii) return buf.toString('latin1', start, stop)
    if (!isUtf8(buf.subarray(start, stop))) {
      throw new WireFormatError('proto: string field contains invalid UTF-8')
    }
    return buf.toString('utf8', start, stop)
  }

  /** Reads a little-endian double. */
  double(): number {
    if (this.pos + 8 > this.end) {
      throw new WireFormatError('proto: cannot parse invalid wire-format data')
    }
    const value = this.buf.readDoubleLE(this.pos)
    this.pos += 8
    return value
  }

  /**
   * Skips a field of the given wire type (unknown fields are ignored, as protobuf requires).
   *
   * @throws {@link WireFormatError} On groups or truncated data.
   */
  skip(wireType: number): void {
    switch (wireType) {
      case WIRE.VARINT:
        this.varint()
        return
      case WIRE.I64:
        this.pos += 8
        break
      case WIRE.LEN:
        this.pos = this.delimited()
        return
      case WIRE.I32:
        this.pos += 4
        break
      default:
        throw new WireFormatError('proto: cannot parse invalid wire-format data')
    }
    if (this.pos > this.end)
      throw new WireFormatError('proto: cannot parse invalid wire-format data')
  }
}

/** Number of bytes of `value` as a varint (`value` ≥ 0, exact up to 2^53). */
export function varintSize(value: number): number {
  let size = 1
  while (value >= 128) {
    value = Math.floor(value / 128)
    size++
  }
  return size
}

/** Bytes of a length-delimited field (tag + length + payload) for field numbers below 16. */
export function lenFieldSize(payload: number): number {
  return 1 + varintSize(payload) + payload
}

/** Bytes of a varint field (tag + value) for field numbers below 16. */
export function varintFieldSize(value: number): number {
  return 1 + varintSize(value)
}

/** Writes protobuf fields into a buffer sized in advance. */
export class WireWriter {
  readonly buf: Buffer
  pos = 0

  /**
   * @param size Exact size of the message in bytes.
   * @param grpcFrame Reserve and fill the 5-byte gRPC message prefix (not compressed, length).
   */
  constructor(size: number, grpcFrame = false) {
    if (grpcFrame) {
      this.buf = Buffer.allocUnsafe(size + 5)
      this.buf[0] = 0
      this.buf.writeUInt32BE(size, 1)
      this.pos = 5
    } else this.buf = Buffer.allocUnsafe(size)
  }

  /** Writes a varint (`value` ≥ 0, exact up to 2^53). */
  varint(value: number): void {
    const { buf } = this
    while (value >= 128) {
      buf[this.pos++] = (value % 128) | 0x80
      value = Math.floor(value / 128)
    }
    buf[this.pos++] = value
  }

  /** Writes a tag for a field number below 16. */
  tag(field: number, wireType: number): void {
    this.buf[this.pos++] = (field << 3) | wireType
  }

  /** Writes a string field whose UTF-8 length is `byteLength`. */
  string(field: number, value: string, byteLength: number): void {
    this.tag(field, WIRE.LEN)
    this.varint(byteLength)
    this.pos += this.buf.write(value, this.pos, byteLength, 'utf8')
  }

  /** Writes a little-endian double. */
  double(value: number): void {
    this.buf.writeDoubleLE(value, this.pos)
    this.pos += 8
  }
}

/** UTF-8 byte length of a string (fast path for ASCII). */
export function utf8Length(value: string): number {
  const length = value.length
  for (let i = 0; i < length; i++) {
    if (value.charCodeAt(i) >= 0x80) return Buffer.byteLength(value, 'utf8')
  }
  return length
}

/**
 * Reads a message whose only field of interest is the varint `field` (other fields are skipped),
 * up to the reader's current end: `google.protobuf.UInt64Value.value`,
 * `google.protobuf.Duration.seconds`.
 *
 * @returns The last value of the field (0 when absent), exact up to 2^53.
 * @throws {@link WireFormatError} On malformed data.
 */
export function readVarintField(r: WireReader, field: number): number {
  let value = 0
  while (r.more()) {
    const [number, type] = r.tag()
    if (number === field && type === WIRE.VARINT) value = r.varint()
    else r.skip(type)
  }
  return value
}
