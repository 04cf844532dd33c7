/**
 * Auth server benchmark (bench/auth/README.md): password sign-ins/s, refresh rotations/s and
 * GET /user req/s at concurrency 50 against real PostgreSQL, each next to its physical baseline
 * measured in the same run. Figure and baseline alternate in rounds, so that both see the same
 * background load on a shared machine; the ratio of each round is reported for the spread.
 *
 * `--observability` runs instead the cost of telemetry: the defaults against Prometheus metrics
 * plus tracing at 1%, two servers in the same run (`observability.ts`). `--peer better-auth` runs
 * instead our server next to better-auth (`peer.ts`), `--data-growth` the cost of 1,000,000 users
 * against 1,000 (`growth.ts`).
 */
import { randomUUID, webcrypto } from 'node:crypto'
import { rotateActiveRefreshToken } from '#internal/auth/models/refresh-token.js'
import type { Db } from '#internal/auth/storage/db.js'
import { openPostgres } from '#internal/auth/storage/pg.js'
import { createTestDatabase, getFreePort } from '@gatehouse/testing'
import bcrypt from 'bcrypt'
import { decodeJwt, jwtVerify, SignJWT } from 'jose'
import pg from 'pg'
import { databaseBackendsCpuProbe, processCpuMs, type CpuProbes } from '../lib/cpu.js'
import { memoryTable, rssKiB, startMemorySampler } from '../lib/memory.js'
import { machineInfo, markdownTable, type ResultRow } from '../lib/report.js'
import { requireTools } from '../lib/tools.js'
import { runDataGrowth } from './growth.js'
import { JsonClient, mapLimit, runLoad } from './load.js'
import { runObservability } from './observability.js'
import { runPeer } from './peer.js'
import { compareRounds, rate, spread } from './rounds.js'
import { seedRefreshChains } from './seed.js'
import {
  BENCH_JWT_SECRET,
  benchAuthEnv,
  buildPackages,
  reportServerErrors,
  serverNodeArgs,
  startAuth,
  stopChild,
} from './server.js'
import {
  randomRequestsScript,
  refreshChainScript,
  runWrk,
  sequentialRequestsScript,
} from './wrk.js'
import {
  CONCURRENCY,
  onlyFigures,
  PASSWORD,
  ROUNDS,
  SERVER_POOL,
  SLICE_MS,
  SLOW_WARMUP_MS,
  WARMUP_MS,
} from './settings.js'

/**
 * Which figures to measure: a comma-separated subset of `sign-in,refresh,user,user-new-token` (all
 * by default).
 */
const ONLY = onlyFigures('sign-in,refresh,refresh-statement,user,user-new-token')
/**
 * Distinct access tokens of the `user-new-token` figure, sent in turn: twice the server's memory
 * of verified tokens (10,000), so every request verifies its token's signature.
 */
const NEW_TOKENS = 20_000

interface Tokens {
  access_token: string
  refresh_token: string
  user: { id: string }
}

