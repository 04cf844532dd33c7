import { describe, expect, expectTypeOf, it } from 'vitest'
import { SETTINGS_ERROR_CODE, SETTINGS_EXIT_STATUS, SettingsError } from './errors.js'
import {
  bool,
  decimal,
  duration,
  family,
  field,
  integer,
  invalid,
  list,
  map,
  oneOf,
  port,
  secondsOrDuration,
  text,
  url,
} from './fields.js'
import { defineSettings, group, helpSummary, type Env, type SettingsOf } from './table.js'

/** The problems of reading `env` with `table` (an empty list when it is valid). */
function problemsOf(read: { finish(settings: unknown): unknown }): readonly string[] {
  try {
    read.finish({})
  } catch (error) {
    if (error instanceof SettingsError) return error.problems
    throw error
  }
  return []
}

describe('defineSettings: names', () => {
  const table = defineSettings(
    {
      siteUrl: text('SITE_URL'),
      port: integer(['API_PORT', 'PORT'], { default: '8081' }),
      logLevel: text(['LOG_LEVEL', 'LOG_LEVEL'], { default: 'info' }),
    },
    { prefixes: ['AUTHSVC_', 'GOTRUE_'], conflicts: 'first' },
  )

  it('tries each prefix in order, then the aliases as written', () => {
    const read = (env: Env) => table.read(env).values
    expect(read({ GOTRUE_SITE_URL: 'g', AUTHSVC_SITE_URL: 'a' }).siteUrl).toBe('a')
    expect(read({ GOTRUE_SITE_URL: 'g' }).siteUrl).toBe('g')
    expect(read({ SITE_URL: 'bare' }).siteUrl).toBe('')
    expect(read({ PORT: '1', GOTRUE_API_PORT: '2' }).port).toBe(2)
    expect(read({ PORT: '1' }).port).toBe(1)
    expect(read({ LOG_LEVEL: 'debug' }).logLevel).toBe('debug')
    expect(read({ LOG_LEVEL: 'debug', AUTHSVC_LOG_LEVEL: 'warn' }).logLevel).toBe('warn')
  })

  it('treats an empty variable as unset', () => {
    expect(table.read({ AUTHSVC_API_PORT: '', PORT: '7' }).values.port).toBe(7)
    expect(table.read({ AUTHSVC_API_PORT: '' }).values.port).toBe(8081)
  })

  it('names the variable that was set in a problem', () => {
    expect(table.read({ PORT: 'x' }).problems).toEqual([
      'PORT: must be an integer of at least 0 (got "x")',
    ])
    expect(table.read({ GOTRUE_API_PORT: 'x', PORT: '1' }).problems).toEqual([
      'GOTRUE_API_PORT: must be an integer of at least 0 (got "x")',
    ])
  })

  it('reports names set to different values when conflicts are errors', () => {
    const strict = defineSettings({
      url: text(['REDIS_URL', 'KVSTORE_URL'], { default: '/sock' }),
    })
    expect(strict.read({ KVSTORE_URL: 'h:1' }).values.url).toBe('h:1')
    expect(strict.read({ REDIS_URL: 'h:1', KVSTORE_URL: 'h:1' }).problems).toEqual([])
    expect(strict.read({ REDIS_URL: 'a', KVSTORE_URL: 'b' }).problems).toEqual([
      'REDIS_URL and KVSTORE_URL are both set, to different values; set one',
    ])
  })
})

