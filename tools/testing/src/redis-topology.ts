import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { waitFor } from './net.js'
import { type ManagedProcess } from './process.js'
import { ping, startRedisServer, type TestRedisServer } from './redis.js'
import { startServerOnFreePort } from './server-process.js'

const run = promisify(execFile)

/**
 * Runs `redis-cli -h 127.0.0.1 -p <port> <args…>` and resolves with its standard output,
 * trimmed. `redis-cli` exits 0 even on a Redis error reply, so callers check the text.
 *
 * @throws {Error} When `redis-cli` is missing or cannot reach the server.
 */
export async function redisCli(port: number, ...args: readonly string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], {
    timeout: 10_000,
  })
  return stdout.trim()
}

/** A Redis Cluster of a test's own: masters only, on random loopback ports. */
export interface TestRedisCluster {
  /** The nodes, in the order they were created (each one a master). */
  readonly nodes: readonly TestRedisServer[]
  /** `127.0.0.1:p1,127.0.0.1:p2,…`: the `REDIS_URL` of `REDIS_TYPE=cluster`. */
  readonly url: string
  /** The slot of `key` (`CLUSTER KEYSLOT`). */
  keySlot(key: string): Promise<number>
  /** Index in {@link nodes} of the node that serves `slot` now. */
  ownerOf(slot: number): Promise<number>
  /**
   * Moves `slot`, with its keys, to node `to` the way `redis-cli --cluster reshard` does:
   * `SETSLOT IMPORTING`/`MIGRATING`, `MIGRATE` of every key (clients meanwhile get `ASK`), then
   * `SETSLOT NODE` on every node (clients get `MOVED`). Resolves once every node agrees.
   */
  moveSlot(slot: number, to: number): Promise<void>
  /** Stops every node (SIGTERM, by process) and removes their files. */
  stop(): Promise<void>
}

/** Options of {@link startRedisCluster}. */
export interface StartRedisClusterOptions {
  /** Master nodes (Redis needs at least 3). @default 3 */
  readonly nodes?: number
}

/**
 * Starts `nodes` `redis-server --cluster-enabled yes` on random loopback ports, joins them with
 * `redis-cli --cluster create … --cluster-yes` (no replicas) and resolves once every node
 * reports `cluster_state:ok` with all 16384 slots assigned (polling `CLUSTER INFO`).
 *
 * @throws {Error} When `redis-server` or `redis-cli` is missing or the cluster does not form
 *   within 20 s.
 */
