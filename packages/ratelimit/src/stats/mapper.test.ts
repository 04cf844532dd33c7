import { describe, expect, it } from 'vitest'
import { SettingsError } from '@gatehouse/settings'
import { defaultMapperYaml, escapeMetricName, MetricMapper } from './mapper.js'
import { PrometheusSink, splitExtraTags } from './prometheus.js'

const defaults = MetricMapper.fromYaml(defaultMapperYaml(false), 'default')

describe('the default mapping (upstream names)', () => {
  it('maps per-key counters with domain, key1 and key2, dropping deeper parts', () => {
    expect(
      defaults.map('ratelimit.service.rate_limit.d.k1_v1.over_limit', 'counter'),
    ).toMatchObject({
      name: 'ratelimit_service_rate_limit_over_limit',
      labels: { domain: 'd', key1: 'k1_v1' },
    })
    expect(
      defaults.map('ratelimit.service.rate_limit.d.k3.k4.k5.total_hits', 'counter'),
    ).toMatchObject({
      name: 'ratelimit_service_rate_limit_total_hits',
      labels: { domain: 'd', key1: 'k3', key2: 'k4' },
    })
  })

  it('maps errors, requests, response times (seconds unless milliseconds) and config loads', () => {
    expect(
      defaults.map('ratelimit.service.call.should_rate_limit.redis_error', 'counter'),
    ).toMatchObject({
      name: 'ratelimit_service_should_rate_limit_error',
      labels: { err_type: 'redis_error' },
    })
    expect(defaults.map('ratelimit_server.Check.total_requests', 'counter')).toMatchObject({
      name: 'ratelimit_service_total_requests',
      labels: { grpc_method: 'Check' },
    })
    expect(defaults.map('ratelimit_server.ShouldRateLimit.response_time', 'timer')).toMatchObject({
      name: 'ratelimit_service_response_time_seconds',
      observerType: 'histogram',
      scale: 0.001,
    })
    const ms = MetricMapper.fromYaml(defaultMapperYaml(true), 'default')
    expect(ms.map('ratelimit_server.ShouldRateLimit.response_time', 'timer')?.scale).toBe(1)
    expect(defaults.map('ratelimit.service.config_load_error', 'counter')?.name).toBe(
      'ratelimit_service_config_load_error',
    )
  })

  it('keeps an unmapped stat under its escaped name, without labels', () => {
    expect(defaults.map('ratelimit.localcache.hitCount', 'gauge')).toMatchObject({
      name: 'ratelimit_localcache_hitCount',
      labels: {},
    })
    expect(escapeMetricName('1a-b.c')).toBe('_1a_b_c')
  })
})

describe('MetricMapper.fromYaml', () => {
  it('reads regex matches, ${n} groups, metric types, drops and summaries', () => {
    const m = MetricMapper.fromYaml(
      [
        'defaults: { observer_type: summary, quantiles: [0.5] }',
        'mappings:',
        '  - match: "^a\\\\.(\\\\w+)\\\\.(\\\\w+)$"',
        '    match_type: regex',
        '    match_metric_type: gauge',
        '    name: "g_${2}"',
        '    labels: { first: "$1" }',
        '  - match: "a.*.*"',
        '    action: drop',
        '  - match: "t.*"',
        '    name: "t"',
        '    observer_type: histogram',
        '    buckets: [5, 1]',
      ].join('\n'),
      'test',
    )
    expect(m.map('a.x.y', 'gauge')).toMatchObject({ name: 'g_y', labels: { first: 'x' } })
    expect(m.map('a.x.y', 'counter')).toBeUndefined()
    expect(m.map('t.q', 'timer')).toMatchObject({ observerType: 'histogram', buckets: [1, 5] })
    expect(m.map('other', 'timer')).toMatchObject({ name: 'other', observerType: 'summary' })
  })

  it('lists every problem of a bad file at once', () => {
    const problems = (text: string): readonly string[] => {
      try {
        MetricMapper.fromYaml(text, 'PROMETHEUS_MAPPER_YAML (m.yaml)')
      } catch (error) {
        expect(error).toBeInstanceOf(SettingsError)
        return (error as SettingsError).problems
      }
      return []
    }
    expect(problems('mappings: [')[0]).toMatch(
      /^PROMETHEUS_MAPPER_YAML \(m\.yaml\): not valid YAML/,
    )
    expect(
      problems(
        [
          'mappings:',
          '  - match: "("',
          '    match_type: regex',
          '    name: x',
          '  - match: "a.*"',
          '    name: "bad name"',
          '    labels: { "bad-label": x }',
          '    observer_type: gauge',
        ].join('\n'),
      ),
    ).toEqual([
      'PROMETHEUS_MAPPER_YAML (m.yaml): mappings[0].match is not a valid regular expression',
      'PROMETHEUS_MAPPER_YAML (m.yaml): mappings[1].name must be a Prometheus metric name',
      'PROMETHEUS_MAPPER_YAML (m.yaml): mappings[1].labels must map label names to strings',
      'PROMETHEUS_MAPPER_YAML (m.yaml): mappings[1].observer_type must be histogram or summary',
    ])
  })
})

describe('PrometheusSink', () => {
  it('puts both label sets of one name in one metric and counts conflicts instead of throwing', async () => {
    const sink = new PrometheusSink({ mapper: defaults, extraTagNames: ['zone'] })
    sink.flush([
      { name: 'ratelimit.service.rate_limit.d.k1.total_hits.__zone=eu', type: 'counter', value: 2 },
      {
        name: 'ratelimit.service.rate_limit.d.k1.k2.total_hits.__zone=eu',
        type: 'counter',
        value: 3,
      },
      { name: 'ratelimit.service.rate_limit.d.k1.total_hits.__zone=eu', type: 'counter', value: 1 },
      // Same family name as a gauge: a conflict.
      { name: 'ratelimit.service.rate_limit.d.k1.total_hits', type: 'gauge', value: 7 },
    ])
    const text = await sink.registry.metrics()
    expect(text).toContain(
      'ratelimit_service_rate_limit_total_hits{domain="d",key1="k1",zone="eu"} 3\n',
    )
    expect(text).toContain(
      'ratelimit_service_rate_limit_total_hits{domain="d",key1="k1",key2="k2",zone="eu"} 3\n',
    )
    expect(sink.conflicts).toBe(1)
  })

  it('splits gostats extra tags off names', () => {
    expect(splitExtraTags('a.b.__x=1.__y=2')).toEqual({ name: 'a.b', tags: { x: '1', y: '2' } })
    expect(splitExtraTags('a.b')).toEqual({ name: 'a.b', tags: {} })
  })
})
