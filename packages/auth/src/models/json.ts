/** A JSON object (metadata columns). */
export type JsonObject = Record<string, unknown>

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
