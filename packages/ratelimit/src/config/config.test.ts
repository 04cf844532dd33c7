import { describe, expect, it } from 'vitest'
import { fixture } from '../../test/fixtures.js'
import type { Descriptor } from '../protocol/types.js'
import { StatsManager } from '../stats/manager.js'
import { StatsStore } from '../stats/store.js'
import { RateLimitConfig, type ConfigFile } from './config.js'

function load(
  files: ConfigFile[],
  mergeDomainConfig = false,
): { config: RateLimitConfig; store: StatsStore } {
  const store = new StatsStore()
  const config = RateLimitConfig.load(files, { stats: new StatsManager(store), mergeDomainConfig })
  return { config, store }
}

function own(name: string): ConfigFile {
  return { name, content: fixture(`config/${name}`) }
}

function d(...pairs: [string, string][]): Descriptor {
  return { entries: pairs.map(([key, value]) => ({ key, value })) }
}

function messageOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return (error as Error).message
  }
  return undefined
}

function counter(store: StatsStore, name: string): number {
  return store.snapshot().find((s) => s.name === name)?.value ?? 0
}

describe('configuration validation (upstream error texts, full messages)', () => {
  it.each([
    ['float_key.yaml', 'float_key.yaml: config error, key is not of type string: 1.5'],
    ['typo_rate_limit.yaml', "typo_rate_limit.yaml: config error, unknown key 'ratelimit'"],
    [
      'typo_requests_per_unit.yaml',
      "typo_requests_per_unit.yaml: config error, unknown key 'requestsPerUnit'",
    ],
    [
      'scalar_list.yaml',
      'scalar_list.yaml: config error, yaml file contains list of type other than map: checkout',
    ],
    ['no_domain.yaml', 'no_domain.yaml: config file cannot have empty domain'],
    ['no_key.yaml', 'no_key.yaml: descriptor has empty key'],
    [
      'duplicate_rule.yaml',
      "duplicate_rule.yaml: duplicate descriptor composite key 'shop.tenant_acme'",
    ],
    ['unit_fortnight.yaml', "unit_fortnight.yaml: invalid rate limit unit 'fortnight'"],
    [
      'unlimited_and_unit.yaml',
      'unlimited_and_unit.yaml: should not specify rate limit unit when unlimited',
    ],
    ['replaces_blank.yaml', 'replaces_blank.yaml: should not have an empty replaces entry'],
    [
      'replaces_itself.yaml',
      'replaces_itself.yaml: replaces should not contain name of same descriptor',
    ],
  ])('rejects %s', (name, message) => {
    expect(messageOf(() => load([own(name)]))).toBe(message)
    try {
      load([own(name)])
    } catch (error) {
      expect((error as Error).message).toBe(message)
      expect(error).toMatchObject({ code: 'ERR_RATELIMIT_CONFIG', fileName: name })
    }
  })

  it('reports a file that ends inside a quoted string with its line', () => {
    // Kept inline: a file with a syntax error cannot sit in the repository (Prettier parses it).
    const content = "domain: '''\n"
    expect(messageOf(() => load([{ name: 'open_quote.yaml', content }]))).toBe(
      'open_quote.yaml: error loading config file: yaml: line 2: found unexpected end of stream',
    )
  })

  it('names the second file when a domain is defined twice', () => {
    expect(messageOf(() => load([own('matching.yaml'), own('shop_accounts.yaml')]))).toBe(
      "shop_accounts.yaml: duplicate domain 'shop' in config file",
    )
  })

  it('merges files of one domain with MERGE_DOMAIN_CONFIG', () => {
    const files = [own('shop_orders.yaml'), own('shop_accounts.yaml')]
    expect(messageOf(() => load(files))).toBe(
      "shop_accounts.yaml: duplicate domain 'shop' in config file",
    )
    const { config } = load(files, true)
    expect(config.getLimit('shop', d(['orders', 'create']))?.requestsPerUnit).toBe(12)
    expect(config.getLimit('shop', d(['accounts', 'signup']))?.requestsPerUnit).toBe(3)
  })

  it('still rejects duplicate keys across merged files', () => {
    const file = own('shop_orders.yaml')
    expect(messageOf(() => load([file, { ...file, name: 'again.yaml' }], true))).toBe(
      "again.yaml: duplicate descriptor composite key 'shop.orders_create'",
    )
  })

  it('loads every valid fixture', () => {
    for (const [name, domain] of [
      ['matching.yaml', 'shop'],
      ['shadow.yaml', 'trial'],
      ['wildcards.yaml', 'paths'],
      ['shared_counters.yaml', 'media'],
      ['metadata.yaml', 'billing'],
    ] as const) {
      expect(load([own(name)]).config.domains).toEqual([domain])
    }
  })
})