export async function startRedisCluster(
  options: StartRedisClusterOptions = {},
): Promise<TestRedisCluster> {
  const count = options.nodes ?? 3
  const dir = mkdtempSync(join(tmpdir(), 'redis-cluster-'))
  const nodes: TestRedisServer[] = []
  const stop = async (): Promise<void> => {
    await Promise.all(nodes.map((node) => node.stop()))
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    for (let i = 0; i < count; i++) {
      nodes.push(
        await startRedisServer({
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            join(dir, `nodes-${String(i)}.conf`),
            '--cluster-node-timeout',
            '5000',
            '--dir',
            dir,
          ],
          // The cluster bus listens 10000 above the node's port.
          ports: { companionOffset: 10_000 },
        }),
      )
    }
    const { stdout } = await run(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((n) => n.hostPort), '--cluster-yes'],
      { timeout: 20_000 },
    )
    if (!stdout.includes('All 16384 slots covered')) {
      throw new Error(`redis-cli --cluster create did not cover every slot:\n${stdout}`)
    }
    await clusterSettled(nodes)
  } catch (error) {
    await stop()
    throw error
  }
  const ids = await Promise.all(nodes.map((n) => redisCli(n.port, 'CLUSTER', 'MYID')))
  const ownerOf = async (slot: number): Promise<number> => {
    // CLUSTER NODES: "<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slots>…"
    const lines = (await redisCli(nodes[0]?.port ?? 0, 'CLUSTER', 'NODES')).split('\n')
    for (const line of lines) {
      const [id = '', , , , , , , , ...ranges] = line.split(' ')
      for (const range of ranges) {
        if (range.startsWith('[')) continue // a slot being imported or migrated
        const [start = '', end = start] = range.split('-')
        if (slot >= Number(start) && slot <= Number(end)) {
          const index = ids.indexOf(id)
          // A node id this cluster did not start with (a view still settling): say so, rather
          // than answering -1 for every such slot.
          if (index < 0) throw new Error(`slot ${String(slot)} is served by unknown node ${id}`)
          return index
        }
      }
    }
    throw new Error(`no node serves slot ${String(slot)}`)
  }
  return {
    nodes,
    url: nodes.map((n) => n.hostPort).join(','),
    keySlot: async (key) => Number(await redisCli(nodes[0]?.port ?? 0, 'CLUSTER', 'KEYSLOT', key)),
    ownerOf,
    async moveSlot(slot, to) {
      const from = await ownerOf(slot)
      const source = nodes[from] as TestRedisServer
      const target = nodes[to] as TestRedisServer
      const slotText = String(slot)
      const expectOk = (reply: string, what: string): void => {
        if (reply !== 'OK') throw new Error(`${what}: ${reply}`)
      }
      expectOk(
        await redisCli(target.port, 'CLUSTER', 'SETSLOT', slotText, 'IMPORTING', ids[from] ?? ''),
        'SETSLOT IMPORTING',
      )
      expectOk(
        await redisCli(source.port, 'CLUSTER', 'SETSLOT', slotText, 'MIGRATING', ids[to] ?? ''),
        'SETSLOT MIGRATING',
      )
      for (;;) {
        const keys = (
          await redisCli(source.port, 'CLUSTER', 'GETKEYSINSLOT', slotText, '100')
        ).split('\n')
        if (keys.length === 0 || keys[0] === '') break
        const reply = await redisCli(
          source.port,
          'MIGRATE',
          target.host,
          String(target.port),
          '',
          '0',
          '5000',
          'KEYS',
          ...keys,
        )
        if (reply !== 'OK' && reply !== 'NOKEY') throw new Error(`MIGRATE: ${reply}`)
      }
      // The target first, then the source, then the others (redis-cli --cluster's order).
      for (const node of [target, source, ...nodes.filter((n) => n !== source && n !== target)]) {
        expectOk(
          await redisCli(node.port, 'CLUSTER', 'SETSLOT', slotText, 'NODE', ids[to] ?? ''),
          'SETSLOT NODE',
        )
      }
      await waitFor(async () => (await ownerOf(slot)) === to, {
        what: `slot ${slotText} to be served by node ${String(to)}`,
      })
    },
    stop,
  }
}

/** Polls `CLUSTER INFO` of every node until each reports the cluster ok and all slots assigned. */
async function clusterSettled(nodes: readonly TestRedisServer[]): Promise<void> {
  await waitFor(
    async () => {
      for (const node of nodes) {
        const info = await redisCli(node.port, 'CLUSTER', 'INFO')
        if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_ok:16384')) {
          return false
        }
        const known = /cluster_known_nodes:(\d+)/.exec(info)?.[1]
        if (Number(known) !== nodes.length) return false
      }
      return true
    },
    { what: 'the redis cluster to report cluster_state:ok on every node', timeout: 20_000 },
  )
}

/** A Sentinel deployment of a test's own: one master, one replica, three sentinels. */
export interface TestRedisSentinel {
  /** The monitored master's name (`mymaster`). */
  readonly masterName: string
  /** The data nodes: index 0 started as the master, 1 as its replica. */
  readonly servers: readonly TestRedisServer[]
  /** The sentinels' ports. */
  readonly sentinelPorts: readonly number[]
  /** `mymaster,127.0.0.1:s1,127.0.0.1:s2,127.0.0.1:s3`: the `REDIS_URL` of `REDIS_TYPE=sentinel`. */
  readonly url: string
  /** Index in {@link servers} of the current master, as the sentinels report it. */
  masterIndex(): Promise<number>
  /**
   * Forces a failover (`SENTINEL FAILOVER`) and resolves once the sentinels name the other
   * server as master and it reports `role:master`.
   */
  failover(): Promise<void>
  /** Stops the sentinels and the servers (SIGTERM, by process) and removes their files. */
  stop(): Promise<void>
}

