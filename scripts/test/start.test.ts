/**
 * `npm start` as a user runs it: the executable with its own data directory and ports (the
 * environment wins over the embedded defaults), the ready table, `npm run status`,
 * `@supabase/supabase-js` through the gateway, a mailed link clicked in Chromium, a second start
 * that cannot run, and a restart that keeps the mails.
 *
 * @see issue 25, items 9 to 14
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process'
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { createClient } from '@supabase/supabase-js'
import { getFreePorts, launchChromium } from '@gatehouse/testing'
import type { MailSummary, ReceivedMail } from '@gatehouse/mail-inbox'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import ws from 'ws'

const root = join(dirname(fileURLToPath(import.meta.url)), '../..')
const run = promisify(execFile)

/** A started `npm start`: its output so far, and waits on it. */
interface Stack {
  readonly child: ChildProcess
  output(): string
  /** Resolves once the output matches `pattern` (rejects when the process ends first). */
  waitForOutput(pattern: RegExp): Promise<string>
  /** Resolves with the exit code. */
  exited: Promise<number | null>
}

function startStack(env: NodeJS.ProcessEnv, args: string[] = []): Stack {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts', ...args], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  const waiters = new Set<() => void>()
  const collect = (chunk: Buffer): void => {
    output += chunk.toString('utf8')
    for (const waiter of [...waiters]) waiter()
  }
  child.stdout.on('data', collect)
  child.stderr.on('data', collect)
  const killOnExit = (): void => {
    child.kill('SIGKILL')
  }
  process.once('exit', killOnExit)
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      process.removeListener('exit', killOnExit)
      for (const waiter of [...waiters]) waiter()
      resolve(code)
    })
  })
  return {
    child,
    output: () => output,
    exited,
    waitForOutput: (pattern) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const match = pattern.exec(output)
          if (match) {
            waiters.delete(check)
            resolve(match[0])
          } else if (child.exitCode !== null || child.signalCode !== null) {
            waiters.delete(check)
            reject(new Error(`npm start ended before ${String(pattern)}:\n${output}`))
          }
        }
        waiters.add(check)
        check()
      }),
  }
}

let dataDir: string
let env: NodeJS.ProcessEnv
let ports: Record<string, number>
let stack: Stack
let browser: Browser
let gatewayUrl: string
let inboxUrl: string

const PORT_VARIABLES = [
  'GATEHOUSE_API_PORT',
  'GATEHOUSE_INBOX_PORT',
  'GATEHOUSE_INBOX_SMTP_PORT',
  'AUTHSVC_API_PORT',
  'OTEL_EXPORTER_PROMETHEUS_PORT',
  'RATELIMIT_PORT',
  'RATELIMIT_GRPC_PORT',
  'RATELIMIT_DEBUG_PORT',
  'RATELIMIT_PROMETHEUS_PORT',
] as const

beforeAll(async () => {
  dataDir = join(mkdtempSync(join(tmpdir(), 'gatehouse-start-')), 'data')
  ports = {}
  // Distinct ports: separate getFreePort calls can return one port twice (seen in CI: the rate
  // limit's HTTP port and the inbox's were the same).
  const free = await getFreePorts(PORT_VARIABLES.length)
  PORT_VARIABLES.forEach((name, i) => (ports[name] = free[i] as number))
  const portEnv = Object.fromEntries(
    PORT_VARIABLES.filter((n) => n !== 'RATELIMIT_PROMETHEUS_PORT').map((n) => [
      n,
      String(ports[n]),
    ]),
  )
  env = {
    ...process.env,
    ...portEnv,
    RATELIMIT_PROMETHEUS_ADDR: `127.0.0.1:${String(ports.RATELIMIT_PROMETHEUS_PORT)}`,
    GATEHOUSE_DATA_DIR: dataDir,
    // An auth setting of the user's: it wins over the embedded default.
    AUTHSVC_MAILER_SUBJECTS_CONFIRMATION: 'Please confirm your address',
    NO_COLOR: '1',
  }
  gatewayUrl = `http://127.0.0.1:${String(ports.GATEHOUSE_API_PORT)}`
  inboxUrl = `http://127.0.0.1:${String(ports.GATEHOUSE_INBOX_PORT)}/`
  stack = startStack(env)
  browser = await launchChromium()
  await stack.waitForOutput(/gatehouse: ready in .*\n(?:.*\n)*.*Ctrl-C stops the stack\./)
}, 300_000)

