import { readFileSync } from 'node:fs'
import { createServer, type AddressInfo, type Server } from 'node:net'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import {
  FakeClock,
  createTestDatabase,
  createTestSchema,
  getFreePort,
  getFreePorts,
  ping,
  probeTcp,
  redisCli,
  redisKeyPrefix,
  startMemcached,
  startRedisCluster,
  startRedisServer,
  startServerOnFreePort,
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
    const servers = await Promise.all(ports.slice(0, 5).map(listenOn))
    await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
  })

  it('keeps a companion port free, below the ephemeral range, for every port it hands out', async () => {
    const ports = await getFreePorts(20, '127.0.0.1', { companionOffset: 10_000 })
    const low = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0],
    )
    for (const port of ports) expect(port + 10_000 < low, String(port)).toBe(true)
    const companions = await Promise.all(ports.map((port) => listenOn(port + 10_000)))
    await Promise.all(companions.map((s) => new Promise((resolve) => s.close(resolve))))
  })
})

/** Listens on `port` (0: any) and hangs up on whoever connects. */
function listenOn(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy())
    server.once('error', reject)
    server.listen({ host: '127.0.0.1', port }, () => {
      resolve(server)
    })
  })
}

describe('probeTcp', () => {
  it('resolves false when the server hangs up without a reply', async () => {
    const server = await listenOn(0)
    try {
      const { port } = server.address() as AddressInfo
      await expect(probeTcp('127.0.0.1', port, 'PING\r\n', () => true, 60_000)).resolves.toBe(false)
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('startServerOnFreePort', () => {
  // CI once lost a Redis Cluster to a port another test took between the pick and the bind: the
  // server exited at once and the helper waited 10 s for an answer that could not come.
  it('launches again on a new port when the first one was taken meanwhile', async () => {
    const squatter = await listenOn(0)
    const taken = (squatter.address() as AddressInfo).port
    const picked: number[] = []
    try {
      const started = await startServerOnFreePort({
        name: 'redis-server',
        command: 'redis-server',
        args: (port) => ['--bind', '127.0.0.1', '--port', String(port), '--save', ''],
        ready: (port) => ping('127.0.0.1', port),
        pickPort: async () => {
          const port = picked.length === 0 ? taken : await getFreePort()
          picked.push(port)
          return port
        },
      })
      try {
        expect(picked).toHaveLength(2)
        expect(started.port).toBe(picked[1])
        expect(await ping('127.0.0.1', started.port)).toBe(true)
      } finally {
        await started.process.stop()
      }
    } finally {
      await new Promise((resolve) => squatter.close(resolve))
    }
  })

  it('fails fast, quoting its output, when every launch exits before answering', async () => {
    const began = Date.now()
    let launches = 0
    await expect(
      startServerOnFreePort({
        name: 'redis-server',
        command: 'redis-server',
        args: () => {
          launches++
          return ['--no-such-option', 'x']
        },
        ready: () => Promise.resolve(false),
        attempts: 2,
      }),
    ).rejects.toThrow(
      /redis-server on port \d+ exited \(status 1\) before it answered \(output: .*no-such-option/s,
    )
    expect(launches).toBe(2)
    expect(Date.now() - began).toBeLessThan(5_000)
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
    // A function names it when the wait times out, with what it knows by then.
    let seen = 'nothing'
    const waiting = waitFor(() => false, { timeout: 30, interval: 5, what: () => `(saw ${seen})` })
    seen = 'something'
    await expect(waiting).rejects.toThrow('waiting for (saw something)')
  })
})