describe('configuration validation (further cases, full messages)', () => {
  it.each([
    ['float_value.yaml', 'float_value.yaml: error checking config'],
    [
      'share_threshold_without_wildcard.yaml',
      "share_threshold_without_wildcard.yaml: share_threshold can only be used with wildcard values (containing '*'), but found key 'route_api'",
    ],
    ['missing_unit.yaml', "missing_unit.yaml: invalid rate limit unit ''"],
    ['unknown_unit.yaml', "unknown_unit.yaml: invalid rate limit unit 'unknown'"],
    [
      'wrong_types.yaml',
      'wrong_types.yaml: error loading config file: yaml: unmarshal errors:\n  line 6: cannot unmarshal !!str `many` into uint32\n  line 7: cannot unmarshal !!str `sometimes` into bool',
    ],
    [
      'negative_limit.yaml',
      'negative_limit.yaml: error loading config file: yaml: unmarshal errors:\n  line 6: cannot unmarshal !!int `-1` into uint32',
    ],
    [
      'list_root.yaml',
      'list_root.yaml: error loading config file: yaml: unmarshal errors:\n  line 1: cannot unmarshal !!seq into map[interface {}]interface {}',
    ],
    [
      'nested_list_element.yaml',
      'nested_list_element.yaml: config error, yaml file contains list of type other than map: [a b]',
    ],
    ['bool_key.yaml', 'bool_key.yaml: config error, key is not of type string: true'],
    [
      'duplicate_nested_key.yaml',
      "duplicate_nested_key.yaml: duplicate descriptor composite key 'test-domain.key1_value1.subkey'",
    ],
    [
      'scalar_descriptors.yaml',
      'scalar_descriptors.yaml: error loading config file: yaml: unmarshal errors:\n  line 2: cannot unmarshal !!str `everything` into []config.YamlDescriptor',
    ],
    ['empty.yaml', 'empty.yaml: config file cannot have empty domain'],
  ])('rejects %s', (name, message) => {
    expect(messageOf(() => load([own(name)]))).toBe(message)
  })

  it('reports other YAML syntax errors with their line', () => {
    // Kept inline: a file with a syntax error cannot sit in the repository (Prettier parses it).
    const content = 'domain: test-domain\ndescriptors: [\n'
    expect(messageOf(() => load([{ name: 'unclosed_flow.yaml', content }]))).toBe(
      'unclosed_flow.yaml: error loading config file: yaml: line 3: Flow sequence in block collection must be sufficiently indented and end with a ]',
    )
  })

  it('accepts YAML 1.1 anchors, merge keys, numeric values and mixed-case units', () => {
    const { config } = load([own('merge_keys.yaml')])
    expect(config.getLimit('test-domain', d(['derived', 'x']))).toMatchObject({
      requestsPerUnit: 9,
      unit: 'MINUTE',
    })
    expect(config.getLimit('test-domain', d(['numeric', '123']))).toMatchObject({
      requestsPerUnit: 16,
      unit: 'WEEK',
    })
  })
})

