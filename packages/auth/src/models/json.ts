import { boundedTimestamp } from '../storage/timestamps.js'

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

const bounded = boundedTimestamp((text) => new Date(text))

/**
 * Reads a timestamp of a `json` value built by PostgreSQL (`to_json`, `json_agg`): ISO 8601 text
 * with its offset for `timestamptz`. PostgreSQL's `infinity` and `-infinity` become the latest and
 * earliest `Date`, as the drivers' parsers of timestamp columns are set to (`storage/timestamps.ts`).
 *
 * @returns `null` for null or absent, else the instant (millisecond precision, as the driver's).
 */
export function timestampFromJson(value: unknown): Date | null {
  if (typeof value !== 'string') return null
  return bounded(value)
}

/**
 * The row of a `json` value built by PostgreSQL from one row (`to_json`, `json_build_object`),
 * with its `timestampColumns` read as `Date` ({@link timestampFromJson}). The driver parses `json`;
 * text is parsed here. The parsed object is changed in place and returned.
 *
 * @returns `undefined` when the value is null (an outer join found no row).
 */
export function rowFromJson(
  value: unknown,
  timestampColumns: readonly string[],
): Record<string, unknown> | undefined {
  const parsed = typeof value === 'string' ? (JSON.parse(value) as unknown) : value
  if (typeof parsed !== 'object' || parsed === null) return undefined
  const row = parsed as Record<string, unknown>
  for (const column of timestampColumns) row[column] = timestampFromJson(row[column])
  return row
}
