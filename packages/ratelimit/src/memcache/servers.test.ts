import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { lookupSrvServers, pickServer, SrvServerList, type SrvResolver } from './servers.js'

const silent = pino({ level: 'silent' })

describe('pickServer (gomemcache ServerList.PickServer)', () => {
  it('uses the only server, else crc32(key) % count', () => {
    expect(pickServer(['a:1'], 'anything')).toBe('a:1')
    // crc32("foo") = 0x8c736521 = 2356372769 (Go: crc32.ChecksumIEEE); 2356372769 % 3 = 2.
    expect(pickServer(['a:1', 'b:2', 'c:3'], 'foo')).toBe('c:3')
    // Keys spread over every server.
    const servers = ['a:1', 'b:2', 'c:3', 'd:4']
    const picks = new Set(
      Array.from({ length: 64 }, (_, i) => pickServer(servers, `k${String(i)}`)),
    )
    expect(picks.size).toBe(4)
  })
})

/** A resolver answering from a table the test changes. */
function tableResolver(table: Map<string, { name: string; port: number }[]>): SrvResolver {
  return {
    resolveSrv: (name) => {
      const records = table.get(name)
      if (records === undefined) return Promise.reject(new Error(`queryNotFound ESERVFAIL ${name}`))
      return Promise.resolve(records.map((r) => ({ ...r, priority: 1, weight: 1 })))
    },
  }
}

describe('lookupSrvServers', () => {
  it('answers host:port per target, trailing dots dropped, sorted', async () => {
    const resolver = tableResolver(
      new Map([
        [
          '_mc._tcp.example',
          [
            { name: 'mc-2.example.', port: 11211 },
            { name: 'mc-1.example.', port: 11212 },
          ],
        ],
      ]),
    )
    expect(await lookupSrvServers(resolver, '_mc._tcp.example')).toEqual([
      'mc-1.example:11212',
      'mc-2.example:11211',
    ])
  })

  it("fails with upstream's message when the lookup fails or has no target", async () => {
    const resolver = tableResolver(new Map([['_empty._tcp.example', []]]))
    await expect(lookupSrvServers(resolver, '_mc._tcp.example')).rejects.toThrow(
      'Unable to fetch servers from SRV _mc._tcp.example: queryNotFound ESERVFAIL _mc._tcp.example',
    )
    await expect(lookupSrvServers(resolver, '_empty._tcp.example')).rejects.toThrow(
      'Unable to fetch servers from SRV _empty._tcp.example: no targets',
    )
  })
})

describe('SrvServerList', () => {
  it('reports each new list, refreshes on its timer, and keeps the list when a refresh fails', async () => {
    const table = new Map([['_mc._tcp.x', [{ name: 'a', port: 1 }]]])
    const lists: string[][] = []
    let task: (() => void) | undefined
    let stopped = false
    const list = new SrvServerList({
      name: '_mc._tcp.x',
      refreshMs: 5000,
      resolver: tableResolver(table),
      every: (ms, run) => {
        expect(ms).toBe(5000)
        task = run
        return () => {
          stopped = true
        }
      },
      logger: silent,
      onChange: (servers) => lists.push([...servers]),
    })
    await list.start()
    expect(lists).toEqual([['a:1']])
    task?.()
    await list.refresh()
    expect(lists).toEqual([['a:1']]) // unchanged: not reported again
    table.delete('_mc._tcp.x')
    await list.refresh()
    expect(lists).toEqual([['a:1']])
    table.set('_mc._tcp.x', [
      { name: 'b', port: 2 },
      { name: 'a', port: 1 },
    ])
    await list.refresh()
    expect(lists).toEqual([['a:1'], ['a:1', 'b:2']])
    list.stop()
    expect(stopped).toBe(true)
  })

  it('sets no timer when MEMCACHE_SRV_REFRESH is 0', async () => {
    let timers = 0
    const list = new SrvServerList({
      name: '_mc._tcp.x',
      refreshMs: 0,
      resolver: tableResolver(new Map([['_mc._tcp.x', [{ name: 'a', port: 1 }]]])),
      every: () => {
        timers++
        return () => undefined
      },
      logger: silent,
      onChange: () => undefined,
    })
    await list.start()
    expect(timers).toBe(0)
  })
})