/**
 * Starts a master and a replica (`redis-server`, random loopback ports) and three
 * `redis-server --sentinel` monitoring them (quorum 2), and resolves once the replica is in sync
 * and every sentinel knows the replica and the other sentinels.
 *
 * @throws {Error} When a program is missing or the deployment does not settle within 20 s.
 */
export async function startRedisSentinel(): Promise<TestRedisSentinel> {
  const masterName = 'mymaster'
  const dir = mkdtempSync(join(tmpdir(), 'redis-sentinel-'))
  const servers: TestRedisServer[] = []
  const sentinels: ManagedProcess[] = []
  const sentinelPorts: number[] = []
  const stop = async (): Promise<void> => {
    await Promise.all(sentinels.map((s) => s.stop()))
    await Promise.all(servers.map((s) => s.stop()))
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    // Their own directory: a replica's full sync writes an RDB file there.
    const master = await startRedisServer({ args: ['--dir', dir] })
    servers.push(master)
    servers.push(
      await startRedisServer({
        args: ['--dir', dir, '--replicaof', master.host, String(master.port)],
      }),
    )
    for (let i = 0; i < 3; i++) {
      const config = join(dir, `sentinel-${String(i)}.conf`)
      const { port, process: sentinel } = await startServerOnFreePort({
        name: 'redis sentinel',
        command: 'redis-server',
        args: (port) => {
          writeFileSync(
            config,
            [
              `port ${String(port)}`,
              'bind 127.0.0.1',
              `dir ${dir}`,
              `sentinel monitor ${masterName} ${master.host} ${String(master.port)} 2`,
              `sentinel down-after-milliseconds ${masterName} 2000`,
              `sentinel failover-timeout ${masterName} 10000`,
              '',
            ].join('\n'),
          )
          return [config, '--sentinel']
        },
        ready: (port) => ping('127.0.0.1', port),
      })
      sentinels.push(sentinel)
      sentinelPorts.push(port)
    }
    await waitFor(
      async () => {
        const replication = await redisCli(servers[1]?.port ?? 0, 'INFO', 'replication')
        if (!replication.includes('master_link_status:up')) return false
        for (const port of sentinelPorts) {
          const replicas = await redisCli(port, 'SENTINEL', 'REPLICAS', masterName)
          const others = await redisCli(port, 'SENTINEL', 'SENTINELS', masterName)
          if (!replicas.includes(String(servers[1]?.port))) return false
          if (others.split('\n').filter((line) => line === 'runid').length < 2) return false
        }
        return true
      },
      { what: 'the sentinels to know the replica and each other', timeout: 20_000 },
    )
  } catch (error) {
    await stop()
    throw error
  }
  const masterIndex = async (): Promise<number> => {
    const reply = await redisCli(
      sentinelPorts[0] ?? 0,
      'SENTINEL',
      'GET-MASTER-ADDR-BY-NAME',
      masterName,
    )
    const port = Number(reply.split('\n')[1])
    return servers.findIndex((s) => s.port === port)
  }
  return {
    masterName,
    servers,
    sentinelPorts,
    url: [masterName, ...sentinelPorts.map((p) => `127.0.0.1:${String(p)}`)].join(','),
    masterIndex,
    async failover() {
      const before = await masterIndex()
      const after = 1 - before
      const reply = await redisCli(sentinelPorts[0] ?? 0, 'SENTINEL', 'FAILOVER', masterName)
      if (reply !== 'OK') throw new Error(`SENTINEL FAILOVER: ${reply}`)
      await waitFor(
        async () =>
          (await masterIndex()) === after &&
          (await redisCli(servers[after]?.port ?? 0, 'ROLE')).startsWith('master'),
        { what: 'the sentinels to promote the replica', timeout: 20_000 },
      )
    },
    stop,
  }
}
