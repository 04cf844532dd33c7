/**
 * Writes `packages/auth/openapi.json`, the API's OpenAPI 3.1 document, as the server serves it at
 * `/openapi.json` (`API_OPENAPI_ENABLED=true`), on embedded PGlite in memory.
 *
 * Run: `npm run openapi -w packages/auth` (a test checks the file is current).
 */
import { writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { format, resolveConfig } from 'prettier'
import { createAuthApp, loadSettings } from '../src/index.js'

/** Where the checked-in document lives. */
export const OPENAPI_FILE = fileURLToPath(new URL('../openapi.json', import.meta.url))

/** The settings the document is generated with (none of them changes it). */
export const OPENAPI_ENV = {
  AUTHSVC_SITE_URL: 'http://localhost:3000',
  AUTHSVC_API_EXTERNAL_URL: 'http://localhost:9999',
  AUTHSVC_JWT_SECRET: 'an-openapi-generation-secret-of-32-characters',
  AUTHSVC_DB_DRIVER: 'postgres',
  DATABASE_URL: 'pglite://memory',
  AUTHSVC_API_OPENAPI_ENABLED: 'true',
} as const

/** The document the server serves, formatted as the checked-in file is. */
export async function generateOpenApiDocument(): Promise<string> {
  const app = await createAuthApp(loadSettings(OPENAPI_ENV))
  try {
    const response = await app.server.inject({ method: 'GET', url: '/openapi.json' })
    if (response.statusCode !== 200) {
      throw new Error(`GET /openapi.json answered ${String(response.statusCode)}`)
    }
    const options = await resolveConfig(OPENAPI_FILE)
    return await format(response.body, { ...options, parser: 'json', filepath: OPENAPI_FILE })
  } finally {
    await app.close()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await writeFile(OPENAPI_FILE, await generateOpenApiDocument())
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`)
}