afterAll(async () => {
  await browser.close()
  if (stack.child.exitCode === null) {
    stack.child.kill('SIGINT')
    await stack.exited
  }
  rmSync(dirname(dataDir), { recursive: true, force: true })
}, 60_000)

/** The keys of the ready table. */
function keysOf(text: string): { anon: string; serviceRole: string } {
  const anon = /^ {2}anon key +(\S+)$/m.exec(text)?.[1]
  const serviceRole = /^ {2}service_role key +(\S+)/m.exec(text)?.[1]
  expect(anon).toBeDefined()
  expect(serviceRole).toBeDefined()
  return { anon: anon ?? '', serviceRole: serviceRole ?? '' }
}

/** The claims of a JWT (no verification: the server checks them). */
const claimsOf = (jwt: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >

async function latestMailTo(address: string): Promise<ReceivedMail> {
  const list = (await (
    await fetch(new URL(`api/mails?q=${encodeURIComponent(`to:${address}`)}`, inboxUrl))
  ).json()) as MailSummary[]
  const [latest] = list
  if (!latest) throw new Error(`no mail to ${address}`)
  return (await (
    await fetch(new URL(`api/mails/${String(latest.id)}`, inboxUrl))
  ).json()) as ReceivedMail
}

/**
 * The realtime client's WebSocket (Node 20 has none built in): `ws`, as supabase-js documents
 * for Node < 22; realtime-js types its constructor narrower than `ws` declares it.
 */
type Transport = NonNullable<
  NonNullable<Parameters<typeof createClient>[2]>['realtime']
>['transport']

function supabase(anonKey: string) {
  return createClient(gatewayUrl, anonKey, {
    auth: { persistSession: false, autoRefreshToken: false },
    realtime: { transport: ws as unknown as Transport },
  })
}

describe('npm start', { timeout: 120_000 }, () => {
  it("says it creates the embedded database, then prints a ready table with the URLs (the environment's ports) and both keys", () => {
    const output = stack.output()
    expect(output.indexOf('creating the embedded database')).toBeGreaterThan(-1)
    expect(output.indexOf('creating the embedded database')).toBeLessThan(
      output.indexOf('ready in'),
    )
    expect(output).toMatch(
      new RegExp(`^ {2}Supabase URL +${gatewayUrl} +createClient\\(url, anonKey\\)`, 'm'),
    )
    expect(output).toMatch(
      new RegExp(`^ {2}auth API +http://127\\.0\\.0\\.1:${String(ports.AUTHSVC_API_PORT)} `, 'm'),
    )
    expect(output).toMatch(new RegExp(`^ {2}SITE_URL +${gatewayUrl}/ `, 'm'))
    expect(output).toMatch(new RegExp(`^ {2}mail inbox +${inboxUrl} `, 'm'))
    expect(output).toMatch(
      new RegExp(
        `^ {2}rate limit gRPC +127\\.0\\.0\\.1:${String(ports.RATELIMIT_GRPC_PORT)} `,
        'm',
      ),
    )
    const keys = keysOf(output)
    expect(claimsOf(keys.anon)).toMatchObject({ role: 'anon' })
    expect(claimsOf(keys.serviceRole)).toMatchObject({ role: 'service_role' })
    // The auth server's own, different key is not shown beside the table's.
    expect(output).not.toContain('development service_role key')
  })

  it("shows every server's log lines in one readable format", () => {
    const serverLines = stack
      .output()
      .split('\n')
      .filter((line) => /^(auth|ratelimit) +\| /.test(line))
    expect(serverLines.filter((l) => l.startsWith('auth')).length).toBeGreaterThan(0)
    expect(serverLines.filter((l) => l.startsWith('ratelimit')).length).toBeGreaterThan(0)
    for (const line of serverLines) {
      expect(line).toMatch(
        /^(auth|ratelimit) +\| (\d\d:\d\d:\d\d\.\d{3} (TRACE|DEBUG|INFO |WARN |ERROR|FATAL) \S| {19})/,
      )
      expect(line).not.toContain('{"level"')
    }
  })

  it('prints the URLs, keys and health again with npm run status', async () => {
    const { stdout } = await run('npm', ['run', '--silent', 'status'], { cwd: root, env })
    expect(stdout).toMatch(/is ready:\n {2}services +auth up, ratelimit up, gateway up, inbox up\n/)
    expect(stdout).toMatch(new RegExp(`^ {2}Supabase URL +${gatewayUrl} `, 'm'))
    expect(keysOf(stdout)).toEqual(keysOf(stack.output()))
  })

  it('serves @supabase/supabase-js createClient(url, anonKey).auth: sign up, confirm, sign in, getUser', async () => {
    const client = supabase(keysOf(stack.output()).anon)
    const email = 'supabase-js@example.com'
    const signUp = await client.auth.signUp({ email, password: 'correct-horse-battery' })
    expect(signUp.error).toBeNull()
    expect(signUp.data.session).toBeNull()

    // The user's AUTHSVC_MAILER_SUBJECTS_CONFIRMATION won; the link goes through the gateway.
    const mail = await latestMailTo(email)
    expect(mail.subject).toBe('Please confirm your address')
    const [link] = mail.links
    expect(link).toMatch(new RegExp(`^${gatewayUrl}/auth/v1/verify\\?token=`))
    const confirmed = await fetch(link ?? '', { redirect: 'manual' })
    expect(confirmed.status).toBe(303)
    expect(confirmed.headers.get('location')).toMatch(new RegExp(`^${gatewayUrl}/#access_token=`))

    const signIn = await client.auth.signInWithPassword({
      email,
      password: 'correct-horse-battery',
    })
    expect(signIn.error).toBeNull()
    expect(signIn.data.user?.email).toBe(email)
    const { data, error } = await client.auth.getUser()
    expect(error).toBeNull()
    expect(data.user?.email).toBe(email)
    expect(data.user?.email_confirmed_at).toBeTruthy()
  })

  it('lands a clicked mail link on a page that shows the signed-in user, or what went wrong', async () => {
    const client = supabase(keysOf(stack.output()).anon)
    const email = 'clicker@example.com'
    expect(
      (await client.auth.signUp({ email, password: 'correct-horse-battery' })).error,
    ).toBeNull()
    const page = await browser.newPage()
    try {
      await page.goto(inboxUrl)
      await page
        .getByRole('row', { name: /clicker@example\.com/ })
        .getByRole('link', { name: 'Please confirm your address' })
        .click()
      const link = page
        .frameLocator('iframe[title="Mail body"]')
        .getByRole('link', { name: 'Confirm your email address' })
      const href = await link.getAttribute('href')
      await link.click()
      await page.waitForURL(`${gatewayUrl}/`)
      await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe(
        `Signed in as ${email}`,
      )
      await expect(page.getByText('Your email address is confirmed').count()).resolves.toBe(1)
      // The tokens have left the address bar.
      expect(page.url()).toBe(`${gatewayUrl}/`)

      // The same link again: used up, and the page says so.
      await page.goto(href ?? '')
      await page.getByRole('heading', { name: 'The link did not sign you in' }).waitFor()
      await expect(page.getByText('otp_expired').count()).resolves.toBe(1)
    } finally {
      await page.close()
    }
  })

  it('serves a page on localhost to register a passkey and sign in with it by hand', async () => {
    const origin = `http://localhost:${String(ports.GATEHOUSE_API_PORT)}`
    expect(stack.output()).toMatch(new RegExp(`^ {2}passkey page +${origin}/passkeys `, 'm'))
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      await page.goto(`${origin}/passkeys`)
      const cdp = await context.newCDPSession(page)
      await cdp.send('WebAuthn.enable')
      const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
        options: {
          protocol: 'ctap2',
          transport: 'internal',
          hasResidentKey: true,
          hasUserVerification: true,
          isUserVerified: true,
          automaticPresenceSimulation: true,
        },
      })
      const status = page.getByRole('status')
      const says = (text: string): Promise<void> =>
        status.getByText(text, { exact: true }).waitFor({ timeout: 20_000 })
      // The user confirmed by the supabase-js test above.
      await page.getByLabel('Email').fill('supabase-js@example.com')
      await page.getByLabel('Password').fill('correct-horse-battery')
      await page.getByRole('button', { name: 'Sign in with password' }).click()
      await says('Signed in as supabase-js@example.com.')
      await page.getByRole('button', { name: 'Register a passkey' }).click()
      await status.getByText(/^Passkey registered/).waitFor({ timeout: 20_000 })
      await page.getByRole('button', { name: 'Sign out' }).click()
      await says('Done.')
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click()
      await says('Signed in with a passkey as supabase-js@example.com.')
      // One resident credential, used for the sign-in (its counter moved).
      const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId })
      expect(credentials).toHaveLength(1)
      expect(credentials[0]?.signCount).toBeGreaterThan(0)
    } finally {
      await context.close()
    }
  })

  it("refuses a second npm start (busy ports, or the same data directory) without touching the running stack's files", async () => {
    const snapshot = (): Record<string, string> => {
      const files: Record<string, string> = {}
      for (const path of [
        'stack.json',
        'ratelimit/config/example.yaml',
        'ratelimit/config/gatehouse-auth.yaml',
      ]) {
        const full = join(dataDir, path)
        files[path] = `${String(statSync(full).mtimeMs)} ${readFileSync(full, 'utf8')}`
      }
      return files
    }
    const before = snapshot()

    // The same command again (same data directory): refused before anything is written.
    const again = startStack(env)
    expect(await again.exited).toBe(1)
    expect(again.output()).toMatch(
      new RegExp(`another npm start \\(pid ${String(stack.child.pid)}, since .*\\) runs on`),
    )

    // Another data directory on the same ports: each busy port names its variable.
    const otherDir = join(dirname(dataDir), 'other')
    const busy = startStack({ ...env, GATEHOUSE_DATA_DIR: otherDir })
    expect(await busy.exited).toBe(1)
    expect(busy.output()).toContain(
      `port ${String(ports.GATEHOUSE_API_PORT)} on 127.0.0.1 (API gateway) is in use: stop what listens there, or set GATEHOUSE_API_PORT to a free port`,
    )
    expect(busy.output()).toContain(
      `port ${String(ports.AUTHSVC_API_PORT)} on 127.0.0.1 (auth API) is in use: stop what listens there, or set AUTHSVC_API_PORT to a free port`,
    )
    expect(existsSync(otherDir)).toBe(false)

    expect(snapshot()).toEqual(before)
    const { stdout } = await run('npm', ['run', '--silent', 'status'], { cwd: root, env })
    expect(stdout).toContain('auth up, ratelimit up, gateway up, inbox up')
  })

  it('stops on Ctrl-C, and a restart keeps the mails, the database and the edited example config', async () => {
    const example = join(dataDir, 'ratelimit/config/example.yaml')
    // The served copy says where it is served from (GATEHOUSE_DATA_DIR here), not the example's path.
    const [first, second] = readFileSync(example, 'utf8').split('\n')
    expect([first, second]).toEqual(['# Served by npm start from', `#   ${example}`])
    const edited = `${readFileSync(example, 'utf8')}\n# edited by the test\n`
    writeFileSync(example, edited)
    const mailsBefore = readdirSync(join(dataDir, 'mail-inbox')).length
    expect(mailsBefore).toBeGreaterThanOrEqual(2)

    stack.child.kill('SIGINT')
    expect(await stack.exited).toBe(0)
    expect(stack.output()).toContain('gatehouse: all services stopped.')
    expect(readdirSync(dataDir)).not.toContain('stack.json')
    const { stdout } = await run('npm', ['run', '--silent', 'status'], { cwd: root, env }).catch(
      (error: unknown) => {
        const failed = error as { stdout: string; code: number }
        expect(failed.code).toBe(3)
        return failed
      },
    )
    expect(stdout).toContain('no npm start is running')

    stack = startStack(env)
    await stack.waitForOutput(/gatehouse: ready in /)
    expect(stack.output()).not.toContain('creating the embedded database')
    expect(readFileSync(example, 'utf8')).toBe(edited)
    const kept = (await (await fetch(new URL('api/mails', inboxUrl))).json()) as MailSummary[]
    expect(kept.map((m) => m.to[0])).toEqual(['clicker@example.com', 'supabase-js@example.com'])
    // The confirmed user is still there: the database was kept.
    const client = supabase(keysOf(stack.output()).anon)
    const signIn = await client.auth.signInWithPassword({
      email: 'supabase-js@example.com',
      password: 'correct-horse-battery',
    })
    expect(signIn.error).toBeNull()
  }, 300_000)
})
