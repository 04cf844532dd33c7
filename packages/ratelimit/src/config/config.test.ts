import { describe, expect, it } from 'vitest'
import { ownFixture, upstreamFixture } from '../../test/fixtures.js'
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

function upstream(name: string): ConfigFile {
  return { name, content: upstreamFixture(`config/${name}`) }
}

function own(name: string): ConfigFile {
  return { name, content: ownFixture(`config/${name}`) }
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

describe('configuration validation (upstream fixtures, full messages)', () => {
  it.each([
    [
      'bad_yaml.yaml',
      'bad_yaml.yaml: error loading config file: yaml: line 2: found unexpected end of stream',
    ],
    ['non_string_key.yaml', 'non_string_key.yaml: config error, key is not of type string: 0.25'],
    ['misspelled_key.yaml', "misspelled_key.yaml: config error, unknown key 'ratelimit'"],
    ['misspelled_key2.yaml', "misspelled_key2.yaml: config error, unknown key 'requestsperunit'"],
    [
      'non_map_list.yaml',
      'non_map_list.yaml: config error, yaml file contains list of type other than map: a',
    ],
    ['empty_domain.yaml', 'empty_domain.yaml: config file cannot have empty domain'],
    ['empty_key.yaml', 'empty_key.yaml: descriptor has empty key'],
    [
      'duplicate_key.yaml',
      "duplicate_key.yaml: duplicate descriptor composite key 'test-domain.key1_value1'",
    ],
    ['bad_limit_unit.yaml', "bad_limit_unit.yaml: invalid rate limit unit 'foo'"],
    [
      'unlimited_with_unit.yaml',
      'unlimited_with_unit.yaml: should not specify rate limit unit when unlimited',
    ],
    ['replaces_empty.yaml', 'replaces_empty.yaml: should not have an empty replaces entry'],
    [
      'replaces_self.yaml',
      'replaces_self.yaml: replaces should not contain name of same descriptor',
    ],
  ])('rejects %s', (name, message) => {
    expect(messageOf(() => load([upstream(name)]))).toBe(message)
    try {
      load([upstream(name)])
    } catch (error) {
      expect((error as Error).message).toBe(message)
      expect(error).toMatchObject({ code: 'ERR_RATELIMIT_CONFIG', fileName: name })
    }
  })

  it('names the second file when a domain is defined twice', () => {
    expect(
      messageOf(() => load([upstream('basic_config.yaml'), upstream('duplicate_domain.yaml')])),
    ).toBe("duplicate_domain.yaml: duplicate domain 'test-domain' in config file")
  })

  it('merges files of one domain with MERGE_DOMAIN_CONFIG', () => {
    const files = [upstream('merge_domain_key1.yaml'), upstream('merge_domain_key2.yaml')]
    expect(messageOf(() => load(files))).toBe(
      "merge_domain_key2.yaml: duplicate domain 'test-domain' in config file",
    )
    const { config } = load(files, true)
    expect(config.getLimit('test-domain', d(['key1', 'value1']))?.requestsPerUnit).toBe(10)
    expect(config.getLimit('test-domain', d(['key2', 'value2']))?.requestsPerUnit).toBe(20)
  })

  it('still rejects duplicate keys across merged files', () => {
    const file = upstream('merge_domain_key1.yaml')
    expect(messageOf(() => load([file, { ...file, name: 'again.yaml' }], true))).toBe(
      "again.yaml: duplicate descriptor composite key 'test-domain.key1_value1'",
    )
  })

  it('loads every valid upstream fixture', () => {
    for (const name of [
      'basic_config.yaml',
      'shadowmode_config.yaml',
      'wildcard.yaml',
      'share_threshold.yaml',
      'metadata.yaml',
    ]) {
      expect(load([upstream(name)]).config.domains).toEqual(['test-domain'])
    }
  })
})

describe('configuration validation (own fixtures, full messages)', () => {
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

describe('matching (basic_config.yaml)', () => {
  const { config, store } = load([upstream('basic_config.yaml')])
  const limit = (...pairs: [string, string][]) => config.getLimit('test-domain', d(...pairs))

  it('counts unknown domains and matches nothing', () => {
    expect(config.getLimit('foo_domain', d(['foo', 'bar']))).toBeUndefined()
    expect(counter(store, 'ratelimit.service.rate_limit.domain_not_found')).toBe(1)
  })

  it('requires the request depth to match the rule depth', () => {
    expect(limit(['key', 'value'])).toBeUndefined()
    expect(limit(['key1', 'value1'])).toBeUndefined()
    expect(limit(['key2', 'value2'], ['subkey', 'subvalue'])).toBeUndefined()
    expect(limit(['key5', 'value5'], ['subkey5', 'subvalue5'], ['extra', 'x'])).toBeUndefined()
  })

  it('prefers key+value over the bare key at each level', () => {
    expect(limit(['key1', 'value1'], ['subkey1', 'something'])).toMatchObject({
      requestsPerUnit: 5,
      unit: 'SECOND',
      fullKey: 'test-domain.key1_value1.subkey1',
    })
    expect(limit(['key1', 'value1'], ['subkey1', 'subvalue1'])).toMatchObject({
      requestsPerUnit: 10,
      fullKey: 'test-domain.key1_value1.subkey1_subvalue1',
    })
    expect(limit(['key2', 'something'])).toMatchObject({ requestsPerUnit: 20, unit: 'MINUTE' })
    expect(limit(['key2', ''])).toMatchObject({ requestsPerUnit: 20 })
    expect(limit(['key2', 'value2'])).toMatchObject({ requestsPerUnit: 30 })
  })

  it('allow-lists a key+value without a limit (the bare key is not tried)', () => {
    expect(limit(['key2', 'value3'])).toBeUndefined()
  })

  it('uses rules on intermediate nodes only at their own depth', () => {
    expect(limit(['key5', 'value5'])).toMatchObject({ requestsPerUnit: 15, unit: 'DAY' })
    expect(limit(['key5', 'value5'], ['subkey5', 'subvalue5'])).toMatchObject({
      requestsPerUnit: 25,
    })
  })

  it('returns names, unlimited rules and detailed-metric stats keys', () => {
    expect(limit(['key3', 'foo'])).toMatchObject({ requestsPerUnit: 1, unit: 'HOUR' })
    expect(limit(['key4', 'foo'])).toMatchObject({ name: 'key4_rate_limit', unit: 'DAY' })
    expect(limit(['key6', 'foo'])).toMatchObject({ unlimited: true })
    expect(limit(['key7', 'unspecified_value'])?.stats.key).toBe(
      'test-domain.key7_unspecified_value',
    )
    expect(limit(['key1', 'value1'], ['subkey1', 'x'])?.stats.key).toBe(
      'test-domain.key1_value1.subkey1',
    )
  })

  it('applies a descriptor override without a config match, only in known domains', () => {
    const override: Descriptor = {
      entries: [
        { key: 'key1', value: 'value1' },
        { key: 'nothing', value: '' },
      ],
      limit: { requestsPerUnit: 42, unit: 'HOUR' },
    }
    const result = config.getLimit('test-domain', override)
    expect(result).toMatchObject({
      requestsPerUnit: 42,
      unit: 'HOUR',
      shadowMode: false,
      unlimited: false,
    })
    expect(result?.stats.key).toBe('test-domain.key1_value1.nothing')
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

describe('matching wildcards (wildcard.yaml)', () => {
  const { config } = load([upstream('wildcard.yaml')])
  const key = (...pairs: [string, string][]) =>
    config.getLimit('test-domain', d(...pairs))?.stats.key

  it('matches a trailing wildcard and keeps the pattern in the stats key', () => {
    expect(key(['wild', 'foo1'])).toBe('test-domain.wild_foo*')
    expect(key(['wild', 'foo'])).toBe('test-domain.wild_foo*')
    expect(key(['wild', 'bar'])).toBeUndefined()
    expect(key(['noWild', 'foo1'])).toBeUndefined()
    expect(key(['noWild', 'foo'])).toBe('test-domain.noWild_foo')
  })

  it('matches middle and multiple wildcards, segments in order', () => {
    expect(key(['midWild', 'barab'])).toBe('test-domain.midWild_bar*b')
    expect(key(['midWild', 'barb'])).toBe('test-domain.midWild_bar*b')
    expect(key(['midWild', 'bar'])).toBeUndefined()
    expect(key(['multiWild', 'fooXbarYbaz'])).toBe('test-domain.multiWild_foo*bar*baz')
    expect(key(['multiWild', 'foobarbaz'])).toBe('test-domain.multiWild_foo*bar*baz')
    expect(key(['multiWild', 'foobaz'])).toBeUndefined()
    expect(key(['multiWild', 'bazbarfoo'])).toBeUndefined()
  })

  it('matches wildcards in nested levels', () => {
    expect(key(['nestedWild', 'val1'], ['wild', 'goo1'])).toBe(
      'test-domain.nestedWild_val1.wild_goo*',
    )
    expect(key(['nestedWild', 'val2'], ['wild', 'goo1'])).toBeUndefined()
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

describe('share_threshold (share_threshold.yaml)', () => {
  const { config } = load([upstream('share_threshold.yaml')])
  const get = (...pairs: [string, string][]) => config.getLimit('test-domain', d(...pairs))

  it('shares one counter per pattern and uses the pattern in stats keys', () => {
    const a = get(['files', 'files/a.txt'])
    const b = get(['files', 'files/b.txt'])
    expect(a?.sharePatterns).toEqual(['files/*'])
    expect(b?.stats.key).toBe('test-domain.files_files/*')
    expect(a?.stats).toBe(b?.stats)
    expect(get(['nested', 'parent'], ['files', 'nested/x'])?.stats.key).toBe(
      'test-domain.nested_parent.files_nested/*',
    )
    expect(get(['files', 'top/x'], ['files', 'nested/y'])).toMatchObject({
      sharePatterns: ['top/*', 'nested/*'],
    })
    expect(get(['files', 'top/x'], ['files', 'nested/y'])?.stats.key).toBe(
      'test-domain.files_top/*.files_nested/*',
    )
  })

  it('lets share_threshold beat value_to_metric and combine with detailed_metric', () => {
    expect(get(['route', 'api/v1'], ['method', 'GET'])?.stats.key).toBe(
      'test-domain.route_api/*.method',
    )
    expect(get(['service', 'svc/a'], ['endpoint', 'get'])?.stats.key).toBe(
      'test-domain.service_svc/*.endpoint_get',
    )
    expect(get(['midroute', '/api/xv2'])?.stats.key).toBe('test-domain.midroute_/api*v2')
  })

  it('mixes shared and unshared wildcards per level', () => {
    const limit = get(['path', 'path/a'], ['file', 'file/b'], ['type', 'pdf'])
    expect(limit?.sharePatterns).toEqual(['path/*'])
    expect(limit?.stats.key).toBe('test-domain.path_path/*.file_file/*.type')
    expect(get(['tenant', 't1prod'], ['resource', 'res1v2'])?.stats.key).toBe(
      'test-domain.tenant_t*prod.resource_res*v2',
    )
  })

  it('gives an explicit value its own counter', () => {
    expect(get(['file', 'test1'])).toMatchObject({ requestsPerUnit: 50, sharePatterns: undefined })
    expect(get(['file', 'test2'])).toMatchObject({ requestsPerUnit: 100, sharePatterns: ['test*'] })
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
    const { config } = load([upstream('basic_config.yaml')])
    const lines = config.dump().trimEnd().split('\n')
    expect(lines).toContain(
      'test-domain.key1_value1.subkey1: unit=SECOND requests_per_unit=5, shadow_mode: false, quota_mode: false',
    )
    expect(lines).toContain(
      'test-domain.key6: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, quota_mode: false',
    )
    expect(lines).not.toContain(expect.stringContaining('key2_value3'))
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

  it('loads every upstream config exactly as before: fixed window, burst = requests_per_unit', () => {
    const { config } = load([upstream('basic_config.yaml')])
    for (const line of config.dump().trimEnd().split('\n')) expect(line).not.toContain('algorithm')
  })
})
