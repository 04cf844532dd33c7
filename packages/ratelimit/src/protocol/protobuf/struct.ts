/**
 * Protobuf encoding of `google.protobuf.Struct` (with `Value` and `ListValue`), as carried by
 * `RateLimitResponse.dynamic_metadata`: `Struct{fields=1 (map<string, Value>)}`,
 * `Value{null_value=1, number_value=2, string_value=3, bool_value=4, struct_value=5,
 * list_value=6}`, `ListValue{values=1}`.
 *
 * @see https://github.com/protocolbuffers/protobuf/blob/main/src/google/protobuf/struct.proto
 * @module
 */
import type { JsonObject, JsonValue } from '../types.js'
import { lenFieldSize, utf8Length, WIRE, type WireReader, type WireWriter } from './wire.js'

function valueSize(value: JsonValue): number {
  // null_value = 0 (NULL_VALUE) and booleans: tag + one byte; numbers: tag + 8 bytes.
  if (value === null || typeof value === 'boolean') return 2
  if (typeof value === 'number') return 9
  if (typeof value === 'string') return lenFieldSize(utf8Length(value))
  return Array.isArray(value) ? lenFieldSize(listSize(value)) : lenFieldSize(structSize(value))
}

function listSize(list: readonly JsonValue[]): number {
  let size = 0
  for (const v of list) size += lenFieldSize(valueSize(v))
  return size
}

function fieldEntrySize(key: string, value: JsonValue): number {
  return lenFieldSize(utf8Length(key)) + lenFieldSize(valueSize(value))
}

/** Bytes of the fields of a `google.protobuf.Struct` (its payload, without tag and length). */
export function structSize(struct: JsonObject): number {
  let size = 0
  for (const [key, value] of Object.entries(struct))
    size += lenFieldSize(fieldEntrySize(key, value))
  return size
}

function writeValue(w: WireWriter, value: JsonValue): void {
  if (value === null) {
    w.tag(1, WIRE.VARINT)
    w.varint(0)
  } else if (typeof value === 'number') {
    w.tag(2, WIRE.I64)
    w.double(value)
  } else if (typeof value === 'string') {
    w.string(3, value, utf8Length(value))
  } else if (typeof value === 'boolean') {
    w.tag(4, WIRE.VARINT)
    w.varint(value ? 1 : 0)
  } else if (Array.isArray(value)) {
    w.tag(6, WIRE.LEN)
    w.varint(listSize(value))
    for (const v of value) {
      w.tag(1, WIRE.LEN)
      w.varint(valueSize(v))
      writeValue(w, v)
    }
  } else {
    w.tag(5, WIRE.LEN)
    w.varint(structSize(value))
    writeStructFields(w, value)
  }
}

/** Writes the fields of a `google.protobuf.Struct` (its payload; {@link structSize} bytes). */
export function writeStructFields(w: WireWriter, struct: JsonObject): void {
  for (const [key, value] of Object.entries(struct)) {
    w.tag(1, WIRE.LEN)
    w.varint(fieldEntrySize(key, value))
    w.string(1, key, utf8Length(key))
    w.tag(2, WIRE.LEN)
    w.varint(valueSize(value))
    writeValue(w, value)
  }
}

function readValue(r: WireReader): JsonValue {
  let value: JsonValue = null
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.VARINT) {
      r.varint()
      value = null
    } else if (field === 2 && type === WIRE.I64) value = r.double()
    else if (field === 3 && type === WIRE.LEN) value = r.string()
    else if (field === 4 && type === WIRE.VARINT) value = r.varint() !== 0
    else if ((field === 5 || field === 6) && type === WIRE.LEN) {
      const outer = r.enter()
      value = field === 5 ? readStruct(r) : readList(r)
      r.leave(outer)
    } else r.skip(type)
  }
  return value
}

function readList(r: WireReader): JsonValue[] {
  const list: JsonValue[] = []
  while (r.more()) {
    const [field, type] = r.tag()
    if (field === 1 && type === WIRE.LEN) {
      const outer = r.enter()
      list.push(readValue(r))
      r.leave(outer)
    } else r.skip(type)
  }
  return list
}

/**
 * Reads the fields of a `google.protobuf.Struct` up to the reader's current end.
 *
 * @throws {@link WireFormatError} On malformed data.
 */
export function readStruct(r: WireReader): JsonObject {
  const struct: JsonObject = {}
  while (r.more()) {
    const [field, type] = r.tag()
    if (field !== 1 || type !== WIRE.LEN) {
      r.skip(type)
      continue
    }
    const outer = r.enter()
    let key = ''
    let value: JsonValue = null
    while (r.more()) {
      const [f, t] = r.tag()
      if (f === 1 && t === WIRE.LEN) key = r.string()
      else if (f === 2 && t === WIRE.LEN) {
        const fieldEnd = r.enter()
        value = readValue(r)
        r.leave(fieldEnd)
      } else r.skip(t)
    }
    struct[key] = value
    r.leave(outer)
  }
  return struct
}