describe('defineSettings: families', () => {
  const locale = (suffix: string) =>
    /^[A-Z]{2}(_[A-Z]{2})?$/.test(suffix)
      ? suffix.toLowerCase().replace('_', '-')
      : invalid('must end in a locale such as DE or PT_BR')
  const table = defineSettings(
    {
      subject: text('MAILER_SUBJECTS_INVITE', { default: 'Invited' }),
      subjects: family('MAILER_SUBJECTS_INVITE_<LOCALE>', text('member'), {
        key: locale,
        help: 'Per locale.',
      }),
      sizes: family('SIZE_<NAME>', integer('member', { min: 1 })),
      sizeLimit: integer('SIZE_LIMIT', { default: '5' }),
    },
    { prefixes: ['AUTHSVC_', 'GOTRUE_'] },
  )

  it('collects every member the environment sets, by key, with the prefixes', () => {
    const { values, problems } = table.read({
      GOTRUE_MAILER_SUBJECTS_INVITE_DE: 'Eingeladen',
      AUTHSVC_MAILER_SUBJECTS_INVITE_PT_BR: 'Convidado',
      GOTRUE_MAILER_SUBJECTS_INVITE_FR: '',
      MAILER_SUBJECTS_INVITE_IT: 'unprefixed, not read',
      GOTRUE_MAILER_SUBJECTS_INVITE: 'Hi',
    })
    expect(problems).toEqual([])
    expect(values.subjects).toEqual({ de: 'Eingeladen', 'pt-br': 'Convidado' })
    expect(values.subject).toBe('Hi')
    expect(table.read({}).values.subjects).toEqual({})
  })

  it("parses each member and never takes another field's variable as a member", () => {
    const read = table.read({ GOTRUE_SIZE_A: '2', GOTRUE_SIZE_LIMIT: '9', GOTRUE_SIZE_B: '0' })
    expect(read.values.sizes).toEqual({ A: 2 })
    expect(read.values.sizeLimit).toBe(9)
    expect(read.problems).toEqual(['GOTRUE_SIZE_B: must be an integer of at least 1 (got "0")'])
  })

  it('names the variable whose suffix is not a key, and members set twice to different values', () => {
    expect(
      table.read({
        GOTRUE_MAILER_SUBJECTS_INVITE_german: 'x',
        AUTHSVC_MAILER_SUBJECTS_INVITE_DE: 'a',
        GOTRUE_MAILER_SUBJECTS_INVITE_DE: 'b',
      }).problems,
    ).toEqual([
      'AUTHSVC_MAILER_SUBJECTS_INVITE_DE and GOTRUE_MAILER_SUBJECTS_INVITE_DE are both set, to different values; set one',
      'GOTRUE_MAILER_SUBJECTS_INVITE_german: must end in a locale such as DE or PT_BR',
    ])
  })

  it('shows the family once, with its placeholder, in --help and the README', () => {
    expect(table.help().find((line) => line.includes('<LOCALE>'))).toBe(
      `  ${'MAILER_SUBJECTS_INVITE_<LOCALE>'.padEnd(40)}  Per locale (none)`,
    )
    expect(table.markdown({ keys: ['subjects'] })).toContain('`MAILER_SUBJECTS_INVITE_<LOCALE>`')
  })

  it('refuses a family name without a placeholder', () => {
    expect(() => family('MAILER_SUBJECTS', text('member'))).toThrow(TypeError)
  })
})

describe('defineSettings: problems', () => {
  const table = defineSettings({
    siteUrl: url('SITE_URL', { required: true }),
    dbUrl: text(['DB_DATABASE_URL', 'DATABASE_URL'], {
      required: true,
      secret: true,
      check: (value) =>
        value.startsWith('postgres://')
          ? undefined
          : invalid('must be postgres://', { echo: false }),
    }),
    driver: field(
      'DB_DRIVER',
      (value) => (value === 'postgres' ? value : invalid('must be postgres')),
      {
        required: 'required; must be postgres',
      },
    ),
    secret: text('JWT_SECRET', { secret: true }),
    port: port('PORT', { default: '8080' }),
    ratio: decimal('NEAR_LIMIT_RATIO', { default: '0.8', min: 0, max: 1 }),
    workers: integer('WORKERS', { default: '1', min: 1, max: 64 }),
    useStatsd: bool('USE_STATSD', { default: 'true' }),
  })

  it('lists every problem at once, in table order, whatever order they were found in', () => {
    const read = table.read({
      USE_STATSD: 'maybe',
      SITE_URL: 'not a url',
      PORT: 'eighty',
      NEAR_LIMIT_RATIO: '1.5',
      WORKERS: '0',
      DB_DRIVER: 'mysql',
    })
    read.report(table.fields.secret, 'required unless JWT_KEYS holds a signing key')
    const problems = problemsOf(read)
    expect(problems).toEqual([
      'SITE_URL: must be an absolute URL (got "not a url")',
      'DB_DATABASE_URL (or DATABASE_URL): required',
      'DB_DRIVER: must be postgres (got "mysql")',
      'JWT_SECRET: required unless JWT_KEYS holds a signing key',
      'PORT: must be an integer from 0 to 65535 (got "eighty")',
      'NEAR_LIMIT_RATIO: must be a number from 0 to 1 (got "1.5")',
      'WORKERS: must be an integer from 1 to 64 (got "0")',
      'USE_STATSD: must be a boolean (true/false/1/0) (got "maybe")',
    ])
    expect(read.problems).toEqual(problems)
  })

  it('throws one SettingsError with a code and every problem in its message', () => {
    const read = table.read({ SITE_URL: 'http://site', DATABASE_URL: 'postgres://db' })
    expect(() => read.finish({})).toThrow(SettingsError)
    try {
      read.finish({})
    } catch (error) {
      expect(error).toMatchObject({
        name: 'SettingsError',
        code: SETTINGS_ERROR_CODE,
        message: 'invalid settings:\n  DB_DRIVER: required; must be postgres',
        problems: ['DB_DRIVER: required; must be postgres'],
      })
    }
    expect(SETTINGS_EXIT_STATUS).toBe(2)
  })

  it('never shows a secret: (got a value), or nothing when the check says so', () => {
    const read = table.read({
      SITE_URL: 'http://site',
      DATABASE_URL: 'mysql://user:pw@host/db',
      DB_DRIVER: 'postgres',
      JWT_SECRET: 'short',
    })
    read.report(table.fields.secret, 'must be at least 32 bytes long')
    expect(read.problems).toEqual([
      'DATABASE_URL: must be postgres://',
      'JWT_SECRET: must be at least 32 bytes long (got a value)',
    ])
    expect(read.problems.join()).not.toMatch(/pw@host|short/)
  })

  it('returns the settings deep-frozen when there is no problem', () => {
    const read = table.read({
      SITE_URL: 'http://site',
      DATABASE_URL: 'postgres://db',
      DB_DRIVER: 'postgres',
      USE_STATSD: 'F',
    })
    expect(read.problems).toEqual([])
    const settings = read.finish({ nested: { ...read.values } })
    expect(settings.nested).toMatchObject({ port: 8080, ratio: 0.8, workers: 1, useStatsd: false })
    expect(Object.isFrozen(settings)).toBe(true)
    expect(Object.isFrozen(settings.nested)).toBe(true)
  })

  it('refuses a field that is not in the table', () => {
    const read = table.read({})
    expect(() => {
      read.report(text('ELSEWHERE'), 'nope')
    }).toThrow('ELSEWHERE is not in this table')
  })
})

