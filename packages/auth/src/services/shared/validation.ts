/**
 * Rules for the identifiers users give: email addresses, phone numbers and UUIDs, with upstream's
 * texts for what it refuses.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/helpers.go
 * @module
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js'
import { BadRequestError } from '../../errors.js'

const EMAIL =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/

/**
 * Validates and lower-cases an email address (upstream `validateEmail`).
 *
 * @throws {@link BadRequestError} `validation_failed`: "An email address is required", "An email
 *   address is too long", "Unable to validate email address: invalid format".
 */
export function validateEmail(email: string): string {
  if (email === '') throw new BadRequestError('validation_failed', 'An email address is required')
  if (email.length > 255) {
    throw new BadRequestError('validation_failed', 'An email address is too long')
  }
  if (!EMAIL.test(email)) {
    throw new BadRequestError(
      'validation_failed',
      'Unable to validate email address: invalid format',
    )
  }
  return email.toLowerCase()
}

/**
 * A phone number as stored: E.164 digits without `+` (not checked; see {@link validatePhone}).
 * Spaces and `+` are removed, as upstream; a number written with other punctuation in
 * international form (`+1 (555) 010-0100`, `+44 20-7946-0958`) is normalised to E.164 by
 * `libphonenumber-js` (an extension is refused). Anything else is returned with only spaces and `+` removed, so that
 * {@link validatePhone} refuses it.
 */
export function normalizePhone(phone: string): string {
  const plain = phone.replace(/[\s+]/g, '')
  if (/^\d*$/.test(plain)) return plain
  const trimmed = phone.trim()
  if (!trimmed.startsWith('+')) return plain
  const parsed = parsePhoneNumberFromString(trimmed, { extract: false })
  return parsed && parsed.ext === undefined ? parsed.number.slice(1) : plain
}

/**
 * Normalises ({@link normalizePhone}) and validates a phone number: it must then be E.164
 * digits (`^[1-9][0-9]{1,14}$`). Stored without `+`.
 *
 * @throws {@link BadRequestError} `validation_failed` "Invalid phone number format (E.164
 *   required)".
 */
export function validatePhone(phone: string): string {
  const digits = normalizePhone(phone)
  if (!/^[1-9][0-9]{1,14}$/.test(digits)) {
    throw new BadRequestError('validation_failed', 'Invalid phone number format (E.164 required)')
  }
  return digits
}

/** A UUID of any version, as a JSON Schema `pattern` (for route schemas). */
export const UUID_PATTERN =
  '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'

const UUID = new RegExp(UUID_PATTERN)

/** Whether a string is a UUID (any version). */
export function isUuid(value: string): boolean {
  return UUID.test(value)
}

/** The nil UUID, which upstream uses as "none" (`instance_id`, a token's empty `session_id`). */
export const NIL_UUID = '00000000-0000-0000-0000-000000000000'
