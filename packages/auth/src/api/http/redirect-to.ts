/**
 * The `redirect_to` of a request, read from where upstream reads it and checked against
 * `SITE_URL` and `URI_ALLOW_LIST`.
 *
 * @module
 */
import type { FastifyRequest } from 'fastify'
import type { Settings } from '../../conf/settings.js'
import { pickRedirectTo } from '../../services/shared/redirect.js'
import { headerValue } from './request-context.js'

/** `record[key]` when `record` is an object and the value a string, else `''`. */
function stringField(record: unknown, key: string): string {
  if (typeof record !== 'object' || record === null) return ''
  const value = (record as Record<string, unknown>)[key]
  return typeof value === 'string' ? value : ''
}

/**
 * Where to send the user after the request's flow (upstream `GetReferrer`): the `redirect_to`
 * header, else `redirect_to` in the body, else in the query string; when that is not allowed,
 * the `Referer` header; when neither is allowed, `SITE_URL`. See `pickRedirectTo` and
 * `isRedirectUrlValid` in `services/shared/redirect.ts` for the rules.
 *
 * @param request Any route's request (its body may be absent or not an object).
 * @param settings `SITE_URL` and `URI_ALLOW_LIST`.
 * @returns An allowed absolute URL, or `SITE_URL`.
 */
export function requestRedirectTo(request: FastifyRequest, settings: Settings): string {
  return pickRedirectTo(settings, {
    header: headerValue(request, 'redirect_to') ?? '',
    body: stringField(request.body, 'redirect_to'),
    query: stringField(request.query, 'redirect_to'),
    referer: headerValue(request, 'referer') ?? '',
  })
}
