/**
 * What the services need to know about a request's client: its audience, IP and user agent.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import type { JWTPayload } from 'jose'
import type { Settings } from '../../conf/settings.js'
import type { RequestContext } from '../../context.js'
import { tokenAudience } from '../../services/shared/authentication.js'
import { ACCEPT_LANGUAGE_MAX_CHARS } from '../../locale.js'

/** The first value of a request header (Node joins most repeated headers; a few stay arrays). */
export function headerValue(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers[name]
  return Array.isArray(header) ? header[0] : header
}

/**
 * The client IP of a request: the first `Svc-Forwarded-For` value when
 * `SECURITY_SVC_FORWARDED_FOR_ENABLED` (trusted proxies only), else the socket's address.
 */
export function clientIp(request: FastifyRequest, settings: Settings): string {
  if (settings.svcForwardedForEnabled) {
    const value = headerValue(request, 'svc-forwarded-for')?.split(',')[0]?.trim()
    if (value) return value
  }
  return request.ip
}

/** Longest client key kept (an IPv6 address with a zone fits many times over). */
export const MAX_CLIENT_KEY_LENGTH = 256

/**
 * The value of a comma-separated forwarding list that the outermost of `hops` trusted proxies
 * appended: `hops` places from the right (each proxy appends the address it saw, and the
 * values left of the trusted ones are whatever the client sent); the leftmost when the list is
 * shorter (the request reached an inner proxy directly).
 */
function trustedHop(list: string, hops: number): string {
  const values = list.split(',')
  return values[Math.max(0, values.length - hops)]?.trim() ?? ''
}

/**
 * The client key of request rate limits (upstream `limitHandler`): from the `RATE_LIMIT_HEADER`
 * header, else (with `SECURITY_SVC_FORWARDED_FOR_ENABLED`) from `Svc-Forwarded-For`; `undefined`
 * (no per-client limit) when neither is configured or sent. Both headers must be set by a
 * trusted proxy. Of a list (`X-Forwarded-For: a, b`), the key is the value the outermost trusted
 * proxy appended, `RATE_LIMIT_TRUSTED_PROXY_HOPS` places from the right, never a value the
 * client chose (upstream takes the first, which the client writes). Keys are cut to
 * {@link MAX_CLIENT_KEY_LENGTH} characters, so that no header can make the limiter's state
 * (buckets, Redis keys) large.
 */
export function clientKey(request: FastifyRequest, settings: Settings): string | undefined {
  const hops = settings.rateLimit.trustedProxyHops
  const trusted = (name: string): string | undefined => {
    const value = headerValue(request, name)
    if (value === undefined) return undefined
    return trustedHop(value, hops).slice(0, MAX_CLIENT_KEY_LENGTH) || undefined
  }
  const header = settings.rateLimitHeader.toLowerCase()
  if (header !== '') return trusted(header)
  return settings.svcForwardedForEnabled ? trusted('svc-forwarded-for') : undefined
}

/**
 * The audience of a request: the `X-JWT-AUD` header, else the token's `aud` (when given), else
 * `JWT_AUD`.
 */
export function requestAudience(
  request: FastifyRequest,
  settings: Settings,
  claims?: JWTPayload,
): string {
  const fromHeader = headerValue(request, 'x-jwt-aud')
  if (fromHeader) return fromHeader
  const fromToken = claims ? tokenAudience(claims) : undefined
  return fromToken ?? settings.jwt.aud
}

/** Audience, user agent and IP of a request, recorded on sessions and audit entries. */
export function requestContext(request: FastifyRequest, settings: Settings): RequestContext {
  return {
    aud: requestAudience(request, settings),
    userAgent: request.headers['user-agent'] ?? '',
    ip: clientIp(request, settings),
    acceptLanguage: (request.headers['accept-language'] ?? '').slice(0, ACCEPT_LANGUAGE_MAX_CHARS),
  }
}
