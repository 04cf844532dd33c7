/**
 * Auth server benchmark (bench/auth/README.md): password sign-ins/s, refresh rotations/s and
 * GET /user req/s at concurrency 50 against real PostgreSQL, each next to its physical baseline
 * measured in the same run.
 */
import { execFileSync, spawn } from 'node:child_process'
import { webcrypto } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createTestDatabase, getFreePort, waitFor } from '@gatehouse/testing'
import bcrypt from 'bcrypt'
import { jwtVerify } from 'jose'
import pg from 'pg'
import { machineInfo, markdownTable, type ResultRow } from '../lib/report.js'
import { JsonClient, runLoad, type LoadResult } from './load.js'

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50)
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000)
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 1500)
/** bcrypt-bound phases have seconds of latency at c=50: let the pipeline fill first. */
const SLOW_WARMUP_MS = Math.max(WARMUP_MS, 5000)
const JWT_SECRET = 'bench-secret-bench-secret-bench-secret!'
const PASSWORD = 'bench-password-1'
const root = fileURLToPath(new URL('../../', import.meta.url))

interface Tokens {
  access_token: string
  refresh_token: string
  user: { id: string }
}

/** One request of a {@link wrk} run. */
interface WrkRequest {
  method: string
  path: string
  headers: Record<string, string>
  body?: string
}

function luaString(value: string): string {
  return JSON.stringify(value)
}

/**
 * Runs `wrk` (one thread, `CONCURRENCY` connections) with a Lua script whose `request()` picks a
 * random entry of `requests`, after a warm-up run; non-2xx responses count as failures.
 */
function wrk(port: number, requests: readonly WrkRequest[]): LoadResult {
  const host = `127.0.0.1:${String(port)}`
  const format = (r: WrkRequest): string => {
    const headers = Object.entries({ Host: host, ...r.headers })
      .map(([name, value]) => `[${luaString(name)}] = ${luaString(value)}`)
      .join(', ')
    const body = r.body === undefined ? 'nil' : luaString(r.body)
    return `reqs[#reqs + 1] = wrk.format(${luaString(r.method)}, ${luaString(r.path)}, {${headers}}, ${body})`
  }
  const lua = [
    'local reqs = {}',
    ...requests.map(format),
    'request = function() return reqs[math.random(#reqs)] end',
    'local reported = false',
    'response = function(status, headers, body)',
    '  if status >= 300 and not reported then reported = true; io.write("BAD " .. status .. " " .. body .. "\\n") end',
    'end',
    'done = function(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format("WRK %d %d %d %f %f\\n", summary.requests,',
    '    e.status + e.connect + e.read + e.write + e.timeout, summary.duration,',
    '    latency:percentile(50) / 1000, latency:percentile(99) / 1000))',
    'end',
  ].join('\n')
  const script = join(tmpdir(), `gatehouse-bench-auth-${String(process.pid)}.lua`)
  writeFileSync(script, lua)
  const args = (ms: number): string[] => [
    '-t1',
    `-c${String(CONCURRENCY)}`,
    `-d${String(Math.ceil(ms / 1000))}s`,
    '--timeout',
    '30s',
    '-s',
    script,
    `http://${host}`,
  ]
  execFileSync('wrk', args(WARMUP_MS))
  const out = execFileSync('wrk', args(DURATION_MS)).toString()
  const m = /WRK (\d+) (\d+) (\d+) (\S+) (\S+)/.exec(out)
  if (!m) throw new Error(`unexpected wrk output: ${out}`)
  const bad = /BAD (.*)/.exec(out)?.[1]
  const total = Number(m[1])
  const failed = Number(m[2])
  const seconds = Number(m[3]) / 1e6
  return {
    rate: (total - failed) / seconds,
    ok: total - failed,
    failed,
    p50: Number(m[4]),
    p99: Number(m[5]),
    ...(bad === undefined ? {} : { firstError: bad }),
  }
}

function describe(label: string, r: LoadResult): string {
  const errors = r.failed > 0 ? `, ${String(r.failed)} failed (${r.firstError ?? ''})` : ''
  return `${label}: ${r.rate.toFixed(0)}/s (p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms${errors})`
}