describe('defineSettings: defaults', () => {
  it('parses defaults as set values would be, and refuses an invalid one as a bug', () => {
    const table = defineSettings({
      timeoutMs: duration('TIMEOUT', { default: '1m30s' }),
      roles: list('ROLES', { default: 'service_role, supabase_admin' }),
      tags: map('TAGS'),
    })
    expect(table.read({}).values).toEqual({
      timeoutMs: 90_000,
      roles: ['service_role', 'supabase_admin'],
      tags: {},
    })
    expect(() => defineSettings({ n: integer('N', { default: 'many' }) }).read({})).toThrow(
      'the default "many" of N is invalid: must be an integer of at least 0',
    )
    expect(() => defineSettings({ d: decimal('D') }).read({})).toThrow(
      'the default "" of D is invalid',
    )
    expect(defineSettings({ b: bool('B') }).read({}).values.b).toBe(false)
  })

  it('computes defaults from other values and a context, unless the variable is set', () => {
    const table = defineSettings(
      {
        backend: oneOf('BACKEND_TYPE', ['redis', 'memory'], { default: 'redis' }),
        workers: integer('WORKERS', { min: 1 }),
        main: group({ ca: text('TLS_CACERT') }),
        perSecond: group({ ca: text('PERSECOND_TLS_CACERT') }),
      },
      {
        computedDefaults: (values, cores: number | undefined) => ({
          workers: values.backend === 'redis' && (cores ?? 1) >= 2 ? '2' : '1',
          perSecond: { ca: values.main.ca },
        }),
      },
    )
    expect(table.read({}, 4).values).toEqual({
      backend: 'redis',
      workers: 2,
      main: { ca: '' },
      perSecond: { ca: '' },
    })
    expect(table.read({ BACKEND_TYPE: 'memory' }, 4).values.workers).toBe(1)
    expect(table.read({ WORKERS: '3' }, 4).values.workers).toBe(3)
    expect(table.read({}).values.workers).toBe(1)
    expect(table.read({ TLS_CACERT: '/ca.pem' }).values.perSecond.ca).toBe('/ca.pem')
    expect(table.read({ TLS_CACERT: '/ca', PERSECOND_TLS_CACERT: '/p' }).values.perSecond.ca).toBe(
      '/p',
    )
    expect(table.defaults(4).get('WORKERS')).toBe('2')
    expect(table.defaults().get('WORKERS')).toBe('1')
  })

  it('refuses a field object standing twice', () => {
    const twice = text('TWICE')
    expect(() => defineSettings({ a: twice, b: twice })).toThrow(TypeError)
  })
})

