/**
 * Request parsing: one body parser for every content type (JSON, or form fields for RFC 6749
 * clients) and the query-string parser.
 *
 * @module
 */
import { parse as parseQuery } from 'fast-querystring'
import type { FastifyInstance } from 'fastify'
import { BadRequestError } from '../../errors.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Whether the body was form-encoded (`application/x-www-form-urlencoded`), as a generic OAuth
     * 2.0 client sends token requests (RFC 6749 §4.3, §6). A JSON object sent with the form
     * content type (curl's default) is parsed as JSON and does not count.
     */
    formEncoded: boolean
  }
}

/** Upstream's body limit: 1 MiB. */
export const BODY_LIMIT = 1_048_576

const FORM = /^application\/x-www-form-urlencoded\b/i

/**
 * Parses a query string as upstream reads one (`r.URL.Query().Get`): a parameter given several
 * times has its first value.
 */
export function parseQueryString(query: string): Record<string, string> {
  const parsed = parseQuery(query) as Record<string, string | string[]>
  for (const name in parsed) {
    const value = parsed[name]
    if (Array.isArray(value)) parsed[name] = value[0] ?? ''
  }
  return parsed as Record<string, string>
}

/**
 * Registers the one body parser (upstream ignores the content type): form-encoded bodies become
 * an object of strings (and set `request.formEncoded`); every other body is parsed as JSON,
 * where `null` is an empty object (Go decodes it into a struct as nothing). An empty body leaves
 * `request.body` undefined, which a route's body schema refuses ("unexpected end of JSON input")
 * unless the body is optional. Invalid JSON is 400 `bad_json`.
 */
export function registerBodyParser(app: FastifyInstance): void {
  app.decorateRequest('formEncoded', false)
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(
    '*',
    { parseAs: 'string', bodyLimit: BODY_LIMIT },
    (request, raw, done) => {
      const text = typeof raw === 'string' ? raw : raw.toString('utf8')
      if (text.trim() === '') {
        done(null, undefined)
        return
      }
      if (FORM.test(request.headers['content-type'] ?? '') && !text.trimStart().startsWith('{')) {
        request.formEncoded = true
        done(null, Object.fromEntries(new URLSearchParams(text)))
        return
      }
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch (error) {
        const detail = error instanceof Error ? error.message : 'invalid JSON'
        done(
          new BadRequestError('bad_json', `Could not parse request body as JSON: ${detail}`, {
            cause: error,
          }),
          undefined,
        )
        return
      }
      done(null, body ?? {})
    },
  )
}