describe('matching (matching.yaml)', () => {
  const { config, store } = load([own('matching.yaml')])
  const limit = (...pairs: [string, string][]) => config.getLimit('shop', d(...pairs))

  it('counts unknown domains and matches nothing', () => {
    expect(config.getLimit('foo_domain', d(['foo', 'bar']))).toBeUndefined()
    expect(counter(store, 'ratelimit.service.rate_limit.foo_domain.domain_not_found')).toBe(1)
  })

  it('requires the request depth to match the rule depth', () => {
    expect(limit(['unknown', 'x'])).toBeUndefined()
    expect(limit(['tenant', 'acme'])).toBeUndefined()
    expect(limit(['plan', 'pro'], ['route', 'x'])).toBeUndefined()
    expect(limit(['region', 'eu'], ['zone', 'eu-west'], ['extra', 'x'])).toBeUndefined()
  })

  it('prefers key+value over the bare key at each level', () => {
    expect(limit(['tenant', 'acme'], ['route', 'something'])).toMatchObject({
      requestsPerUnit: 5,
      unit: 'SECOND',
      fullKey: 'shop.tenant_acme.route',
    })
    expect(limit(['tenant', 'acme'], ['route', 'checkout'])).toMatchObject({
      requestsPerUnit: 10,
      fullKey: 'shop.tenant_acme.route_checkout',
    })
    expect(limit(['plan', 'something'])).toMatchObject({ requestsPerUnit: 20, unit: 'MINUTE' })
    expect(limit(['plan', ''])).toMatchObject({ requestsPerUnit: 20 })
    expect(limit(['plan', 'pro'])).toMatchObject({ requestsPerUnit: 30 })
  })

  it('allow-lists a key+value without a limit (the bare key is not tried)', () => {
    expect(limit(['plan', 'internal'])).toBeUndefined()
  })

  it('uses rules on intermediate nodes only at their own depth', () => {
    expect(limit(['region', 'eu'])).toMatchObject({ requestsPerUnit: 15, unit: 'DAY' })
    expect(limit(['region', 'eu'], ['zone', 'eu-west'])).toMatchObject({
      requestsPerUnit: 25,
    })
  })

  it('returns names, unlimited rules and detailed-metric stats keys', () => {
    expect(limit(['export', 'foo'])).toMatchObject({ requestsPerUnit: 1, unit: 'HOUR' })
    expect(limit(['report', 'foo'])).toMatchObject({ name: 'daily_report', unit: 'DAY' })
    expect(limit(['healthcheck', 'foo'])).toMatchObject({ unlimited: true })
    expect(limit(['user', 'unspecified_value'])?.stats.key).toBe('shop.user_unspecified_value')
    expect(limit(['tenant', 'acme'], ['route', 'x'])?.stats.key).toBe('shop.tenant_acme.route')
  })

  it('applies a descriptor override without a config match, only in known domains', () => {
    const override: Descriptor = {
      entries: [
        { key: 'tenant', value: 'acme' },
        { key: 'nothing', value: '' },
      ],
      limit: { requestsPerUnit: 42, unit: 'HOUR' },
    }
    const result = config.getLimit('shop', override)
    expect(result).toMatchObject({
      requestsPerUnit: 42,
      unit: 'HOUR',
      shadowMode: false,
      unlimited: false,
    })
    expect(result?.stats.key).toBe('shop.tenant_acme.nothing')
    expect(config.getLimit('other-domain', override)).toBeUndefined()
  })

  it('matches a literal key containing "_" against key and value (upstream quirk)', () => {
    const quirk = load([
      {
        name: 'q.yaml',
        content:
          'domain: d\ndescriptors:\n  - key: a_b\n    rate_limit: {unit: second, requests_per_unit: 1}\n',
      },
    ])
    expect(quirk.config.getLimit('d', d(['a', 'b']))?.fullKey).toBe('d.a_b')
  })
})

describe('matching wildcards (wildcards.yaml)', () => {
  const { config } = load([own('wildcards.yaml')])
  const key = (...pairs: [string, string][]) => config.getLimit('paths', d(...pairs))?.stats.key

  it('matches a trailing wildcard and keeps the pattern in the stats key', () => {
    expect(key(['prefix', 'img1'])).toBe('paths.prefix_img*')
    expect(key(['prefix', 'img'])).toBe('paths.prefix_img*')
    expect(key(['prefix', 'doc'])).toBeUndefined()
    expect(key(['exact', 'img1'])).toBeUndefined()
    expect(key(['exact', 'img'])).toBe('paths.exact_img')
  })

  it('matches middle and multiple wildcards, segments in order', () => {
    expect(key(['middle', 'log-2026.txt'])).toBe('paths.middle_log*.txt')
    expect(key(['middle', 'log.txt'])).toBe('paths.middle_log*.txt')
    expect(key(['middle', 'log'])).toBeUndefined()
    expect(key(['multi', 'eu-west-prod-main-db'])).toBe('paths.multi_eu*prod*db')
    expect(key(['multi', 'euproddb'])).toBe('paths.multi_eu*prod*db')
    expect(key(['multi', 'eudb'])).toBeUndefined()
    expect(key(['multi', 'dbprodeu'])).toBeUndefined()
  })

  it('matches wildcards in nested levels', () => {
    expect(key(['team', 'core'], ['job', 'build-7'])).toBe('paths.team_core.job_build*')
    expect(key(['team', 'web'], ['job', 'build-7'])).toBeUndefined()
  })

  it('tries key+value before wildcards before the bare key', () => {
    const { config: c } = load([
      {
        name: 'order.yaml',
        content: `domain: d
descriptors:
  - key: k
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: k
    value: a*
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: k
    value: ab*
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: k
    value: abc
    rate_limit: {unit: second, requests_per_unit: 4}
`,
      },
    ])
    const rpu = (value: string) => c.getLimit('d', d(['k', value]))?.requestsPerUnit
    expect(rpu('abc')).toBe(4)
    expect(rpu('abd')).toBe(2) // first wildcard in config order wins
    expect(rpu('zzz')).toBe(1)
  })
})

