/**
 * `gatehouse-ratelimit` and `gatehouse-ratelimit-client` run as a user runs them: processes from
 * the command line, their exit status and exact output (issue 25: command lines that follow
 * conventions; the client keeps Go's `flag` texts).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  createTestCertificates,
  runProcess,
  sourceEntryArgs,
  type ProcessResult,
  type TestCertificates,
} from '@gatehouse/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CLIENT_USAGE } from '#internal/client/args.js'
import { startService, type Harness } from '../harness.js'

const SERVICE = fileURLToPath(new URL('../../src/main.ts', import.meta.url))
const CLIENT = fileURLToPath(new URL('../../src/client/cli.ts', import.meta.url))
const { version } = JSON.parse(
  readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
) as { version: string }

let dir: string

function run(
  entry: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<ProcessResult> {
  return runProcess(process.execPath, [...sourceEntryArgs(entry), ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', ...env },
  })
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'ratelimit-executables-'))
})
afterAll(() => {
  rmSync(dir, { recursive: true, force: true })
})

describe('gatehouse-ratelimit', () => {
  it.concurrent("--version prints package.json's version", async ({ expect }) => {
    expect(await run(SERVICE, ['--version'])).toEqual({
      code: 0,
      stdout: `gatehouse-ratelimit ${version}\n`,
      stderr: '',
    })
  })

  it.concurrent(
    '--help lists every variable with its meaning and default, exit 0, without starting',
    async ({ expect }) => {
      const { code, stdout, stderr } = await run(SERVICE, ['--help'], { PORT: 'not-a-port' })
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
      expect(stdout).toMatch(
        /^Usage: gatehouse-ratelimit \[check \[<dir-or-file>\]\] \[--env-file <path>\]\n/,
      )
      expect(stdout).toMatch(/\n {2}PORT +HTTP port \(8080\)\n/)
      // Descriptions (the README's, first sentence) wrap under themselves at 100 columns.
      expect(stdout).toMatch(
        /\n {2}REDIS_URL \| KVSTORE_URL +single: host:port, a socket path, or\n {44}redis:\/\/\[user:pass@\]host:port\[\/db\] \(rediss:\/\/ for TLS\);\n[^]*?\(\/var\/run\/nutcracker\/ratelimit\.sock\)\n/,
      )
      expect(stdout).toMatch(
        /\n {2}NEAR_LIMIT_RATIO +Share of the limit above which hits count as near_limit\n {44}\(0\.\.1\) \(0\.8\)\n/,
      )
      expect(stdout).toMatch(/\n {2}CACHE_KEY_PREFIX +Prefix of every counter key \(none\)\n/)
      // Every variable has its meaning: no entry is a bare default.
      const variables = stdout.split('Environment variables (default):\n')[1]?.split('\n\n')[0]
      const entries =
        variables?.split(/\n(?= {2}\S)/).map((entry) => entry.replace(/\s+/g, ' ')) ?? []
      expect(entries.length).toBeGreaterThan(100)
      expect(entries.filter((entry) => !/^ \S+(?: \| \S+)* \S.* \(.*\)$/.test(entry))).toEqual([])
      expect(
        stdout.split('\n').filter((line) => line.length > 100 && /\S {2,}\S/.test(line)),
      ).toEqual([])
    },
  )

  it.concurrent('refuses an unknown option with one line and exit status 2', async ({ expect }) => {
    expect(await run(SERVICE, ['--bogus'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "gatehouse-ratelimit: unknown option '--bogus' (see gatehouse-ratelimit --help)\n",
    })
  })

  it.concurrent(
    'reads --env-file as a program argument; the environment wins over it',
    async ({ expect }) => {
      const file = join(dir, 'ratelimit.env')
      writeFileSync(file, 'BACKEND_TYPE=memory\nPORT=eighty\nNEAR_LIMIT_RATIO=2\n')
      const { code, stdout, stderr } = await run(SERVICE, ['--env-file', file], {
        NEAR_LIMIT_RATIO: '0.5',
      })
      expect({ code, stdout }).toEqual({ code: 2, stdout: '' })
      expect(stderr).toBe(
        'gatehouse-ratelimit: invalid settings:\n  PORT: must be an integer from 0 to 65535 (got "eighty")\n',
      )
    },
  )
})

describe("gatehouse-ratelimit check (upstream's ratelimit_config_check)", () => {
  it.concurrent(
    'loads a directory as the service would and says so, exit 0',
    async ({ expect }) => {
      const config = join(dir, 'config-ok')
      mkdirSync(join(config, 'team'), { recursive: true })
      writeFileSync(
        join(config, 'a.yaml'),
        'domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n',
      )
      writeFileSync(join(config, 'team', 'b.yaml'), 'domain: b\n')
      expect(await run(SERVICE, ['check', config])).toEqual({
        code: 0,
        stdout: [
          'checking rate limit configs...',
          `loading config directory: ${config}`,
          'opening config file: a.yaml',
          'opening config file: team.b.yaml',
          'all rate limit configs ok',
          '',
        ].join('\n'),
        stderr: '',
      })
    },
  )

  it.concurrent(
    "prints upstream's message for a file that does not load, exit 1",
    async ({ expect }) => {
      const file = join(dir, 'bad-unit.yaml')
      writeFileSync(
        file,
        'domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n',
      )
      expect(await run(SERVICE, ['check', file])).toEqual({
        code: 1,
        stdout: `checking rate limit configs...\nopening config file: ${file}\n`,
        stderr:
          "error loading rate limit configs: bad-unit.yaml: invalid rate limit unit 'fortnight'\n",
      })
    },
  )
})

describe('gatehouse-ratelimit-client', () => {
  it.concurrent('-h prints the usage, exit 0', async ({ expect }) => {
    expect(await run(CLIENT, ['-h'])).toEqual({ code: 0, stdout: CLIENT_USAGE, stderr: '' })
  })

  it.concurrent("-version prints package.json's version", async ({ expect }) => {
    expect(await run(CLIENT, ['-version'])).toEqual({
      code: 0,
      stdout: `gatehouse-ratelimit-client ${version}\n`,
      stderr: '',
    })
  })

  it.concurrent.for<[string[], string]>([
    [['-x'], 'flag provided but not defined: -x'],
    [['-descriptors', 'abc'], 'invalid value "abc" for flag -descriptors: invalid descriptor list'],
  ])("refuses %j with Go's flag text and the usage, exit 2", async ([args, text], { expect }) => {
    expect(await run(CLIENT, args)).toEqual({
      code: 2,
      stdout: '',
      stderr: `${text}\n${CLIENT_USAGE}`,
    })
  })

  it.concurrent('refuses an argument after the flags on one line, exit 2', async ({ expect }) => {
    expect(await run(CLIENT, ['-domain', 'rl', 'stray'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'gatehouse-ratelimit-client: unexpected argument "stray" (see gatehouse-ratelimit-client -h)\n',
    })
  })

  describe('over mutual TLS (-grpc-use-tls and its files)', () => {
    let certs: TestCertificates
    let h: Harness
    const file = (name: string, content: string): string => {
      writeFileSync(join(dir, name), content)
      return join(dir, name)
    }

    beforeAll(async () => {
      certs = createTestCertificates()
      h = await startService({
        files: {
          'tls.yaml':
            'domain: tls\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n',
        },
        env: {
          GRPC_SERVER_USE_TLS: 'true',
          GRPC_SERVER_TLS_CERT: file('server.crt', certs.serverCert),
          GRPC_SERVER_TLS_KEY: file('server.key', certs.serverKey),
          GRPC_CLIENT_TLS_CACERT: file('ca.crt', certs.ca),
        },
      })
    })
    afterAll(async () => {
      await h.close()
    })

    it('asks the service for a decision', async () => {
      // The server certificate names localhost.
      const address = h.grpcAddress.replace('127.0.0.1', 'localhost')
      const result = await run(CLIENT, [
        '-dial_string',
        address,
        '-domain',
        'tls',
        '-descriptors',
        'k=v',
        '-grpc-use-tls',
        '-grpc-server-ca-file',
        join(dir, 'ca.crt'),
        '-grpc-cert-file',
        file('client.crt', certs.clientCert),
        '-grpc-key-file',
        file('client.key', certs.clientKey),
      ])
      expect(result.stderr).toBe('')
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(
        new RegExp(
          `^dial string: ${address}\\ndomain: tls\\ndescriptors: \\[k=v\\]\\nresponse: \\{"overallCode":"OK","statuses":\\[\\{"code":"OK","currentLimit":\\{"requestsPerUnit":5,"unit":"MINUTE"\\},"limitRemaining":4`,
        ),
      )
    })

    it('names the flag of a file it cannot read, exit 2', async () => {
      const missing = join(dir, 'missing.crt')
      expect(await run(CLIENT, ['-grpc-use-tls', '-grpc-server-ca-file', missing])).toEqual({
        code: 2,
        stdout: '',
        stderr: `gatehouse-ratelimit-client: cannot read -grpc-server-ca-file ${missing}: ENOENT: no such file or directory, open '${missing}'\n`,
      })
    })
  })
})
