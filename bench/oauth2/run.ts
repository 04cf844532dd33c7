/**
 * oauth2 benchmark: client-credentials token requests/s and resource GETs/s through `AccessToken`,
 * at concurrency 1 and 100, against a local node:http server in another process; side by side in
 * the same run with raw `undici.request` (the baseline), raw `fetch`, openid-client and
 * simple-oauth2. The `dpop` suite measures resource GETs/s through `accessToken.fetch()` with
 * DPoP next to plain bearer `fetch()` (its baseline) and openid-client's DPoP. The `store` suite
 * measures `fetch()` of a token bound to a RedisTokenStore next to one bound to a
 * MemoryTokenStore (its baseline), when no refresh is due.
 *
 * Usage: node --conditions=dev-source --import tsx bench/oauth2/run.ts [--seconds 3] [--rounds 1]
 *   [--suites token,resource,dpop,store]
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import * as openid from 'openid-client'
import { ClientCredentials } from 'simple-oauth2'
import { generateKeyPair } from 'jose'
import { request } from 'undici'
import { Redis } from 'ioredis'
import { AccessToken, Client, MemoryTokenStore, RedisTokenStore } from '@gatehouse/oauth2'
import { machineInfo, markdownTable, type ResultRow } from '../lib/report.js'

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '1' },
    suites: { type: 'string', default: 'token,resource,dpop,store' },
  },
})
const SECONDS = Number(values.seconds)
const ROUNDS = Number(values.rounds)
const SUITES = new Set(values.suites.split(','))
const CONCURRENCY = [1, 100]
const SLICE = 0.5
const BASIC = `Basic ${Buffer.from('bench-client:bench-secret').toString('base64')}`
const FORM = 'grant_type=client_credentials&scope=api'

async function startServer(): Promise<{ url: string; stop(): void }> {
  const path = fileURLToPath(new URL('./server.ts', import.meta.url))
  const child = spawn(process.execPath, ['--import', 'tsx', path], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      const match = /listening (\d+)/.exec(chunk.toString())
      if (match?.[1] !== undefined) resolve(match[1])
    })
    child.once('exit', (code) => {
      reject(new Error(`server exited with ${String(code)}`))
    })
  })
  return { url: `http://127.0.0.1:${port}`, stop: () => child.kill('SIGTERM') }
}

/** Runs `op` from `concurrency` loops for `seconds`; returns [operations, elapsed ms]. */
async function run(
  op: () => Promise<unknown>,
  concurrency: number,
  seconds: number,
): Promise<[number, number]> {
  let count = 0
  const start = performance.now()
  const until = start + seconds * 1000
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        await op()
        count++
      }
    }),
  )
  return [count, performance.now() - start]
}

/**
 * Measures every contender for `seconds` in total, interleaved in slices of `SLICE` seconds so a
 * burst of load from the neighbours hits all of them alike; returns operations per second each.
 */
async function measureAll(
  ops: Record<string, () => Promise<unknown>>,
  concurrency: number,
  seconds: number,
): Promise<Record<string, number>> {
  const names = Object.keys(ops)
  for (const name of names) await run(ops[name]!, concurrency, 0.3) // warm-up
  const totals = Object.fromEntries(names.map((n) => [n, [0, 0]])) as Record<
    string,
    [number, number]
  >
  const slices = Math.max(1, Math.round(seconds / SLICE))
  for (let i = 0; i < slices; i++) {
    for (const name of i % 2 === 0 ? names : [...names].reverse()) {
      const [count, ms] = await run(ops[name]!, concurrency, SLICE)
      totals[name]![0] += count
      totals[name]![1] += ms
    }
  }
  return Object.fromEntries(names.map((n) => [n, (totals[n]![0] / totals[n]![1]) * 1000]))
}

function check(condition: boolean, what: string): void {
  if (!condition) throw new Error(`benchmark sanity check failed: ${what}`)
}