describe('share_threshold (shared_counters.yaml)', () => {
  const { config } = load([own('shared_counters.yaml')])
  const get = (...pairs: [string, string][]) => config.getLimit('media', d(...pairs))

  it('shares one counter per pattern and uses the pattern in stats keys', () => {
    const a = get(['object', 'photos/a.jpg'])
    const b = get(['object', 'photos/b.jpg'])
    expect(a?.sharePatterns).toEqual(['photos/*'])
    expect(b?.stats.key).toBe('media.object_photos/*')
    expect(a?.stats).toBe(b?.stats)
    expect(get(['album', 'summer'], ['object', 'summer/x'])?.stats.key).toBe(
      'media.album_summer.object_summer/*',
    )
    expect(get(['object', 'archive/x'], ['object', '2024/y'])).toMatchObject({
      sharePatterns: ['archive/*', '2024/*'],
    })
    expect(get(['object', 'archive/x'], ['object', '2024/y'])?.stats.key).toBe(
      'media.object_archive/*.object_2024/*',
    )
  })

  it('lets share_threshold beat value_to_metric and combine with detailed_metric', () => {
    expect(get(['route', 'api/v1'], ['verb', 'GET'])?.stats.key).toBe('media.route_api/*.verb')
    expect(get(['backend', 'svc/a'], ['call', 'get'])?.stats.key).toBe(
      'media.backend_svc/*.call_get',
    )
    expect(get(['gateway', '/gw/xv2'])?.stats.key).toBe('media.gateway_/gw*v2')
    expect(get(['queue', 'q-in-low'])?.stats.key).toBe('media.queue_q*in*low')
  })

  it('mixes shared and unshared wildcards per level', () => {
    const limit = get(['dir', 'docs/a'], ['doc', 'draft/b'], ['format', 'pdf'])
    expect(limit?.sharePatterns).toEqual(['docs/*'])
    expect(limit?.stats.key).toBe('media.dir_docs/*.doc_draft/*.format')
    expect(get(['env', 'eu-prod'], ['store', 's1v2'])?.stats.key).toBe(
      'media.env_e*prod.store_s*v2',
    )
  })

  it('gives an explicit value its own counter', () => {
    expect(get(['sku', 'A100'])).toMatchObject({ requestsPerUnit: 50, sharePatterns: undefined })
    expect(get(['sku', 'A200'])).toMatchObject({ requestsPerUnit: 100, sharePatterns: ['A*'] })
  })
})

