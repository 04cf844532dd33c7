/** A JSON object (metadata columns). */
export type JsonObject = Record<string, unknown>

/** A timestamp column value as RFC 3339 with milliseconds, or `undefined` when NULL. */
export function isoOrUndefined(value: Date | null | undefined): string | undefined {
  return value ? value.toISOString() : undefined
}

/** Reads a JSON column (jsonb arrives parsed; json may arrive as text) as an object. */
export function asObject(value: unknown): JsonObject {
  if (typeof value === 'string') {
    try {
      return asObject(JSON.parse(value))
    } catch {
      return {}
    }
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as JsonObject)
    : {}
}
