import type { JWTPayload } from 'jose'
import { InternalServerError } from '../errors.js'
import { isObject } from './answer.js'

type ClaimType = 'string' | 'integer' | 'object' | 'array' | 'string|array'

/**
 * The claims an access token keeps and their JSON types (upstream's `MinimumViableTokenSchema`):
 * the custom access token hook may add claims and change values, not remove or retype these.
 */
const CLAIM_TYPES: Readonly<Record<string, ClaimType>> = {
  aud: 'string|array',
  exp: 'integer',
  jti: 'string',
  iat: 'integer',
  iss: 'string',
  nbf: 'integer',
  sub: 'string',
  email: 'string',
  phone: 'string',
  app_metadata: 'object',
  user_metadata: 'object',
  role: 'string',
  aal: 'string',
  amr: 'array',
  session_id: 'string',
  client_id: 'string',
}

/** The claims the hook's answer must keep (upstream's schema's `required`). */
const REQUIRED_CLAIMS = [
  'aud',
  'exp',
  'iat',
  'sub',
  'email',
  'phone',
  'role',
  'aal',
  'session_id',
  'is_anonymous',
] as const

function typeOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

function fits(value: unknown, type: ClaimType): boolean {
  const actual = typeOf(value)
  if (type === 'string|array') return actual === 'string' || actual === 'array'
  return actual === type
}

/**
 * Reads the custom access token hook's output `{ "claims": { … } }` as upstream validates it.
 *
 * @returns The claims to sign.
 * @throws {@link InternalServerError} 500 `unexpected_failure`: "output claims field is missing",
 *   "Error unmarshaling JSON output." (claims not an object), or "output claims do not conform to
 *   the expected schema:" with one `- …` line per problem.
 */
export function customAccessTokenClaims(output: unknown): JWTPayload {
  if (!isObject(output) || !('claims' in output)) {
    throw new InternalServerError('unexpected_failure', 'output claims field is missing')
  }
  const claims = output.claims
  if (!isObject(claims)) {
    throw new InternalServerError('unexpected_failure', 'Error unmarshaling JSON output.')
  }
  const problems: string[] = []
  for (const name of REQUIRED_CLAIMS) {
    if (!(name in claims)) problems.push(`- (root): ${name} is required`)
  }
  for (const [name, type] of Object.entries(CLAIM_TYPES)) {
    if (!(name in claims)) continue
    const value = claims[name]
    if (!fits(value, type)) {
      problems.push(`- ${name}: Invalid type. Expected: ${type}, given: ${typeOf(value)}`)
    }
  }
  const amr = claims.amr
  if (Array.isArray(amr)) {
    amr.forEach((entry, index) => {
      if (typeof entry !== 'string' && !isObject(entry)) {
        problems.push(`- amr.${String(index)}: Must validate at least one schema (anyOf)`)
      }
    })
  }
  if (problems.length > 0) {
    throw new InternalServerError(
      'unexpected_failure',
      `output claims do not conform to the expected schema: \n${problems.join('\n')}\n`,
    )
  }
  return claims
}
