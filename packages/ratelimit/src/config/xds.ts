/**
 * Configuration pushed by a management server (`CONFIG_TYPE=GRPC_XDS_SOTW`): the resources of
 * one `DiscoveryResponse`, each a `RateLimitConfig`, become the {@link ConfigFile}s the YAML
 * loader would produce, so that {@link RateLimitConfig.load} validates them with the same rules
 * and error texts (the resource's `name` stands for the file name, as upstream's
 * `src/config/config_xds.go` does). `value_to_metric` and `share_threshold` have no xDS fields;
 * `unit_multiplier` is field 100 of our copy of `RateLimitPolicy` (issue 32).
 *
 * @module
 */
import {
  decodeRateLimitConfig,
  RATE_LIMIT_CONFIG_TYPE_URL,
  type XdsRateLimitDescriptor,
} from '../protocol/protobuf/rls-conf.js'
import type { AnyMessage } from '../protocol/protobuf/discovery.js'
import { UNITS, UNIT_NUMBERS } from '../protocol/types.js'
import type { ConfigFile } from './config.js'
import { RateLimitConfigError } from './errors.js'
import type { YamlDescriptor } from './yaml.js'

/** The unit's enum name, as a YAML file would spell it; unknown numbers as digits (Go's `String()`). */
function unitName(unit: number): string {
  return UNITS.find((name) => UNIT_NUMBERS[name] === unit) ?? String(unit)
}

function toYamlDescriptor(d: XdsRateLimitDescriptor): YamlDescriptor {
  const rl = d.rateLimit
  return {
    key: d.key,
    value: d.value,
    rateLimit:
      rl === undefined
        ? undefined
        : {
            unit: unitName(rl.unit),
            requestsPerUnit: rl.requestsPerUnit,
            unlimited: rl.unlimited,
            name: rl.name,
            replaces: rl.replaces.map((r) => ({ name: r.name })),
            // The xDS RateLimitPolicy has no such fields: such rules use RATE_LIMIT_ALGORITHM.
            algorithm: '',
            burst: undefined,
            // Ours (field 100) until upstream's proto has Envoy PR #47307's field.
            unitMultiplier: rl.unitMultiplier === 0 ? undefined : rl.unitMultiplier,
          },
    descriptors: d.descriptors.map(toYamlDescriptor),
    shadowMode: d.shadowMode,
    quotaMode: d.quotaMode,
    detailedMetric: d.detailedMetric,
    valueToMetric: false,
    shareThreshold: false,
    metadata: d.metadata,
  }
}

/**
 * Decodes the resources of one response into configuration files, in the order pushed.
 *
 * @throws {@link RateLimitConfigError} When a resource is not a `RateLimitConfig` or cannot be
 *   decoded: `xds resource <index>: <problem>` (validation of the rules happens later, in
 *   {@link RateLimitConfig.load}).
 */
export function xdsConfigFiles(resources: readonly AnyMessage[]): ConfigFile[] {
  return resources.map((resource, index) => {
    const where = `xds resource ${String(index)}`
    if (resource.typeUrl !== RATE_LIMIT_CONFIG_TYPE_URL) {
      throw new RateLimitConfigError(
        where,
        `unexpected resource type ${JSON.stringify(resource.typeUrl)}, expected ${RATE_LIMIT_CONFIG_TYPE_URL}`,
      )
    }
    let config
    try {
      config = decodeRateLimitConfig(resource.value)
    } catch (error) {
      throw new RateLimitConfigError(
        where,
        `cannot decode RateLimitConfig: ${(error as Error).message}`,
      )
    }
    return {
      name: config.name,
      root: { domain: config.domain, descriptors: config.descriptors.map(toYamlDescriptor) },
    }
  })
}