async function main(): Promise<void> {
  requireTools([{ command: 'wrk', debianPackage: 'wrk' }])
  buildPackages('auth')
  const database = await createTestDatabase('bench_auth')
  const port = await getFreePort()
  const host = `127.0.0.1:${String(port)}`
  // A production-sized pool (a few connections per PostgreSQL core): a rotation holds its
  // connection for one round trip, and more backends committing at once only add WALWriteLock
  // waits. The baseline keeps one connection per client, its best.
  const started = startAuth(benchAuthEnv(port, database.url, SERVER_POOL), serverNodeArgs())
  const server = started.child
  const http = new JsonClient('127.0.0.1', port, CONCURRENCY)
  // Idle connections close within 100 ms (under load none is idle that long), so that a slice
  // which opens connections of its own (the rotation statement's) stays within PostgreSQL's
  // max_connections beside this pool and the server's.
  const pool = new pg.Pool({
    connectionString: database.url,
    max: Number(process.env.BENCH_BASELINE_POOL ?? CONCURRENCY),
    idleTimeoutMillis: 100,
  })
  /**
   * Resolves once the baseline pool holds no connection (its idle ones closed); rejects after
   * 10 s (a connection still checked out).
   */
  const poolDrained = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pool.off('remove', check)
        reject(
          new Error(
            `the baseline pool still holds ${String(pool.totalCount)} connections after 10 s`,
          ),
        )
      }, 10_000)
      function check(): void {
        if (pool.totalCount > 0) return
        clearTimeout(timer)
        pool.off('remove', check)
        resolve()
      }
      pool.on('remove', check)
      check()
    })
  // CPU per operation of each process involved (the bench's children are wrk runs).
  const serverPid = server.pid ?? 0
  const cpu: CpuProbes = {
    bench: () => processCpuMs('self'),
    wrk: () => processCpuMs('self', 'children'),
    server: () => processCpuMs(serverPid),
    postgres: databaseBackendsCpuProbe(database.name),
  }
  try {
    await started.ready

    // Seed: one user per worker, signed up through the API.
    const users = await mapLimit(
      Array.from({ length: CONCURRENCY }, (_, i) => i),
      4,
      (i) =>
        http.send<Tokens>('POST', '/signup', {
          email: `bench${String(i)}@example.com`,
          password: PASSWORD,
        }),
    )
    const userIds = users.map((u) => u.user.id)
    // Resident memory of the server: idle now (started, 50 users), then its peak under load.
    const memory = startMemorySampler({ 'auth server': () => rssKiB(serverPid) })
    const hash = (
      await pool.query<{ encrypted_password: string }>(
        'SELECT encrypted_password FROM users LIMIT 1',
      )
    ).rows[0]!.encrypted_password

    // 1. Password sign-ins vs bcrypt verifications on all cores (libuv pool, as the server).
    const signIn = ONLY.has('sign-in')
      ? await compareRounds(
          'sign-in',
          () =>
            runLoad(
              CONCURRENCY,
              SLICE_MS,
              SLOW_WARMUP_MS,
              async () => {
                if (!(await bcrypt.compare(PASSWORD, hash))) throw new Error('bcrypt mismatch')
              },
              cpu,
            ),
          () =>
            runLoad(
              CONCURRENCY,
              SLICE_MS,
              SLOW_WARMUP_MS,
              async (w) => {
                await http.send<Tokens>('POST', '/token?grant_type=password', {
                  email: `bench${String(w)}@example.com`,
                  password: PASSWORD,
                })
              },
              cpu,
            ),
          { rounds: ROUNDS, sliceMs: SLICE_MS },
        )
      : undefined

    // 2. Refresh rotations vs the raw pg transaction (SELECT … FOR UPDATE + UPDATE + INSERT).
    // Every slice starts from fresh sessions, seeded with SQL (one token chain per connection).
    const seedChains = (): Promise<string[]> => seedRefreshChains(pool, userIds)
    if (ONLY.has('refresh')) {
      runWrk(
        host,
        CONCURRENCY,
        WARMUP_MS,
        refreshChainScript(host, '/token?grant_type=refresh_token', await seedChains()),
      )
    }
    let counter = 0
    /** The baseline's rotation of worker `w`'s chain: SELECT … FOR UPDATE, UPDATE, INSERT. */
    const rawRotation = async (chains: string[], w: number): Promise<void> => {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        const { rows } = await client.query<{ id: string; user_id: string; session_id: string }>(
          'SELECT id, user_id, session_id FROM refresh_tokens WHERE token = $1 FOR UPDATE',
          [chains[w]],
        )
        const row = rows[0]
        if (!row) throw new Error('raw token not found')
        await client.query(
          'UPDATE refresh_tokens SET revoked = true, updated_at = now() WHERE id = $1',
          [row.id],
        )
        const next = `r${String(counter++)}`.padStart(12, '0')
        await client.query(
          `INSERT INTO refresh_tokens (token, user_id, revoked, created_at, updated_at, parent, session_id)
           VALUES ($1, $2, false, now(), now(), $3, $4)`,
          [next, row.user_id, chains[w], row.session_id],
        )
        await client.query('COMMIT')
        chains[w] = next
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      } finally {
        client.release()
      }
    }
    /** One baseline slice: the raw transaction on fresh chains. */
    const rawRotationSlice = async () => {
      const chains = await seedChains()
      return runLoad(CONCURRENCY, SLICE_MS, WARMUP_MS, (w) => rawRotation(chains, w), cpu)
    }
    const refresh = ONLY.has('refresh')
      ? await compareRounds(
          'refresh',
          rawRotationSlice,
          async () => {
            // Warm up like the baseline slice does, on chains of its own.
            runWrk(
              host,
              CONCURRENCY,
              WARMUP_MS,
              refreshChainScript(host, '/token?grant_type=refresh_token', await seedChains()),
            )
            const result = runWrk(
              host,
              CONCURRENCY,
              SLICE_MS,
              refreshChainScript(host, '/token?grant_type=refresh_token', await seedChains()),
              cpu,
            )
            memory.sample() // wrk blocked the sampler's timer
            return result
          },
          { rounds: ROUNDS, sliceMs: SLICE_MS },
        )
      : undefined

    // 2b. The server's rotation statement alone, sent by this process through the server's own
    // storage code (a pool of one connection per client, as the baseline), against the same
    // baseline: what the statement costs, apart from the HTTP request and the token around it.
    // Its pool lives for its slice only, and opens once the baseline's has closed its
    // connections: both at once (with the server's) would pass max_connections (100).
    const refreshStatement = ONLY.has('refresh-statement')
      ? await compareRounds(
          'refresh statement',
          rawRotationSlice,
          async () => {
            const chains = await seedChains()
            await poolDrained()
            const db: Db = await openPostgres(database.url, '', CONCURRENCY)
            try {
              return await runLoad(
                CONCURRENCY,
                SLICE_MS,
                WARMUP_MS,
                async (w) => {
                  const child = `s${String(counter++)}`.padStart(12, '0')
                  const rotated = await rotateActiveRefreshToken(
                    db,
                    chains[w] ?? '',
                    {
                      child,
                      client: { userAgent: 'bench', ip: '127.0.0.1' },
                      ip: '127.0.0.1',
                      auditIds: [randomUUID(), randomUUID()],
                      audit: true,
                      oauthClientId: null,
                    },
                    Date.now(),
                  )
                  if (rotated === undefined) throw new Error('the statement rotated nothing')
                  chains[w] = child
                },
                cpu,
              )
            } finally {
              await db.close()
            }
          },
          { rounds: ROUNDS, sliceMs: SLICE_MS },
        )
      : undefined

    // 3. GET /user vs JWT verification plus one primary-key SELECT.
    const access = (
      await mapLimit(users, 4, (_, w) =>
        http.send<Tokens>('POST', '/token?grant_type=password', {
          email: `bench${String(w)}@example.com`,
          password: PASSWORD,
        }),
      )
    ).map((t) => t.access_token)
    const key = await webcrypto.subtle.importKey(
      'raw',
      new TextEncoder().encode(BENCH_JWT_SECRET),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['verify'],
    )
    // The baseline of both GET /user figures: what the server must do at the least.
    const verifyAndSelect = async (w: number): Promise<void> => {
      const { payload } = await jwtVerify(access[w]!, key, { algorithms: ['HS256'] })
      const { rows } = await pool.query('SELECT * FROM users WHERE id = $1', [payload.sub])
      if (rows.length !== 1) throw new Error('user not found')
    }
    const userScript = randomRequestsScript(
      host,
      access.map((token) => ({
        method: 'GET',
        path: '/user',
        headers: { Authorization: `Bearer ${token}` },
      })),
    )
    if (ONLY.has('user')) runWrk(host, CONCURRENCY, WARMUP_MS, userScript)
    const getUser = ONLY.has('user')
      ? await compareRounds(
          'GET /user',
          () => runLoad(CONCURRENCY, SLICE_MS, WARMUP_MS, verifyAndSelect, cpu),
          () => {
            runWrk(host, CONCURRENCY, WARMUP_MS, userScript)
            const result = runWrk(host, CONCURRENCY, SLICE_MS, userScript, cpu)
            memory.sample() // wrk blocked the sampler's timer
            return Promise.resolve(result)
          },
          { rounds: ROUNDS, sliceMs: SLICE_MS },
        )
      : undefined

    // 4. The same with a token the server has not verified before on every request (its memory of
    // verified tokens misses), against the same baseline.
    let newTokenScript = ''
    if (ONLY.has('user-new-token')) {
      const secret = new TextEncoder().encode(BENCH_JWT_SECRET)
      const claims = access.map((token) => decodeJwt(token))
      const tokens = await Promise.all(
        Array.from({ length: NEW_TOKENS }, (_, i) => {
          const base = claims[i % claims.length]!
          // Issued a second earlier per token: the same claims, a different token.
          return new SignJWT({ ...base, iat: (base.iat ?? 0) - Math.floor(i / claims.length) })
            .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
            .sign(secret)
        }),
      )
      newTokenScript = sequentialRequestsScript(
        host,
        tokens.map((token) => ({
          method: 'GET',
          path: '/user',
          headers: { Authorization: `Bearer ${token}` },
        })),
      )
      runWrk(host, CONCURRENCY, WARMUP_MS, newTokenScript)
    }
    const getUserNewToken = ONLY.has('user-new-token')
      ? await compareRounds(
          'GET /user, new token',
          () => runLoad(CONCURRENCY, SLICE_MS, WARMUP_MS, verifyAndSelect, cpu),
          () => {
            runWrk(host, CONCURRENCY, WARMUP_MS, newTokenScript)
            return Promise.resolve(runWrk(host, CONCURRENCY, SLICE_MS, newTokenScript, cpu))
          },
          { rounds: ROUNDS, sliceMs: SLICE_MS },
        )
      : undefined

    const c = String(CONCURRENCY)
    const rows: ResultRow[] = []
    if (signIn) {
      rows.push({
        figure: `password sign-ins/s, c=${c} (rounds ${spread(signIn)})`,
        value: rate(signIn.figure),
        baseline: 'bcrypt (cost 10) verifications/s, all cores',
        baselineValue: rate(signIn.baseline),
        unit: '/s',
      })
    }
    if (refresh) {
      rows.push({
        figure: `refresh rotations/s, c=${c} (rounds ${spread(refresh)})`,
        value: rate(refresh.figure),
        baseline: 'raw pg SELECT FOR UPDATE + UPDATE + INSERT transaction',
        baselineValue: rate(refresh.baseline),
        unit: '/s',
      })
    }
    if (refreshStatement) {
      rows.push({
        figure: `the rotation statement alone (rotateActiveRefreshToken from this process), c=${c} (rounds ${spread(refreshStatement)})`,
        value: rate(refreshStatement.figure),
        baseline: 'raw pg SELECT FOR UPDATE + UPDATE + INSERT transaction',
        baselineValue: rate(refreshStatement.baseline),
        unit: '/s',
      })
    }
    if (getUser) {
      rows.push({
        figure: `GET /user req/s, c=${c} (rounds ${spread(getUser)})`,
        value: rate(getUser.figure),
        baseline: 'jose HS256 verify + one PK SELECT (pg)',
        baselineValue: rate(getUser.baseline),
        unit: '/s',
      })
    }
    if (getUserNewToken) {
      rows.push({
        figure: `GET /user req/s, a new token each request, c=${c} (rounds ${spread(getUserNewToken)})`,
        value: rate(getUserNewToken.figure),
        baseline: 'jose HS256 verify + one PK SELECT (pg)',
        baselineValue: rate(getUserNewToken.baseline),
        unit: '/s',
      })
    }
    console.log(`\n${new Date().toISOString()} — ${machineInfo()}\n`)
    console.log(markdownTable(rows))
    console.log(`\n${memoryTable(memory.stop())}`)
  } finally {
    reportServerErrors(started)
    http.close()
    await pool.end()
    await stopChild(server)
    await database.drop()
  }
}

const peerAt = process.argv.indexOf('--peer')
if (peerAt >= 0) {
  const peer = process.argv[peerAt + 1]
  if (peer !== 'better-auth')
    throw new Error(`--peer: unknown peer ${String(peer)}; known: better-auth`)
  await runPeer()
} else if (process.argv.includes('--data-growth')) await runDataGrowth()
else if (process.argv.includes('--observability')) await runObservability()
else await main()
