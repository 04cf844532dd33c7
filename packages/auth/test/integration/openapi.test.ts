/**
 * The OpenAPI document: generated from the registered routes, served at `/openapi.json` only with
 * `API_OPENAPI_ENABLED`, and checked in as `packages/auth/openapi.json`.
 */
import { readFile } from 'node:fs/promises'
import type { RouteOptions } from 'fastify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OPENAPI_ENV, OPENAPI_FILE } from '../../scripts/openapi.js'
import { ROUTE_DOCS } from '#internal/api/http/openapi.js'
import {
  buildAuthApp,
  createAuthApp,
  loadSettings,
  openDb,
  type AuthApp,
  type Db,
} from '@gatehouse/auth'

interface OpenApiDocument {
  openapi: string
  info: { title: string; version: string }
  paths: Record<string, Record<string, { summary?: string; security?: unknown[] }>>
  components: { schemas: Record<string, unknown> }
}

let db: Db
let app: AuthApp
let served: OpenApiDocument
let servedType: string | undefined
/** `METHOD /path` of every route the server registered (Fastify's own HEAD routes aside). */
const routes: string[] = []

beforeAll(async () => {
  // One embedded database for both servers of the file.
  db = await openDb('pglite://memory', '', 0)
  app = buildAuthApp(loadSettings(OPENAPI_ENV), { db })
  const registered: string[] = []
  app.server.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    registered.push(...methods.map((method) => `${method} ${route.url}`))
  })
  await app.start()
  // Fastify adds a HEAD route of its own to each GET route (exposeHeadRoutes).
  routes.push(
    ...registered.filter(
      (route) => !route.startsWith('HEAD ') || !registered.includes(`GET ${route.slice(5)}`),
    ),
  )
  const response = await app.server.inject({ method: 'GET', url: '/openapi.json' })
  expect(response.statusCode).toBe(200)
  servedType = String(response.headers['content-type'])
  served = response.json<OpenApiDocument>()
}, 60_000)

afterAll(async () => {
  await app.close()
  await db.close()
})

/** `GET /admin/users/:user_id` → the document's `get` of `/admin/users/{user_id}`. */
function operationOf(document: OpenApiDocument, route: string) {
  const [method = '', url = ''] = route.split(' ')
  const path = url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
  return document.paths[path]?.[method.toLowerCase()]
}

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 JSON with the package version', async () => {
    expect(servedType).toMatch(/^application\/json/)
    expect(served.openapi).toBe('3.1.0')
    const manifest = JSON.parse(
      await readFile(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as { version: string }
    expect(served.info).toMatchObject({ title: 'Gatehouse Auth API', version: manifest.version })
  })

  it('describes every registered route, with a summary', () => {
    expect(routes.length).toBeGreaterThan(30)
    const missing = routes.filter((route) => operationOf(served, route) === undefined)
    expect(missing).toEqual([])
    const unsummarised = routes.filter((route) => operationOf(served, route)?.summary === undefined)
    expect(unsummarised).toEqual([])
  })

  it('documents no route the server does not have', () => {
    expect(Object.keys(ROUTE_DOCS).filter((route) => !routes.includes(route))).toEqual([])
    const operations = Object.values(served.paths).flatMap((item) => Object.keys(item))
    expect(operations).toHaveLength(routes.length)
  })

  it('asks for a bearer token exactly where the routes do', () => {
    const bearer = routes.filter((route) => {
      const security = operationOf(served, route)?.security ?? []
      return security.length > 0
    })
    expect(bearer.sort()).toEqual(
      Object.entries(ROUTE_DOCS)
        .filter(([, doc]) => doc.access !== 'public')
        .map(([route]) => route)
        .sort(),
    )
    expect(bearer).toContain('GET /user')
    expect(bearer).toContain('GET /admin/users')
    expect(bearer).not.toContain('POST /token')
  })

  it('resolves every $ref to a schema of its own', () => {
    const refs = [...JSON.stringify(served).matchAll(/"\$ref":"([^"]+)"/g)].map(([, ref]) => ref)
    expect(refs.length).toBeGreaterThan(0)
    const dangling = refs.filter((ref) => {
      const name = /^#\/components\/schemas\/(.+)$/.exec(ref ?? '')?.[1]
      return name === undefined || !(name in served.components.schemas)
    })
    expect(dangling).toEqual([])
  })

  it('is checked in as packages/auth/openapi.json (npm run openapi -w packages/auth)', async () => {
    const checkedIn = JSON.parse(await readFile(OPENAPI_FILE, 'utf8')) as unknown
    expect(checkedIn).toEqual(served)
  })

  it('is not served without API_OPENAPI_ENABLED (the default)', async () => {
    const { AUTHSVC_API_OPENAPI_ENABLED: _on, ...env } = OPENAPI_ENV
    const plain = await createAuthApp(loadSettings(env), { db })
    try {
      expect(plain.settings.apiOpenapiEnabled).toBe(false)
      const response = await plain.server.inject({ method: 'GET', url: '/openapi.json' })
      expect(response.statusCode).toBe(404)
      // The API itself is the same.
      expect((await plain.server.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200)
    } finally {
      await plain.close()
    }
  })
})