describe('value_to_metric and detailed_metric', () => {
  const { config } = load([
    {
      name: 'metrics.yaml',
      content: `domain: domain
descriptors:
  - key: route
    value_to_metric: true
    descriptors:
      - key: http_method
        value: GET
        descriptors:
          - key: subject_id
            rate_limit: {unit: minute, requests_per_unit: 60}
  - key: k1
    descriptors:
      - key: k2
        value_to_metric: true
        descriptors:
          - key: k3
            rate_limit: {unit: minute, requests_per_unit: 60}
  - key: plain
    descriptors:
      - key: k2
        descriptors:
          - key: k3
            rate_limit: {unit: minute, requests_per_unit: 60}
  - key: user
    value_to_metric: true
    descriptors:
      - key: action
        value: read*
        value_to_metric: true
        descriptors:
          - key: resource
            rate_limit: {unit: minute, requests_per_unit: 60}
  - key: detailed
    value_to_metric: true
    descriptors:
      - key: subject_id
        detailed_metric: true
        rate_limit: {unit: minute, requests_per_unit: 60}
`,
    },
  ])
  const key = (...pairs: [string, string][]) => config.getLimit('domain', d(...pairs))?.stats.key

  it('writes runtime values where the flag is set', () => {
    expect(key(['route', 'draw'], ['http_method', 'GET'], ['subject_id', '123'])).toBe(
      'domain.route_draw.http_method_GET.subject_id',
    )
    expect(key(['k1', 'X'], ['k2', 'Y'], ['k3', 'Z'])).toBe('domain.k1.k2_Y.k3')
    expect(key(['plain', 'X'], ['k2', 'Y'], ['k3', 'Z'])).toBe('domain.plain.k2.k3')
    expect(key(['user', 'alice'], ['action', 'readfile'], ['resource', 'r1'])).toBe(
      'domain.user_alice.action_readfile.resource',
    )
  })

  it('lets detailed_metric on the leaf take precedence', () => {
    expect(key(['detailed', 'x'], ['subject_id', '123'])).toBe('domain.detailed_x.subject_id_123')
  })

  it('sanitizes stat names (":" "|" and IPv4 dots)', () => {
    const { config: c } = load([
      {
        name: 'ip.yaml',
        content:
          'domain: d\ndescriptors:\n  - key: ip\n    detailed_metric: true\n    rate_limit: {unit: second, requests_per_unit: 1}\n',
      },
    ])
    expect(c.getLimit('d', d(['ip', '10.0.0.1:80|x']))?.stats.key).toBe('d.ip_10_0_0_1_80_x')
  })
})

/** A "billion laughs" document: `levels` anchors, each a list of nine aliases of the previous. */
function aliasBomb(levels: number): string {
  const lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x]']
  for (let i = 1; i <= levels; i++) {
    const previous = `*a${String(i - 1)}`
    lines.push(
      `a${String(i)}: &a${String(i)} [${Array.from({ length: 9 }, () => previous).join(', ')}]`,
    )
  }
  return `${lines.join('\n')}\n`
}

describe('YAML aliases', () => {
  it('refuses a document that is mostly alias expansion, as yaml.v2 does (no exponential work)', () => {
    // 4.8 million nodes once expanded, from 360 bytes.
    const content = aliasBomb(6)
    expect(content.length).toBeLessThan(400)
    expect(messageOf(() => load([{ name: 'bomb.yaml', content }]))).toBe(
      'bomb.yaml: error loading config file: yaml: document contains excessive aliasing',
    )
  })

  it('refuses an anchor that contains itself with yaml.v2 text', () => {
    expect(messageOf(() => load([{ name: 'self.yaml', content: 'domain: &a [*a]\n' }]))).toBe(
      "self.yaml: error loading config file: yaml: anchor 'a' value contains itself",
    )
  })

  it('still expands ordinary aliases and merge keys', () => {
    const rules = Array.from(
      { length: 300 },
      (_, i) => `  - key: k${String(i)}\n    rate_limit: *standard\n`,
    ).join('')
    const content =
      'domain: d\ndescriptors:\n  - key: base\n    rate_limit: &standard {unit: minute, requests_per_unit: 7}\n' +
      '  - key: merged\n    rate_limit:\n      <<: *standard\n      requests_per_unit: 9\n' +
      rules
    const { config } = load([{ name: 'aliases.yaml', content }])
    expect(config.getLimit('d', d(['k299', 'x']))).toMatchObject({
      requestsPerUnit: 7,
      unit: 'MINUTE',
    })
    expect(config.getLimit('d', d(['merged', 'x']))).toMatchObject({
      requestsPerUnit: 9,
      unit: 'MINUTE',
    })
  })
})

describe('dump (/rlconfig)', () => {
  it('prints one line per rule in upstream format', () => {
    const { config } = load([own('matching.yaml')])
    const lines = config.dump().trimEnd().split('\n')
    expect(lines).toContain(
      'shop.tenant_acme.route: unit=SECOND requests_per_unit=5, shadow_mode: false, quota_mode: false',
    )
    expect(lines).toContain(
      'shop.healthcheck: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, quota_mode: false',
    )
    expect(lines).not.toContain(expect.stringContaining('plan_internal'))
    expect(lines).toHaveLength(10)
  })
})

