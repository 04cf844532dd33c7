/**
 * A pushed RateLimitConfig becomes the configuration the same YAML file would: same rules, same
 * validation messages (the resource name standing for the file name).
 */
import { create, toBinary } from '@bufbuild/protobuf'
import { describe, expect, it } from 'vitest'
import {
  RateLimitConfigSchema,
  RateLimitUnit,
  type RateLimitConfig as PushedConfig,
} from '../../test/reference/ratelimit/config/ratelimit/v3/rls_conf_pb.js'
import { RATE_LIMIT_CONFIG_TYPE_URL } from '../protocol/protobuf/rls-conf.js'
import { StatsManager } from '../stats/manager.js'
import { StatsStore } from '../stats/store.js'
import { RateLimitConfig, type ConfigFile } from './config.js'
import { xdsConfigFiles } from './xds.js'

function pushed(config: PushedConfig): ConfigFile[] {
  return xdsConfigFiles([
    {
      typeUrl: RATE_LIMIT_CONFIG_TYPE_URL,
      value: Buffer.from(toBinary(RateLimitConfigSchema, config)),
    },
  ])
}

function load(files: ConfigFile[]): RateLimitConfig {
  return RateLimitConfig.load(files, { stats: new StatsManager(new StatsStore()) })
}

function messageOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (error) {
    return (error as Error).message
  }
  return undefined
}

const YAML = `domain: edge
descriptors:
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 10, name: base }
    descriptors:
      - key: plan
        value: gold
        shadow_mode: true
        rate_limit: { unit: week, requests_per_unit: 1000, replaces: [{ name: base }] }
  - key: health
    rate_limit: { unlimited: true }
  - key: quota
    quota_mode: true
    detailed_metric: true
    rate_limit: { unit: day, requests_per_unit: 5 }
`

describe('xdsConfigFiles', () => {
  it('gives the configuration the same YAML file gives', () => {
    const fromXds = load(
      pushed(
        create(RateLimitConfigSchema, {
          name: 'edge.yaml',
          domain: 'edge',
          descriptors: [
            {
              key: 'user',
              rateLimit: { unit: RateLimitUnit.MINUTE, requestsPerUnit: 10, name: 'base' },
              descriptors: [
                {
                  key: 'plan',
                  value: 'gold',
                  shadowMode: true,
                  rateLimit: {
                    unit: RateLimitUnit.WEEK,
                    requestsPerUnit: 1000,
                    replaces: [{ name: 'base' }],
                  },
                },
              ],
            },
            { key: 'health', rateLimit: { unlimited: true } },
            {
              key: 'quota',
              quotaMode: true,
              detailedMetric: true,
              rateLimit: { unit: RateLimitUnit.DAY, requestsPerUnit: 5 },
            },
          ],
        }),
      ),
    )
    const fromYaml = load([{ name: 'edge.yaml', content: YAML }])
    expect(fromXds.dump()).toBe(fromYaml.dump())
    expect(fromXds.dump()).toContain(
      'edge.user.plan_gold: unit=WEEK requests_per_unit=1000, shadow_mode: true, quota_mode: false',
    )
    const gold = {
      entries: [
        { key: 'user', value: 'u1' },
        { key: 'plan', value: 'gold' },
      ],
    }
    expect(fromXds.getLimit('edge', gold)?.replaces).toEqual(['base'])
  })

  it('refuses what files are refused for, with the same text', () => {
    const noUnit = create(RateLimitConfigSchema, {
      name: 'bad',
      domain: 'edge',
      descriptors: [{ key: 'k', rateLimit: { requestsPerUnit: 1 } }],
    })
    expect(messageOf(() => load(pushed(noUnit)))).toBe("bad: invalid rate limit unit 'UNKNOWN'")
    const unknownUnit = create(RateLimitConfigSchema, {
      name: 'bad',
      domain: 'edge',
      descriptors: [{ key: 'k', rateLimit: { requestsPerUnit: 1 } }],
    })
    // An enum number this version does not know (proto3 enums are open).
    const policy = unknownUnit.descriptors[0]?.rateLimit
    if (policy !== undefined) Object.assign(policy, { unit: 42 })
    expect(messageOf(() => load(pushed(unknownUnit)))).toBe("bad: invalid rate limit unit '42'")
    const emptyKey = create(RateLimitConfigSchema, {
      name: 'bad',
      domain: 'edge',
      descriptors: [{}],
    })
    expect(messageOf(() => load(pushed(emptyKey)))).toBe('bad: descriptor has empty key')
  })

  it('reads unit_multiplier (field 100, issue 32) as the YAML field, with its checks', () => {
    const config = (unitMultiplier: number) =>
      create(RateLimitConfigSchema, {
        name: 'windows',
        domain: 'edge',
        descriptors: [
          {
            key: 'k',
            rateLimit: { unit: RateLimitUnit.SECOND, requestsPerUnit: 5, unitMultiplier },
          },
        ],
      })
    expect(
      load(pushed(config(30))).getLimit('edge', { entries: [{ key: 'k', value: 'v' }] }),
    ).toMatchObject({ unit: 'SECOND', unitMultiplier: 30, keySuffix: '_30s' })
    // 0 is proto3's absent value: one unit, as upstream's rules.
    expect(
      load(pushed(config(0))).getLimit('edge', { entries: [{ key: 'k', value: 'v' }] }),
    ).toMatchObject({ unitMultiplier: 1, keySuffix: '' })
    expect(messageOf(() => load(pushed(config(2_000_000))))).toBe(
      'windows: unit_multiplier must be at most 1000000 (got 2000000)',
    )
  })

  it('refuses a resource of another type or that does not decode', () => {
    expect(
      messageOf(() =>
        xdsConfigFiles([{ typeUrl: 'type.googleapis.com/x.Y', value: Buffer.alloc(0) }]),
      ),
    ).toBe(
      `xds resource 0: unexpected resource type "type.googleapis.com/x.Y", expected ${RATE_LIMIT_CONFIG_TYPE_URL}`,
    )
    expect(
      messageOf(() =>
        xdsConfigFiles([{ typeUrl: RATE_LIMIT_CONFIG_TYPE_URL, value: Buffer.of(0x12, 0x09) }]),
      ),
    ).toBe(
      'xds resource 0: cannot decode RateLimitConfig: proto: cannot parse invalid wire-format data',
    )
  })
})
