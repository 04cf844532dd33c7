/**
 * `run.ts --data-growth` (bench/auth/README.md, "Cost as data grows"): `GET /user`, password
 * sign-ins and refresh rotations of two auth servers, one on a database of 1,000 users and one on
 * a database of `BENCH_GROWTH_USERS` (1,000,000) users, each user with 5 sessions and a live
 * refresh token per session, seeded with SQL (`seed.ts`). Slices alternate (small, large, …); the
 * ratio is large / small (target: within 15 %).
 */
import { createTestDatabase, getFreePort } from '@gatehouse/testing'
import bcrypt from 'bcrypt'
import pg from 'pg'
import { databaseBackendsCpuProbe, processCpuMs, type CpuProbes } from '../lib/cpu.js'
import { memoryTable, rssKiB, startMemorySampler } from '../lib/memory.js'
import { machineInfo, markdownTable, type ResultRow } from '../lib/report.js'
import { requireTools } from '../lib/tools.js'
import { JsonClient, mapLimit, runLoad } from './load.js'
import { compareRounds, rate, spread } from './rounds.js'
import { seedPopulation, seedRefreshChains, seededEmail } from './seed.js'
import {
  benchAuthEnv,
  buildPackages,
  reportServerErrors,
  serverNodeArgs,
  startAuth,
  stopChild,
} from './server.js'
import { randomRequestsScript, refreshChainScript, runWrk } from './wrk.js'
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

/** A comma-separated subset of `sign-in,refresh,user` (all by default). */
const ONLY = onlyFigures('sign-in,refresh,user')
const SMALL_USERS = 1000
const LARGE_USERS = Number(process.env.BENCH_GROWTH_USERS ?? 1_000_000)
const SESSIONS_PER_USER = Number(process.env.BENCH_GROWTH_SESSIONS ?? 5)

interface Tokens {
  access_token: string
  user: { id: string }
}

/** One server and its database, seeded with `users` users. */
async function openSide(label: string, users: number, hash: string) {
  const database = await createTestDatabase(`bench_growth_${label}`)
  const port = await getFreePort()
  const started = startAuth(benchAuthEnv(port, database.url, SERVER_POOL), serverNodeArgs())
  const pool = new pg.Pool({ connectionString: database.url, max: 4 })
  await started.ready // its migrations have run
  const ms = await seedPopulation(pool, users, SESSIONS_PER_USER, hash)
  console.log(
    `${label}: seeded ${users.toLocaleString('en-US')} users, ${(users * SESSIONS_PER_USER).toLocaleString('en-US')} sessions and refresh tokens in ${(ms / 1000).toFixed(1)} s`,
  )
  const http = new JsonClient('127.0.0.1', port, CONCURRENCY)
  // The measured users are spread over the whole table, one per worker.
  const emails = Array.from({ length: CONCURRENCY }, (_, k) =>
    seededEmail(1 + Math.floor((k * users) / CONCURRENCY)),
  )
  const signedIn = await mapLimit(emails, 4, (email) =>
    http.send<Tokens>('POST', '/token?grant_type=password', { email, password: PASSWORD }),
  )
  const host = `127.0.0.1:${String(port)}`
  return {
    label,
    database,
    started,
    pool,
    http,
    host,
    emails,
    userIds: signedIn.map((t) => t.user.id),
    userScript: randomRequestsScript(
      host,
      signedIn.map((t) => ({
        method: 'GET',
        path: '/user',
        headers: { Authorization: `Bearer ${t.access_token}` },
      })),
    ),
    async close(): Promise<void> {
      http.close()
      await pool.end()
      await stopChild(started.child)
      await database.drop()
    },
  }
}

type Side = Awaited<ReturnType<typeof openSide>>

