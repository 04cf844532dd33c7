import type { FastifyRequest } from 'fastify'
import type { Settings } from '../conf/settings.js'
import type { RequestContext } from '../tokens/service.js'
import { requestAudience } from './middleware.js'

/**
 * The client IP of a request: the first `Svc-Forwarded-For` value when
 * `SECURITY_SVC_FORWARDED_FOR_ENABLED` (trusted proxies only), else the socket's address.
 */
export function clientIp(request: FastifyRequest, settings: Settings): string {
  if (settings.svcForwardedForEnabled) {
    const header = request.headers['svc-forwarded-for']
    const value = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim()
    if (value) return value
  }
  return request.ip
}

/** Audience, user agent and IP of a request, recorded on sessions and audit entries. */
export function requestContext(request: FastifyRequest, settings: Settings): RequestContext {
  return {
    aud: requestAudience(request, settings),
    userAgent: request.headers['user-agent'] ?? '',
    ip: clientIp(request, settings),
  }
}