describe('defineSettings: kinds', () => {
  const problem = (f: Parameters<typeof defineSettings>[0], env: Env) =>
    defineSettings(f).read(env).problems

  it('reads durations in milliseconds, never negative, positive when asked', () => {
    const f = {
      d: duration('D', { default: '10s' }),
      p: duration('P', { default: '1s', positive: true }),
    }
    expect(defineSettings(f).read({ D: '150us', P: '1h' }).values).toEqual({
      d: 0.15,
      p: 3_600_000,
    })
    expect(problem(f, { D: '-1s', P: '0s' })).toEqual([
      'D: must be a non-negative Go duration such as 10s, 1m30s or 150ms (got "-1s")',
      'P: must be greater than zero (got "0s")',
    ])
    expect(problem(f, { D: '10 seconds' })).toEqual([
      'D: must be a non-negative Go duration such as 10s, 1m30s or 150ms (got "10 seconds")',
    ])
  })

  it('reads whole seconds or a Go duration, in seconds or milliseconds', () => {
    const f = {
      s: secondsOrDuration('S', { unit: 's', default: '0' }),
      ms: secondsOrDuration('MS', { unit: 'ms', default: '10s' }),
    }
    const values = (env: Env) => defineSettings(f).read(env).values
    expect(values({})).toEqual({ s: 0, ms: 10_000 })
    expect(values({ S: '10', MS: '30' })).toEqual({ s: 10, ms: 30_000 })
    expect(values({ S: '1m30s', MS: '1.5us' })).toEqual({ s: 90, ms: 1 })
    expect(values({ S: '1500ms', MS: '250ms' })).toEqual({ s: 1.5, ms: 250 })
    expect(problem(f, { S: 'soon', MS: '-1s' })).toEqual([
      'S: must be a number of seconds or a duration such as 10s (got "soon")',
      'MS: must be a number of seconds or a duration such as 10s (got "-1s")',
    ])
  })

  it('reads integers as Go does: a sign and digits, nothing else', () => {
    const f = { n: integer('N', { default: '0', min: -5 }) }
    const n = (value: string) => defineSettings(f).read({ N: value })
    expect([n('+3').values.n, n('-5').values.n, n('007').values.n]).toEqual([3, -5, 7])
    for (const bad of [' 3', '3 ', '1.0', '1e3', '0x10', '9007199254740993', '-6']) {
      expect(n(bad).problems, bad).toEqual([`N: must be an integer of at least -5 (got "${bad}")`])
    }
  })

  it('reads one of a set of values without regard to case', () => {
    const f = { t: oneOf('SOCKET_TYPE', ['tcp', 'unix'], { default: 'unix' }) }
    expect(defineSettings(f).read({ SOCKET_TYPE: 'TCP' }).values.t).toBe('tcp')
    expect(problem(f, { SOCKET_TYPE: 'udp' })).toEqual([
      'SOCKET_TYPE: must be one of tcp, unix (got "udp")',
    ])
  })

  it('reads lists and maps', () => {
    const f = { l: list('L'), m: map('M') }
    expect(defineSettings(f).read({ L: 'a, b,', M: 'k:v,x:y:z' }).values).toEqual({
      l: ['a', 'b'],
      m: { k: 'v', x: 'y:z' },
    })
    expect(problem(f, { M: 'k=v' })).toEqual([
      'M: must be a list of key:value pairs separated by commas (got "k=v")',
    ])
  })

  it('lists several problems of one variable', () => {
    const f = {
      keys: field('KEYS', (value) =>
        value === '' ? [] : invalid(['key 0 is bad', 'key 2 is bad'], { echo: false }),
      ),
    }
    expect(problem(f, { KEYS: '[]' })).toEqual(['KEYS: key 0 is bad', 'KEYS: key 2 is bad'])
  })
})

describe('defineSettings: help', () => {
  it('lists every variable once with its default, help text and note', () => {
    const table = defineSettings(
      {
        siteUrl: url('SITE_URL', { required: true, help: 'base URL of the site' }),
        port: port(['API_PORT', 'PORT'], { default: '8081', help: 'listen port' }),
        level: text(['LOG_LEVEL', 'LOG_LEVEL'], { default: 'info' }),
        prefix: text('CACHE_KEY_PREFIX'),
        concurrency: integer('PASSWORD_HASH_CONCURRENCY', {
          default: '0',
          help: 'bcrypt hashes at once',
          note: 'one per CPU core',
        }),
        pool: integer('POOL', { default: '0', note: 'half' }),
        aud: text('JWT_AUD', { help: 'default audience' }),
        driver: text('DB_DRIVER', { required: true }),
      },
      { prefixes: ['AUTHSVC_'] },
    )
    expect(table.help(undefined, { width: 26 })).toEqual([
      '  SITE_URL                    base URL of the site (required)',
      '  API_PORT | PORT             listen port (8081)',
      '  LOG_LEVEL                   info',
      '  CACHE_KEY_PREFIX            (none)',
      '  PASSWORD_HASH_CONCURRENCY   bcrypt hashes at once (0: one per CPU core)',
      '  POOL                        (0: half)',
      '  JWT_AUD                     default audience (none)',
      '  DB_DRIVER                   (required)',
    ])
    expect([...table.defaults()]).toEqual([
      ['SITE_URL', ''],
      ['API_PORT | PORT', '8081'],
      ['LOG_LEVEL', 'info'],
      ['CACHE_KEY_PREFIX', ''],
      ['PASSWORD_HASH_CONCURRENCY', '0'],
      ['POOL', '0'],
      ['JWT_AUD', ''],
      ['DB_DRIVER', ''],
    ])
  })
})