/** The `--data-growth` run. */
export async function runDataGrowth(): Promise<void> {
  requireTools([{ command: 'wrk', debianPackage: 'wrk' }])
  buildPackages('auth')
  const hash = await bcrypt.hash(PASSWORD, 10)
  const sides: Side[] = []
  try {
    const small = await openSide('small', SMALL_USERS, hash)
    sides.push(small)
    const large = await openSide('large', LARGE_USERS, hash)
    sides.push(large)
    const pids = sides.map((s) => s.started.child.pid ?? 0)
    const cpu: CpuProbes = {
      wrk: () => processCpuMs('self', 'children'),
      'server (small)': () => processCpuMs(pids[0] ?? 0),
      'server (large)': () => processCpuMs(pids[1] ?? 0),
      'postgres (small)': databaseBackendsCpuProbe(small.database.name),
      'postgres (large)': databaseBackendsCpuProbe(large.database.name),
    }
    const memory = startMemorySampler({
      [`auth server, ${SMALL_USERS.toLocaleString('en-US')} users`]: () => rssKiB(pids[0] ?? 0),
      [`auth server, ${LARGE_USERS.toLocaleString('en-US')} users`]: () => rssKiB(pids[1] ?? 0),
    })
    const names = {
      figure: `${LARGE_USERS.toLocaleString('en-US')} users`,
      baseline: `${SMALL_USERS.toLocaleString('en-US')} users`,
    }
    const options = { rounds: ROUNDS, sliceMs: SLICE_MS, names }

    const signInSlice = (side: Side) => () =>
      runLoad(
        CONCURRENCY,
        SLICE_MS,
        SLOW_WARMUP_MS,
        async (w) => {
          await side.http.send('POST', '/token?grant_type=password', {
            email: side.emails[w],
            password: PASSWORD,
          })
        },
        cpu,
      )
    const signIn = ONLY.has('sign-in')
      ? await compareRounds('sign-in', signInSlice(small), signInSlice(large), options)
      : undefined

    const refreshSlice = (side: Side) => async () => {
      const path = '/token?grant_type=refresh_token'
      runWrk(
        side.host,
        CONCURRENCY,
        WARMUP_MS,
        refreshChainScript(side.host, path, await seedRefreshChains(side.pool, side.userIds)),
      )
      const result = runWrk(
        side.host,
        CONCURRENCY,
        SLICE_MS,
        refreshChainScript(side.host, path, await seedRefreshChains(side.pool, side.userIds)),
        cpu,
      )
      memory.sample() // wrk blocked the sampler's timer
      return result
    }
    const refresh = ONLY.has('refresh')
      ? await compareRounds('refresh', refreshSlice(small), refreshSlice(large), options)
      : undefined

    const userSlice = (side: Side) => () => {
      runWrk(side.host, CONCURRENCY, WARMUP_MS, side.userScript)
      const result = runWrk(side.host, CONCURRENCY, SLICE_MS, side.userScript, cpu)
      memory.sample() // wrk blocked the sampler's timer
      return Promise.resolve(result)
    }
    const getUser = ONLY.has('user')
      ? await compareRounds('GET /user', userSlice(small), userSlice(large), options)
      : undefined

    const c = String(CONCURRENCY)
    const rows: ResultRow[] = []
    const largeText = LARGE_USERS.toLocaleString('en-US')
    const smallText = SMALL_USERS.toLocaleString('en-US')
    const add = (figure: string, comparison: typeof signIn): void => {
      if (!comparison) return
      rows.push({
        figure: `${figure}, ${largeText} users, c=${c} (rounds ${spread(comparison)})`,
        value: rate(comparison.figure),
        baseline: `the same, ${smallText} users`,
        baselineValue: rate(comparison.baseline),
        unit: '/s',
      })
    }
    add('password sign-ins/s', signIn)
    add('refresh rotations/s', refresh)
    add('GET /user req/s', getUser)
    console.log(`\n${new Date().toISOString()} — ${machineInfo()}\n`)
    console.log(
      `Each user has ${String(SESSIONS_PER_USER)} sessions with a live refresh token each. Ratio: ${largeText} / ${smallText} users (target: 85 % or more).\n`,
    )
    console.log(markdownTable(rows))
    console.log(`\n${memoryTable(memory.stop())}`)
  } finally {
    for (const side of sides) {
      reportServerErrors(side.started, `${side.label} server`)
      await side.close()
    }
  }
}
