import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import {
  FakeClock,
  createTestDatabase,
  createTestSchema,
  getFreePorts,
  ping,
  redisCli,
  redisKeyPrefix,
  startMemcached,
  startRedisCluster,
  startRedisServer,
  waitFor,
} from '@gatehouse/testing'

async function query(url: string, sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await client.query(sql)
  } finally {
    await client.end()
  }
}

describe('getFreePorts', () => {
  it('hands out distinct ports that are free once it resolves', async () => {
    const ports = await getFreePorts(40)
    expect(new Set(ports).size).toBe(40)
    // Below the kernel's ephemeral range, where outgoing connections take their ports.
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0],
    )
    for (const port of ports) expect(port >= 10_000 && port < low, String(port)).toBe(true)
    // Each can be bound again right away (none was left listening).
    const servers = await Promise.all(
      ports.slice(0, 5).map(
        (port) =>
          new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
            const server = createServer()
            server.once('error', reject)
            server.listen({ host: '127.0.0.1', port }, () => {
              resolve(server)
            })
          }),
      ),
    )
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
  })
})

describe('createTestDatabase', () => {
  it('creates an empty database that drop() removes', async () => {
    const db = await createTestDatabase('helpers')
    const { rows } = await query(db.url, 'SELECT current_database() AS name')
    expect(rows[0]).toEqual({ name: db.name })
    await db.drop()
    await expect(query(db.url, 'SELECT 1')).rejects.toThrow(/does not exist/)
  })
})

describe('createTestSchema', () => {
  it('gives connections a search_path of the new schema', async () => {
    const schema = await createTestSchema('helpers')
    afterAll(() => schema.drop())
    await query(schema.url, 'CREATE TABLE t (id int)')
    const { rows } = await query(
      schema.url,
      "SELECT table_schema FROM information_schema.tables WHERE table_name = 't'",
    )
    expect(rows).toContainEqual({ table_schema: schema.name })
  })
})

describe('startRedisServer', () => {
  it('starts, survives a kill and restart on the same port, and stops', async () => {
    const redis = await startRedisServer()
    expect(await ping(redis.host, redis.port)).toBe(true)
    await redis.kill()
    expect(await ping(redis.host, redis.port)).toBe(false)
    await redis.restart()
    expect(await ping(redis.host, redis.port)).toBe(true)
    await redis.stop()
    expect(await ping(redis.host, redis.port)).toBe(false)
  })

  it('hands out distinct key prefixes', () => {
    const a = redisKeyPrefix('x')
    expect(a).toMatch(/^test:x:[0-9a-f-]{36}:$/)
    expect(redisKeyPrefix('x')).not.toBe(a)
  })
})

describe('startRedisCluster', () => {
  it('forms a three-node cluster that serves every slot, moves a slot, and stops every node', async () => {
    const cluster = await startRedisCluster()
    try {
      expect(cluster.url.split(',')).toHaveLength(3)
      const slot = await cluster.keySlot('helpers')
      expect(await redisCli(cluster.nodes[0]?.port ?? 0, 'CLUSTER', 'INFO')).toContain(
        'cluster_state:ok',
      )
      const to = ((await cluster.ownerOf(slot)) + 1) % 3
      await cluster.moveSlot(slot, to)
      expect(await cluster.ownerOf(slot)).toBe(to)
    } finally {
      await cluster.stop()
    }
    for (const node of cluster.nodes) expect(await ping(node.host, node.port)).toBe(false)
  })
})

describe('startMemcached', () => {
  it('starts a memcached that answers', async () => {
    const memcached = await startMemcached()
    expect(memcached.hostPort).toMatch(/^127\.0\.0\.1:\d+$/)
    await memcached.stop()
  })
})

describe('FakeClock', () => {
  it('moves only when told to and refuses to go backwards by advance()', () => {
    const clock = new FakeClock(1_000)
    expect(clock.now()).toBe(1_000)
    clock.advance(2_500)
    expect(clock.now()).toBe(3_500)
    expect(clock.nowSeconds()).toBe(3)
    expect(() => {
      clock.advance(-1)
    }).toThrow(RangeError)
  })
})

describe('waitFor', () => {
  it('resolves with the first truthy value and times out with the reason', async () => {
    let n = 0
    await expect(waitFor(() => (++n >= 3 ? n : false), { interval: 1 })).resolves.toBe(3)
    await expect(
      waitFor(
        () => {
          throw new Error('nope')
        },
        { timeout: 30, interval: 5, what: 'a miracle' },
      ),
    ).rejects.toThrow('waiting for a miracle: nope')
  })
})