describe('defineSettings: one description for --help and the README', () => {
  const table = defineSettings({
    port: port('PORT', {
      default: '8080',
      help: 'HTTP port (`/json`). See [TLS](#tls) for more. Ignored with `GRPC_UDS`.',
    }),
    redis: group({
      url: text(['REDIS_URL', 'KVSTORE_URL'], { help: 'Address: `host:port` | a path' }),
      poolSize: integer(['REDIS_POOL_SIZE', 'KVSTORE_POOL_SIZE'], { default: '10' }),
    }),
    workers: integer('WORKERS', {
      min: 1,
      default: '1',
      help: 'Processes.',
      computedDefault: '`2` on 2+ cores, else `1`',
    }),
    key: text('KEY', { required: true, help: 'The key.' }),
    level: integer('LEVEL', { default: '0', note: 'one per CPU core' }),
  })

  it('shows the first sentence, as plain text, in --help', () => {
    expect(table.help(undefined, { width: 10 })[0]).toBe('  PORT        HTTP port (/json) (8080)')
    expect(helpSummary('Close after this age (±10%). Then more.')).toBe(
      'Close after this age (±10%)',
    )
    expect(helpSummary('e.g. a host; `0` never')).toBe('e.g. a host; 0 never')
  })

  it('wraps a long first sentence under itself in --help', () => {
    expect(table.help(undefined, { width: 10, columns: 40 })[0]).toBe(
      ['  PORT        HTTP port (/json) (8080)'].join('\n'),
    )
    const long = defineSettings({
      a: text('A', { help: 'one two three four five six seven eight nine ten eleven' }),
    })
    expect(long.help(undefined, { width: 4, columns: 30 })).toEqual([
      '  A     one two three four\n        five six seven eight\n        nine ten eleven (none)',
    ])
  })

  it('renders a README table: names with aliases, defaults, computed defaults, whole descriptions', () => {
    expect(table.markdown().split('\n')).toEqual([
      '| Variable                                | Default                   | Meaning                                                                 |',
      '| --------------------------------------- | ------------------------- | ----------------------------------------------------------------------- |',
      '| `PORT`                                  | `8080`                    | HTTP port (`/json`). See [TLS](#tls) for more. Ignored with `GRPC_UDS`. |',
      '| `REDIS_URL` / `KVSTORE_URL`             | (empty)                   | Address: `host:port` \\| a path                                          |',
      '| `REDIS_POOL_SIZE` / `KVSTORE_POOL_SIZE` | `10`                      |                                                                         |',
      '| `WORKERS`                               | `2` on 2+ cores, else `1` | Processes.                                                              |',
      '| `KEY`                                   | required                  | The key.                                                                |',
      '| `LEVEL`                                 | `0` (one per CPU core)    |                                                                         |',
    ])
  })

  it('renders the fields of some keys and groups, in the order of the keys', () => {
    const rows = (keys: string[]) =>
      table
        .markdown({ keys })
        .split('\n')
        .slice(2)
        .map((line) => line.split('|')[1]?.trim())
    expect(rows(['key', 'redis', 'redis.url'])).toEqual([
      '`KEY`',
      '`REDIS_URL` / `KVSTORE_URL`',
      '`REDIS_POOL_SIZE` / `KVSTORE_POOL_SIZE`',
    ])
    expect(rows(['redis.poolSize'])).toEqual(['`REDIS_POOL_SIZE` / `KVSTORE_POOL_SIZE`'])
    expect(() => table.markdown({ keys: ['redis.nope'] })).toThrow(
      'redis.nope names no field or group of the settings table',
    )
  })

  it('derives the settings type from the table', () => {
    const settings: SettingsOf<typeof table> = table.read({ KEY: 'k' }).values
    expectTypeOf(settings.redis.poolSize).toEqualTypeOf<number>()
    expectTypeOf(settings.key).toEqualTypeOf<string>()
    expect(settings.redis.poolSize).toBe(10)
  })
})
