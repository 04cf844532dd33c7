/**
 * The OpenTelemetry environment variables' list format (`OTEL_EXPORTER_OTLP_HEADERS`,
 * `OTEL_RESOURCE_ATTRIBUTES`): `k1=v1,k2=v2`, keys and values URL-encoded (the W3C Baggage
 * format without properties).
 *
 * @see https://opentelemetry.io/docs/specs/otel/protocol/exporter/#specifying-headers-via-environment-variables
 * @see https://opentelemetry.io/docs/specs/otel/resource/sdk/#specifying-resource-information-via-an-environment-variable
 * @module
 */
import { Invalid, invalid } from './fields.js'

/** The pairs of a `k=v,…` list, URL-decoded and trimmed; {@link Invalid} when malformed. */
function parsePairs(value: string): [string, string][] | Invalid {
  const pairs: [string, string][] = []
  for (const item of value.split(',')) {
    if (item.trim() === '') continue
    const eq = item.indexOf('=')
    if (eq <= 0) return invalid('must be a list of key=value pairs separated by commas')
    try {
      pairs.push([
        decodeURIComponent(item.slice(0, eq).trim()),
        decodeURIComponent(item.slice(eq + 1).trim()),
      ])
    } catch {
      return invalid('must be URL-encoded key=value pairs')
    }
  }
  return pairs
}

/**
 * Parses OTLP exporter headers (`OTEL_EXPORTER_OTLP_HEADERS`): names lower-cased, each a valid
 * HTTP header name, values without CR, LF or NUL.
 *
 * @returns The headers, or an {@link Invalid} for the field's problem.
 */
export function parseOtlpHeaders(value: string): Readonly<Record<string, string>> | Invalid {
  const pairs = parsePairs(value)
  if (pairs instanceof Invalid) return pairs
  const headers: Record<string, string> = {}
  for (const [name, val] of pairs) {
    const key = name.toLowerCase()
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(key) || /[\r\n\0]/.test(val)) {
      return invalid('must be HTTP header names and values')
    }
    headers[key] = val
  }
  return headers
}

/**
 * Parses `OTEL_RESOURCE_ATTRIBUTES`: string attributes, keys kept as written (at most 255
 * characters, printable ASCII), values at most 4096 characters.
 *
 * @returns The attributes, or an {@link Invalid} for the field's problem.
 */
export function parseResourceAttributes(value: string): Readonly<Record<string, string>> | Invalid {
  const pairs = parsePairs(value)
  if (pairs instanceof Invalid) return pairs
  const attributes: Record<string, string> = {}
  for (const [key, val] of pairs) {
    let control = false
    for (let i = 0; i < val.length; i++) if (val.charCodeAt(i) < 0x20) control = true
    if (!/^[!-~]{1,255}$/.test(key) || val.length > 4096 || control) {
      return invalid('must be printable keys (at most 255) and values (at most 4096 characters)')
    }
    attributes[key] = val
  }
  return attributes
}