const server = await startServer()
const { url } = server
try {
  // --- contenders -----------------------------------------------------------------------------
  const client = new Client('bench-client', 'bench-secret', { site: url })
  const token = await client.clientCredentials.getToken({ scope: 'api' })
  check(token.token === 'bench-access-token', 'oauth2 token')

  const openidConfig = new openid.Configuration(
    { issuer: url, token_endpoint: `${url}/oauth/token` },
    'bench-client',
    undefined,
    openid.ClientSecretBasic('bench-secret'),
  )
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- plain HTTP on loopback, benchmark only
  openid.allowInsecureRequests(openidConfig)
  const simple = new ClientCredentials({
    client: { id: 'bench-client', secret: 'bench-secret' },
    auth: { tokenHost: url, tokenPath: '/oauth/token' },
  })
  const resourceUrl = new URL(`${url}/resource`)
  const resourceHref = resourceUrl.href

  const tokenOps: Record<string, () => Promise<unknown>> = {
    'raw undici.request': async () => {
      const res = await request(`${url}/oauth/token`, {
        method: 'POST',
        headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
        body: FORM,
      })
      const body = (await res.body.json()) as { access_token: string }
      check(body.access_token === 'bench-access-token', 'undici token')
    },
    'raw fetch': async () => {
      const res = await fetch(`${url}/oauth/token`, {
        method: 'POST',
        headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
        body: FORM,
      })
      const body = (await res.json()) as { access_token: string }
      check(body.access_token === 'bench-access-token', 'fetch token')
    },
    '@gatehouse/oauth2': async () => {
      const t = await client.clientCredentials.getToken({ scope: 'api' })
      check(t.token === 'bench-access-token', 'oauth2 token')
    },
    'openid-client': async () => {
      const t = await openid.clientCredentialsGrant(openidConfig, { scope: 'api' })
      check(t.access_token === 'bench-access-token', 'openid-client token')
    },
    'simple-oauth2': async () => {
      const t = await simple.getToken({ scope: 'api' })
      check(t.token.access_token === 'bench-access-token', 'simple-oauth2 token')
    },
  }
  const resourceOps: Record<string, () => Promise<unknown>> = {
    'raw undici.request': async () => {
      const res = await request(resourceHref, {
        headers: { authorization: 'Bearer bench-access-token' },
      })
      check(
        res.statusCode === 200 && ((await res.body.json()) as { id: number }).id === 42,
        'undici resource',
      )
    },
    'raw fetch': async () => {
      const res = await fetch(resourceHref, {
        headers: { authorization: 'Bearer bench-access-token' },
      })
      check(
        res.status === 200 && ((await res.json()) as { id: number }).id === 42,
        'fetch resource',
      )
    },
    '@gatehouse/oauth2': async () => {
      const res = await token.get('/resource')
      check((res.parsed as { id?: number }).id === 42, 'oauth2 resource')
    },
    'openid-client': async () => {
      const res = await openid.fetchProtectedResource(
        openidConfig,
        'bench-access-token',
        resourceUrl,
        'GET',
      )
      check(
        res.status === 200 && ((await res.json()) as { id: number }).id === 42,
        'openid-client resource',
      )
    },
    // simple-oauth2 has no resource-request API (its AccessToken only refreshes and revokes).
  }

  // DPoP (RFC 9449): one ES256 key pair for both libraries; the server checks every proof.
  const keyPair = await generateKeyPair('ES256')
  const dpopClient = new Client('bench-client', 'bench-secret', { site: url, dpop: { keyPair } })
  const dpopToken = new AccessToken(dpopClient, 'bench-dpop-token', { token_type: 'DPoP' })
  const dpopHandle = openid.getDPoPHandle(openidConfig, keyPair)
  const dpopUrl = new URL(`${url}/dpop-resource`)
  const dpopOps: Record<string, () => Promise<unknown>> = {
    '@gatehouse/oauth2 bearer, fetch()': async () => {
      const res = await token.fetch('/resource')
      check((res.parsed as { id?: number }).id === 42, 'oauth2 bearer fetch')
    },
    '@gatehouse/oauth2 DPoP, fetch()': async () => {
      const res = await dpopToken.fetch('/dpop-resource')
      check((res.parsed as { id?: number }).id === 42, 'oauth2 DPoP fetch')
    },
    'openid-client DPoP': async () => {
      const res = await openid.fetchProtectedResource(
        openidConfig,
        'bench-dpop-token',
        dpopUrl,
        'GET',
        undefined,
        undefined,
        { DPoP: dpopHandle },
      )
      check(
        res.status === 200 && ((await res.json()) as { id: number }).id === 42,
        'openid-client DPoP',
      )
    },
  }
  // Refresh once across processes (issue 33): token.fetch() of a token bound to a store, no
  // refresh due, MemoryTokenStore (the baseline) against RedisTokenStore on the shared Redis.
  const redis = new Redis(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379')
  const keyPrefix = `bench:oauth2:${crypto.randomUUID()}:`
  const storedToken = {
    access_token: 'bench-access-token',
    refresh_token: 'bench-refresh-token',
    token_type: 'Bearer',
    expires_at: Math.floor(Date.now() / 1000) + 3600,
  }
  const memoryStore = new MemoryTokenStore()
  const redisStore = new RedisTokenStore(redis, { keyPrefix })
  await memoryStore.set('user-1', storedToken)
  await redisStore.set('user-1', storedToken)
  const memoryToken = await AccessToken.fromStore(client, { store: memoryStore, key: 'user-1' })
  const redisToken = await AccessToken.fromStore(client, { store: redisStore, key: 'user-1' })
  const storeOps: Record<string, () => Promise<unknown>> = {
    'fetch(), MemoryTokenStore': async () => {
      const res = await memoryToken.fetch('/resource')
      check((res.parsed as { id?: number }).id === 42, 'memory store fetch')
    },
    'fetch(), RedisTokenStore': async () => {
      const res = await redisToken.fetch('/resource')
      check((res.parsed as { id?: number }).id === 42, 'redis store fetch')
    },
  }
  const suites = [
    { kind: 'token requests/s', ops: tokenOps, baseline: 'raw undici.request', key: 'token' },
    { kind: 'resource GETs/s', ops: resourceOps, baseline: 'raw undici.request', key: 'resource' },
    {
      kind: 'DPoP resource GETs/s',
      ops: dpopOps,
      baseline: '@gatehouse/oauth2 bearer, fetch()',
      key: 'dpop',
    },
    {
      kind: 'stored-token resource GETs/s',
      ops: storeOps,
      baseline: 'fetch(), MemoryTokenStore',
      key: 'store',
    },
  ].filter((suite) => SUITES.has(suite.key))

  const results: Record<string, number[]> = {}
  for (let round = 0; round < ROUNDS; round++) {
    for (const { kind, ops } of suites) {
      for (const c of CONCURRENCY) {
        const rates = await measureAll(ops, c, SECONDS)
        for (const [name, rate] of Object.entries(rates)) {
          ;(results[`${kind}|${String(c)}|${name}`] ??= []).push(rate)
        }
        console.error(
          `round ${String(round + 1)}: ${kind}, c=${String(c)}: ${Object.entries(rates)
            .map(([n, r]) => `${n} ${String(Math.round(r))}`)
            .join(', ')}`,
        )
      }
    }
  }

  const median = (xs: number[]) =>
    [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN
  const rows: ResultRow[] = []
  for (const { kind, ops, baseline: baselineName } of suites) {
    for (const c of CONCURRENCY) {
      const baselineSamples = results[`${kind}|${String(c)}|${baselineName}`] ?? []
      const baseline = median(baselineSamples)
      for (const name of Object.keys(ops)) {
        const samples = results[`${kind}|${String(c)}|${name}`]
        if (samples === undefined || name === baselineName) continue
        rows.push({
          figure: `${kind.replace('/s', '')}, c=${String(c)}: ${name}${ROUNDS > 1 ? ` (rounds: ${samples.map((v) => Math.round(v)).join(' / ')}; baseline ${baselineSamples.map((v) => Math.round(v)).join(' / ')})` : ''}`,
          value: median(samples),
          baseline: baselineName,
          baselineValue: baseline,
          unit: 'req/s',
        })
      }
    }
  }
  console.log(
    `${new Date().toISOString().slice(0, 10)} · ${machineInfo()} · ${String(SECONDS)} s per measurement, ${String(ROUNDS)} round(s)\n`,
  )
  console.log(markdownTable(rows))
  await client.close()
  await dpopClient.close()
  const keys = await redis.keys(`${keyPrefix}*`)
  if (keys.length > 0) await redis.del(...keys)
  await redis.quit()
} finally {
  server.stop()
}
