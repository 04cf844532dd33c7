import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPostgresServer, type TestPostgresServer } from '@gatehouse/testing'

/** `SELECT 1` on a connection of its own, or the error it failed with. */
async function selectOne(url: string, timeoutMs = 2000): Promise<number | Error> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  })
  client.on('error', () => undefined)
  try {
    await client.connect()
    const { rows } = await client.query<{ one: number }>('SELECT 1 AS one')
    return rows[0]?.one ?? 0
  } catch (error) {
    return error as Error
  } finally {
    void client.end().catch(() => undefined)
  }
}

describe('startPostgresServer', () => {
  let server: TestPostgresServer

  beforeAll(async () => {
    server = await startPostgresServer()
  })
  afterAll(async () => {
    await server.destroy()
  })

  it('serves on its own port, not the shared 5432', async () => {
    expect(server.port).not.toBe(5432)
    expect(server.url).toBe(`postgres://postgres@127.0.0.1:${String(server.port)}/postgres`)
    expect(await selectOne(server.url)).toBe(1)
  })

  it('freezes and thaws: an open connection waits, then answers', async () => {
    const client = new pg.Client({ connectionString: server.url })
    await client.connect()
    try {
      await server.freeze()
      let answered = false
      const pending = client.query('SELECT 2 AS two').then((result) => {
        answered = true
        return result.rows[0] as { two: number }
      })
      // A frozen server answers nothing: a fresh connection's query times out.
      expect(await selectOne(server.url, 300)).toBeInstanceOf(Error)
      expect(answered).toBe(false)
      await server.thaw()
      expect(await pending).toEqual({ two: 2 })
    } finally {
      await client.end()
    }
  })

  it('stops immediately (connections refused) and starts again on the same port', async () => {
    const pid = server.pid
    expect(pid).toBeTypeOf('number')
    await server.stop('immediate')
    expect(server.pid).toBeUndefined()
    const refused = await selectOne(server.url)
    expect(refused).toBeInstanceOf(Error)
    expect((refused as NodeJS.ErrnoException).code).toBe('ECONNREFUSED')
    await server.start()
    expect(server.pid).not.toBe(pid)
    expect(await selectOne(server.url)).toBe(1)
  })
})
