/**
 * `run.ts --peer better-auth` (bench/auth/README.md, "Peer: better-auth"): our auth server next to
 * better-auth on the same machine and the same PostgreSQL server, in one run, slices alternating
 * (better-auth, ours, better-auth, …): password sign-ins/s, session reads/s and sign-ups/s, each
 * with the ratio Gatehouse / better-auth. Both hash with bcrypt cost 10 (the `bcrypt` package;
 * better-auth through its `password.hash`/`verify` options), so the sign-in and sign-up rows
 * compare everything but the hash. Each server has a fresh database of its own on the same
 * PostgreSQL (so PostgreSQL's CPU per operation can be told apart).
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createTestDatabase, getFreePort, waitFor } from '@gatehouse/testing'
import { databaseBackendsCpuProbe, processCpuMs, type CpuProbes } from '../lib/cpu.js'
import { memoryTable, rssKiB, startMemorySampler } from '../lib/memory.js'
import { machineInfo, markdownTable, type ResultRow } from '../lib/report.js'
import { requireTools } from '../lib/tools.js'
import { JsonClient, mapLimit, runLoad } from './load.js'
import { compareRounds, rate, spread } from './rounds.js'
import {
  benchAuthEnv,
  buildPackages,
  reportServerErrors,
  serverNodeArgs,
  startAuth,
  stopChild,
} from './server.js'
import { randomRequestsScript, runWrk } from './wrk.js'
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

/** A comma-separated subset of `sign-in,session,sign-up` (all by default). */
const ONLY = onlyFigures('sign-in,session,sign-up')
const NAMES = { figure: 'Gatehouse', baseline: 'better-auth' }

interface Tokens {
  access_token: string
}

/** Starts `better-auth-server.mjs` on `databaseUrl` and resolves when it listens. */
async function startBetterAuth(databaseUrl: string, port: number) {
  const child = spawn(
    process.execPath,
    [
      ...serverNodeArgs(),
      fileURLToPath(new URL('better-auth-server.mjs', import.meta.url)),
      databaseUrl,
      String(port),
      SERVER_POOL,
    ],
    { env: { ...process.env, NODE_ENV: 'production' }, stdio: ['ignore', 'pipe', 'inherit'] },
  )
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  await waitFor(() => out.includes('listening on'), { timeout: 60_000, what: 'better-auth' })
  return child
}