describe('algorithm and burst (issue 15)', () => {
  const limitOf = (config: RateLimitConfig, key: string) =>
    config.getLimit('algorithms', d([key, '']))

  it('reads each rule algorithm and burst; rules naming none use the default', () => {
    const { config } = load([own('algorithms.yaml')])
    expect(limitOf(config, 'fixed')).toMatchObject({ algorithm: 'fixed_window', burst: 5 })
    expect(limitOf(config, 'sliding')).toMatchObject({ algorithm: 'sliding_window', burst: 5 })
    expect(limitOf(config, 'bucket')).toMatchObject({
      algorithm: 'token_bucket',
      burst: 20,
      requestsPerUnit: 10,
      unit: 'SECOND',
    })
    expect(limitOf(config, 'bucket_default_burst')).toMatchObject({
      algorithm: 'token_bucket',
      burst: 7,
    })
  })

  it('applies RATE_LIMIT_ALGORITHM to rules and descriptor overrides that name none', () => {
    const store = new StatsStore()
    const config = RateLimitConfig.load([own('algorithms.yaml')], {
      stats: new StatsManager(store),
      defaultAlgorithm: 'sliding_window',
    })
    expect(limitOf(config, 'fixed')?.algorithm).toBe('sliding_window')
    expect(limitOf(config, 'bucket')?.algorithm).toBe('token_bucket')
    const override = config.getLimit('algorithms', {
      entries: [{ key: 'x', value: 'y' }],
      limit: { requestsPerUnit: 3, unit: 'SECOND' },
    })
    expect(override).toMatchObject({ algorithm: 'sliding_window', burst: 3 })
  })

  it('dumps upstream lines unchanged and appends the algorithm of the others', () => {
    const lines = load([own('algorithms.yaml')])
      .config.dump()
      .trimEnd()
      .split('\n')
    expect(lines).toEqual([
      'algorithms.fixed: unit=MINUTE requests_per_unit=5, shadow_mode: false, quota_mode: false',
      'algorithms.sliding: unit=MINUTE requests_per_unit=5, shadow_mode: false, quota_mode: false, algorithm: sliding_window',
      'algorithms.bucket: unit=SECOND requests_per_unit=10, shadow_mode: false, quota_mode: false, algorithm: token_bucket, burst: 20',
      'algorithms.bucket_default_burst: unit=HOUR requests_per_unit=7, shadow_mode: false, quota_mode: false, algorithm: token_bucket, burst: 7',
      'algorithms.free: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, quota_mode: false',
    ])
  })

  it.each([
    [
      'unknown_algorithm.yaml',
      "unknown_algorithm.yaml: invalid rate limit algorithm 'leaky_bucket' (expected one of fixed_window, sliding_window, token_bucket)",
    ],
    [
      'burst_without_token_bucket.yaml',
      "burst_without_token_bucket.yaml: burst is only valid with algorithm 'token_bucket' (the rule's algorithm is 'sliding_window')",
    ],
    ['zero_burst.yaml', 'zero_burst.yaml: burst must be at least 1'],
    [
      'zero_rate_burst.yaml',
      'zero_rate_burst.yaml: burst needs requests_per_unit of at least 1 (the refill rate)',
    ],
    [
      'negative_burst.yaml',
      'negative_burst.yaml: error loading config file: yaml: unmarshal errors:\n  line 8: cannot unmarshal !!int `-3` into uint32',
    ],
  ])('refuses %s', (name, message) => {
    expect(messageOf(() => load([own(name)]))).toBe(message)
  })

  it('refuses an algorithm the backend cannot run, naming the reason', () => {
    const message = messageOf(() =>
      RateLimitConfig.load([own('algorithms.yaml')], {
        stats: new StatsManager(new StatsStore()),
        unsupportedAlgorithms: { token_bucket: 'BACKEND_TYPE=memcache has no atomic token bucket' },
      }),
    )
    expect(message).toBe(
      "algorithms.yaml: rate limit algorithm 'token_bucket' is not supported: BACKEND_TYPE=memcache has no atomic token bucket",
    )
  })

  it('loads configs without algorithms exactly as upstream: fixed window, burst = requests_per_unit', () => {
    const { config } = load([own('matching.yaml')])
    for (const line of config.dump().trimEnd().split('\n')) expect(line).not.toContain('algorithm')
  })
})