async function main(): Promise<void> {
  execFileSync(
    process.execPath,
    [`${root}node_modules/typescript/bin/tsc`, '-b', `${root}packages/auth`],
    {
      stdio: 'inherit',
    },
  )
  const database = await createTestDatabase('bench_auth')
  const port = await getFreePort()
  const server = spawn(process.execPath, [`${root}packages/auth/bin/gatehouse-auth.js`], {
    env: {
      ...process.env,
      AUTHSVC_SITE_URL: 'http://localhost:3000',
      AUTHSVC_API_EXTERNAL_URL: `http://127.0.0.1:${String(port)}`,
      AUTHSVC_JWT_SECRET: JWT_SECRET,
      AUTHSVC_DB_DRIVER: 'postgres',
      DATABASE_URL: database.url,
      AUTHSVC_API_HOST: '127.0.0.1',
      PORT: String(port),
      AUTHSVC_MAILER_AUTOCONFIRM: 'true',
      AUTHSVC_JWT_AUD: 'authenticated',
      LOG_LEVEL: 'error',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let serverOut = ''
  server.stdout.on('data', (chunk: Buffer) => (serverOut += chunk.toString()))
  const http = new JsonClient('127.0.0.1', port, CONCURRENCY)
  const pool = new pg.Pool({ connectionString: database.url, max: CONCURRENCY })
  try {
    await waitFor(() => serverOut.includes('listening on'), {
      timeout: 30_000,
      what: 'the auth server',
    })

    // Seed: one user per worker, signed up through the API.
    const users = await Promise.all(
      Array.from({ length: CONCURRENCY }, (_, i) =>
        http.send<Tokens>('POST', '/signup', {
          email: `bench${String(i)}@example.com`,
          password: PASSWORD,
        }),
      ),
    )
    const hash = (
      await pool.query<{ encrypted_password: string }>(
        'SELECT encrypted_password FROM users LIMIT 1',
      )
    ).rows[0]!.encrypted_password

    // 1. Password sign-ins vs bcrypt verifications on all cores (libuv pool, as the server).
    const bcryptBase = await runLoad(CONCURRENCY, DURATION_MS, SLOW_WARMUP_MS, async () => {
      if (!(await bcrypt.compare(PASSWORD, hash))) throw new Error('bcrypt mismatch')
    })
    console.log(describe('bcrypt.compare (cost 10)', bcryptBase))
    // The HTTP client's cost is negligible at this rate; its loops stay warm between phases.
    const signIns = await runLoad(CONCURRENCY, DURATION_MS, SLOW_WARMUP_MS, async (w) => {
      await http.send<Tokens>('POST', '/token?grant_type=password', {
        email: `bench${String(w)}@example.com`,
        password: PASSWORD,
      })
    })
    console.log(describe('POST /token password', signIns))

    // 2. Refresh rotations vs the raw pg transaction (SELECT … FOR UPDATE + UPDATE + INSERT).
    const chains = users.map((u) => u.refresh_token)
    const refreshes = await runLoad(CONCURRENCY, DURATION_MS, WARMUP_MS, async (w) => {
      const next = await http.send<Tokens>('POST', '/token?grant_type=refresh_token', {
        refresh_token: chains[w],
      })
      chains[w] = next.refresh_token
    })
    console.log(describe('POST /token refresh_token', refreshes))
    const rawChains = (
      await Promise.all(
        Array.from({ length: CONCURRENCY }, (_, w) =>
          http.send<Tokens>('POST', '/token?grant_type=password', {
            email: `bench${String(w)}@example.com`,
            password: PASSWORD,
          }),
        ),
      )
    ).map((t) => t.refresh_token)
    let counter = 0
    const rawRefresh = await runLoad(CONCURRENCY, DURATION_MS, WARMUP_MS, async (w) => {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        const { rows } = await client.query<{ id: string; user_id: string; session_id: string }>(
          'SELECT id, user_id, session_id FROM refresh_tokens WHERE token = $1 FOR UPDATE',
          [rawChains[w]],
        )
        const row = rows[0]
        if (!row) throw new Error('raw token not found')
        await client.query(
          'UPDATE refresh_tokens SET revoked = true, updated_at = now() WHERE id = $1',
          [row.id],
        )
        const next = `raw${String(w)}x${String(counter++)}`.padEnd(12, 'x')
        await client.query(
          `INSERT INTO refresh_tokens (token, user_id, revoked, created_at, updated_at, parent, session_id)
           VALUES ($1, $2, false, now(), now(), $3, $4)`,
          [next, row.user_id, rawChains[w], row.session_id],
        )
        await client.query('COMMIT')
        rawChains[w] = next
      } catch (error) {
        await client.query('ROLLBACK')
        throw error
      } finally {
        client.release()
      }
    })
    console.log(describe('raw pg rotation transaction', rawRefresh))

    // 3. GET /user vs JWT verification plus one primary-key SELECT.
    const access = (
      await Promise.all(
        users.map((_, w) =>
          http.send<Tokens>('POST', '/token?grant_type=password', {
            email: `bench${String(w)}@example.com`,
            password: PASSWORD,
          }),
        ),
      )
    ).map((t) => t.access_token)
    const getUser = wrk(
      port,
      access.map((token) => ({
        method: 'GET',
        path: '/user',
        headers: { Authorization: `Bearer ${token}` },
      })),
    )
    console.log(describe('GET /user', getUser))
    const key = await webcrypto.subtle.importKey(
      'raw',
      new TextEncoder().encode(JWT_SECRET),
      { name: 'HMAC', hash: 'SHA-256' },
      false,
      ['verify'],
    )
    const rawUser = await runLoad(CONCURRENCY, DURATION_MS, WARMUP_MS, async (w) => {
      const { payload } = await jwtVerify(access[w]!, key, { algorithms: ['HS256'] })
      const { rows } = await pool.query('SELECT * FROM users WHERE id = $1', [payload.sub])
      if (rows.length !== 1) throw new Error('user not found')
    })
    console.log(describe('JWT verify + PK SELECT', rawUser))

    const rows: ResultRow[] = [
      {
        figure: `password sign-ins/s, c=${String(CONCURRENCY)}`,
        value: signIns.rate,
        baseline: 'bcrypt (cost 10) verifications/s, all cores',
        baselineValue: bcryptBase.rate,
        unit: '/s',
      },
      {
        figure: `refresh rotations/s, c=${String(CONCURRENCY)}`,
        value: refreshes.rate,
        baseline: 'raw pg SELECT FOR UPDATE + UPDATE + INSERT transaction',
        baselineValue: rawRefresh.rate,
        unit: '/s',
      },
      {
        figure: `GET /user req/s, c=${String(CONCURRENCY)}`,
        value: getUser.rate,
        baseline: 'jose HS256 verify + one PK SELECT (pg)',
        baselineValue: rawUser.rate,
        unit: '/s',
      },
    ]
    console.log(`\n${new Date().toISOString()} — ${machineInfo()}\n`)
    console.log(markdownTable(rows))
  } finally {
    http.close()
    await pool.end()
    server.kill('SIGTERM')
    await new Promise((resolve) => server.once('exit', resolve))
    await database.drop()
  }
}

await main()