/** Signs `email` in at better-auth and returns its session cookie (`name=value`). */
async function betterAuthCookie(origin: string, email: string): Promise<string> {
  const response = await fetch(`${origin}/api/auth/sign-in/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin },
    body: JSON.stringify({ email, password: PASSWORD }),
  })
  if (response.status !== 200) throw new Error(`better-auth sign-in: ${await response.text()}`)
  const cookie = response.headers
    .getSetCookie()
    .map((c) => c.split(';')[0] ?? '')
    .find((c) => c.includes('session_token='))
  if (cookie === undefined) throw new Error('better-auth sent no session cookie')
  return cookie
}

/** The `--peer better-auth` run. */
export async function runPeer(): Promise<void> {
  requireTools([{ command: 'wrk', debianPackage: 'wrk' }])
  buildPackages('auth')
  const ours = await createTestDatabase('bench_auth')
  const theirs = await createTestDatabase('bench_peer')
  const [port, peerPort] = [await getFreePort(), await getFreePort()]
  const host = `127.0.0.1:${String(port)}`
  const peerHost = `127.0.0.1:${String(peerPort)}`
  const peerOrigin = `http://${peerHost}`
  const started = startAuth(benchAuthEnv(port, ours.url, SERVER_POOL), serverNodeArgs())
  const peer = await startBetterAuth(theirs.url, peerPort)
  const http = new JsonClient('127.0.0.1', port, CONCURRENCY)
  const peerHttp = new JsonClient('127.0.0.1', peerPort, CONCURRENCY)
  const serverPid = started.child.pid ?? 0
  const peerPid = peer.pid ?? 0
  const cpu: CpuProbes = {
    wrk: () => processCpuMs('self', 'children'),
    gatehouse: () => processCpuMs(serverPid),
    'better-auth': () => processCpuMs(peerPid),
    'postgres (ours)': databaseBackendsCpuProbe(ours.name),
    'postgres (better-auth)': databaseBackendsCpuProbe(theirs.name),
  }
  try {
    await started.ready
    const emails = Array.from({ length: CONCURRENCY }, (_, i) => `bench${String(i)}@example.com`)
    const accessTokens = await mapLimit(emails, 4, async (email) => {
      await http.send('POST', '/signup', { email, password: PASSWORD })
      return (
        await http.send<Tokens>('POST', '/token?grant_type=password', {
          email,
          password: PASSWORD,
        })
      ).access_token
    })
    const cookies = await mapLimit(emails, 4, async (email) => {
      await peerHttp.send(
        'POST',
        '/api/auth/sign-up/email',
        { email, password: PASSWORD, name: 'Bench' },
        undefined,
        { origin: peerOrigin },
      )
      return betterAuthCookie(peerOrigin, email)
    })
    // get-session answers 200 with `null` for a session it does not know: check one first.
    const check = await fetch(`${peerOrigin}/api/auth/get-session`, {
      headers: { cookie: cookies[0] ?? '' },
    })
    const session = (await check.json()) as { user?: { email?: string } } | null
    if (session?.user?.email !== emails[0]) throw new Error('better-auth get-session: no session')
    const memory = startMemorySampler({
      'Gatehouse auth server': () => rssKiB(serverPid),
      'better-auth server': () => rssKiB(peerPid),
    })

    const signIn = ONLY.has('sign-in')
      ? await compareRounds(
          'sign-in',
          () =>
            runLoad(
              CONCURRENCY,
              SLICE_MS,
              SLOW_WARMUP_MS,
              async (w) => {
                await peerHttp.send(
                  'POST',
                  '/api/auth/sign-in/email',
                  { email: emails[w], password: PASSWORD },
                  undefined,
                  { origin: peerOrigin },
                )
              },
              cpu,
            ),
          () =>
            runLoad(
              CONCURRENCY,
              SLICE_MS,
              SLOW_WARMUP_MS,
              async (w) => {
                await http.send('POST', '/token?grant_type=password', {
                  email: emails[w],
                  password: PASSWORD,
                })
              },
              cpu,
            ),
          { rounds: ROUNDS, sliceMs: SLICE_MS, names: NAMES },
        )
      : undefined

    const userScript = randomRequestsScript(
      host,
      accessTokens.map((token) => ({
        method: 'GET',
        path: '/user',
        headers: { Authorization: `Bearer ${token}` },
      })),
    )
    const sessionScript = randomRequestsScript(
      peerHost,
      cookies.map((cookie) => ({
        method: 'GET',
        path: '/api/auth/get-session',
        headers: { Cookie: cookie },
      })),
    )
    const wrkSlice = (target: string, script: string) => () => {
      runWrk(target, CONCURRENCY, WARMUP_MS, script)
      const result = runWrk(target, CONCURRENCY, SLICE_MS, script, cpu)
      memory.sample() // wrk blocked the sampler's timer
      return Promise.resolve(result)
    }
    const sessions = ONLY.has('session')
      ? await compareRounds(
          'session read',
          wrkSlice(peerHost, sessionScript),
          wrkSlice(host, userScript),
          { rounds: ROUNDS, sliceMs: SLICE_MS, names: NAMES },
        )
      : undefined

    // Sign-ups through the closed-loop client, a new email per request. Not wrk: a wrk run that
    // ends leaves up to 50 sign-ups hashing in the server, which would load the next slice.
    let signedUp = 0
    const newEmail = (): string => `signup${String(signedUp++)}@example.com`
    const signUps = ONLY.has('sign-up')
      ? await compareRounds(
          'sign-up',
          () =>
            runLoad(
              CONCURRENCY,
              SLICE_MS,
              SLOW_WARMUP_MS,
              async () => {
                await peerHttp.send(
                  'POST',
                  '/api/auth/sign-up/email',
                  { email: newEmail(), password: PASSWORD, name: 'Bench' },
                  undefined,
                  { origin: peerOrigin },
                )
              },
              cpu,
            ),
          () =>
            runLoad(
              CONCURRENCY,
              SLICE_MS,
              SLOW_WARMUP_MS,
              async () => {
                await http.send('POST', '/signup', { email: newEmail(), password: PASSWORD })
              },
              cpu,
            ),
          { rounds: ROUNDS, sliceMs: SLICE_MS, names: NAMES },
        )
      : undefined

    const c = String(CONCURRENCY)
    const rows: ResultRow[] = []
    if (signIn) {
      rows.push({
        figure: `password sign-ins/s (POST /token?grant_type=password), c=${c} (rounds ${spread(signIn)})`,
        value: rate(signIn.figure),
        baseline: 'better-auth POST /api/auth/sign-in/email (both bcrypt cost 10)',
        baselineValue: rate(signIn.baseline),
        unit: '/s',
      })
    }
    if (sessions) {
      rows.push({
        figure: `session reads/s (GET /user, bearer JWT), c=${c} (rounds ${spread(sessions)})`,
        value: rate(sessions.figure),
        baseline: 'better-auth GET /api/auth/get-session (session cookie)',
        baselineValue: rate(sessions.baseline),
        unit: '/s',
      })
    }
    if (signUps) {
      rows.push({
        figure: `sign-ups/s (POST /signup, autoconfirm), c=${c} (rounds ${spread(signUps)})`,
        value: rate(signUps.figure),
        baseline: 'better-auth POST /api/auth/sign-up/email (auto sign-in)',
        baselineValue: rate(signUps.baseline),
        unit: '/s',
      })
    }
    console.log(`\n${new Date().toISOString()} — ${machineInfo()}\n`)
    console.log('Ratio: Gatehouse / better-auth.\n')
    console.log(markdownTable(rows))
    console.log(`\n${memoryTable(memory.stop())}`)
  } finally {
    reportServerErrors(started)
    http.close()
    peerHttp.close()
    await stopChild(started.child)
    await stopChild(peer)
    await ours.drop()
    await theirs.drop()
  }
}