describe('unit_multiplier (issue 32)', () => {
  const file = (rateLimit: string): ConfigFile => ({
    name: 'multiplier.yaml',
    content: `domain: m\ndescriptors:\n  - key: k\n    rate_limit: ${rateLimit}\n`,
  })

  it('makes a window of N units, with its own key suffix and dump line', () => {
    const { config } = load([
      file(
        '{ unit: minute, requests_per_unit: 10, unit_multiplier: 5, algorithm: sliding_window }',
      ),
    ])
    expect(config.getLimit('m', d(['k', 'x']))).toMatchObject({
      unit: 'MINUTE',
      unitMultiplier: 5,
      keySuffix: '_300s',
      algorithm: 'sliding_window',
    })
    expect(config.dump()).toBe(
      'm.k: unit=MINUTE requests_per_unit=10, shadow_mode: false, quota_mode: false, unit_multiplier: 5, algorithm: sliding_window\n',
    )
  })

  it("leaves descriptor `limit` overrides at one unit: upstream's override message has no multiplier", () => {
    const { config } = load([file('{ unit: minute, requests_per_unit: 10, unit_multiplier: 5 }')])
    const overridden = config.getLimit('m', {
      entries: [{ key: 'k', value: 'x' }],
      limit: { requestsPerUnit: 3, unit: 'MINUTE' },
    })
    expect(overridden).toMatchObject({ requestsPerUnit: 3, unit: 'MINUTE', unitMultiplier: 1 })
    expect(overridden?.keySuffix).toBe('')
  })

  it('keeps rules without it as upstream has them (multiplier 1, no key suffix)', () => {
    const { config } = load([file('{ unit: second, requests_per_unit: 1, unit_multiplier: 1 }')])
    expect(config.getLimit('m', d(['k', 'x']))).toMatchObject({ unitMultiplier: 1, keySuffix: '' })
    expect(config.dump()).not.toContain('unit_multiplier')
  })

  it.each([
    [
      '{ unit: second, requests_per_unit: 1, unit_multiplier: 0 }',
      'multiplier.yaml: unit_multiplier must be at least 1 (got 0; leave it out for one second)',
    ],
    [
      '{ unit: second, requests_per_unit: 1, unit_multiplier: 1000001 }',
      'multiplier.yaml: unit_multiplier must be at most 1000000 (got 1000001)',
    ],
    [
      '{ unit: year, requests_per_unit: 1, unit_multiplier: 11 }',
      'multiplier.yaml: unit_multiplier 11 with unit YEAR makes a window of 346896000 seconds; the longest allowed is 315360000 seconds (10 years of 365 days)',
    ],
    [
      '{ unlimited: true, unit_multiplier: 2 }',
      'multiplier.yaml: should not specify unit_multiplier when unlimited',
    ],
    [
      '{ unit: second, requests_per_unit: 1, unit_multiplier: -2 }',
      'multiplier.yaml: error loading config file: yaml: unmarshal errors:\n  line 4: cannot unmarshal !!int `-2` into uint32',
    ],
    [
      '{ unit: second, requests_per_unit: 1, unit_multiplier: thirty }',
      'multiplier.yaml: error loading config file: yaml: unmarshal errors:\n  line 4: cannot unmarshal !!str `thirty` into uint32',
    ],
  ])('refuses %s', (rateLimit, message) => {
    expect(messageOf(() => load([file(rateLimit)]))).toBe(message)
  })
})

describe('several windows per rule (issue 32)', () => {
  const file = (rateLimit: string, extra = ''): ConfigFile => ({
    name: 'windows.yaml',
    content: `domain: w\ndescriptors:\n  - key: k\n${extra}    rate_limit: ${rateLimit}\n`,
  })

  it('reads a list of windows: each a limit of its own, the rule its first window', () => {
    const { config, store } = load([
      file(
        '[{ unit: second, requests_per_unit: 10, name: burst, replaces: [{ name: other }] }, { unit: day, requests_per_unit: 10000, algorithm: sliding_window }, { unit: minute, unit_multiplier: 5, requests_per_unit: 100, algorithm: token_bucket, burst: 20 }]',
      ),
    ])
    const limit = config.getLimit('w', d(['k', 'x']))
    expect(limit).toMatchObject({ unit: 'SECOND', requestsPerUnit: 10, name: 'burst' })
    expect(
      limit?.windows?.map((w) => [
        w.unit,
        w.unitMultiplier,
        w.requestsPerUnit,
        w.algorithm,
        w.burst,
        w.keySuffix,
        w.windowName,
        w.name,
        w.replaces,
        w.stats.key,
      ]),
    ).toEqual([
      ['SECOND', 1, 10, 'fixed_window', 10, '', '1s', 'burst', ['other'], 'w.k_1s'],
      ['DAY', 1, 10000, 'sliding_window', 10000, '_86400s', '1d', 'burst', ['other'], 'w.k_1d'],
      ['MINUTE', 5, 100, 'token_bucket', 20, '_300s', '5m', 'burst', ['other'], 'w.k_5m'],
    ])
    limit?.windows?.[1]?.stats.totalHits.add(1)
    expect(store.snapshot().map((s) => s.name)).toContain(
      'ratelimit.service.rate_limit.w.k_1d.total_hits',
    )
    expect(config.dump()).toBe(
      [
        'w.k: window=1s unit=SECOND requests_per_unit=10, shadow_mode: false, quota_mode: false',
        'w.k: window=1d unit=DAY requests_per_unit=10000, shadow_mode: false, quota_mode: false, algorithm: sliding_window',
        'w.k: window=5m unit=MINUTE requests_per_unit=100, shadow_mode: false, quota_mode: false, unit_multiplier: 5, algorithm: token_bucket, burst: 20',
        '',
      ].join('\n'),
    )
  })

  it('reads a list of one window as the block it holds (upstream names and keys)', () => {
    const { config } = load([file('[{ unit: second, requests_per_unit: 3 }]')])
    expect(config.getLimit('w', d(['k', 'x']))).toMatchObject({
      windows: undefined,
      windowName: '',
      keySuffix: '',
      stats: { key: 'w.k' },
    })
  })

  it('names per-request stats per window with detailed_metric', () => {
    const { config } = load([
      file(
        '[{ unit: second, requests_per_unit: 1 }, { unit: hour, requests_per_unit: 5 }]',
        '    detailed_metric: true\n',
      ),
    ])
    const limit = config.getLimit('w', d(['k', 'v1']))
    expect(limit?.windows?.map((w) => w.stats.key)).toEqual(['w.k_v1_1s', 'w.k_v1_1h'])
    expect(limit?.stats.key).toBe('w.k_v1_1s')
  })

  it.each([
    ['[]', "windows.yaml: rate_limit list of 'w.k' is empty"],
    [
      '[{ unit: second, requests_per_unit: 1 }, { unlimited: true }]',
      "windows.yaml: rate_limit list of 'w.k', window 2: unlimited is not allowed in a list of windows (use a single rate_limit block)",
    ],
    [
      '[{ unit: second, requests_per_unit: 1 }, { unit: day, requests_per_unit: 9, name: daily }]',
      "windows.yaml: rate_limit list of 'w.k', window 2: name and replaces belong to the rule: put them on its first window",
    ],
    [
      '[{ unit: minute, requests_per_unit: 1 }, { unit: second, unit_multiplier: 60, requests_per_unit: 9 }]',
      "windows.yaml: rate_limit list of 'w.k', window 2: window 1 has the same length (60 seconds); each window of a rule needs a length of its own",
    ],
    [
      `[${Array.from({ length: 9 }, (_, i) => `{ unit: second, unit_multiplier: ${String(i + 1)}, requests_per_unit: 1 }`).join(', ')}]`,
      "windows.yaml: rate_limit list of 'w.k' has 9 windows; at most 8 are allowed",
    ],
    [
      '[{ unit: second, requests_per_unit: 1 }, { unit: fortnight, requests_per_unit: 1 }]',
      "windows.yaml: invalid rate limit unit 'fortnight'",
    ],
    [
      '[{ unit: second, requests_per_unit: 1 }, 7]',
      'windows.yaml: config error, yaml file contains list of type other than map: 7',
    ],
  ])('refuses %s', (rateLimit, message) => {
    expect(messageOf(() => load([file(rateLimit)]))).toBe(message)
  })
})
