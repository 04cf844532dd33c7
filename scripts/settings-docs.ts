/**
 * The README settings tables, made from the servers' field tables: each region
 * `<!-- settings:<section>:start -->` … `<!-- settings:<section>:end -->` of a README holds the
 * table of its section's fields (`table.markdown({ keys })`). A section is named in
 * {@link SETTINGS_DOCS} with its keys (or with another table, such as the auth server's
 * families of settings, and its keys), or is itself a key path (`jwt`, `sms.twilio`).
 * `npm run docs:settings` rewrites the regions; `scripts/docs.test.ts` fails while one is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { markedSections, replaceMarkedRegion, type MarkdownOptions } from '@gatehouse/settings'
import {
  settingsFamilies as authFamilies,
  settingsTable as authTable,
} from '../packages/auth/src/conf/settings.js'
import { settingsTable as rateLimitTable } from '#internal/ratelimit/settings/settings.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** What renders a settings table: a field table. */
export interface MarkdownTable {
  markdown(options?: MarkdownOptions): string
}

/** A section drawn from another table than the README's: the table and the keys it lists. */
export interface OtherTableSection {
  readonly table: MarkdownTable
  /** @default every field of `table` */
  readonly keys?: readonly string[]
}

/** A README with generated settings tables. */
export interface SettingsDoc {
  /** The README, relative to the repository. */
  readonly readme: string
  /** The server's field table. */
  readonly table: MarkdownTable
  /**
   * Sections by name, as the keys they list (or another table and its keys); a section not named
   * here is a key path.
   */
  readonly sections: Readonly<Record<string, readonly string[] | OtherTableSection>>
}

/** Every README whose settings tables are generated. */
export const SETTINGS_DOCS: readonly SettingsDoc[] = [
  {
    readme: 'packages/auth/README.md',
    table: authTable,
    sections: {
      server: [
        'siteUrl',
        'apiExternalUrl',
        'apiHost',
        'port',
        'apiMaxRequestDurationMs',
        'requestIdHeader',
        'apiOpenapiEnabled',
        'uriAllowList',
        'disableSignup',
        'rateLimitHeader',
        'svcForwardedForEnabled',
      ],
      logs: ['log', 'telemetry'],
      security: [
        'security.refreshTokenRotationEnabled',
        'security.refreshTokenReuseIntervalMs',
        'security.updatePasswordRequireReauthentication',
        'security.otpMaxAttempts',
        'security.manualLinkingEnabled',
        'security.manualLinkingRequireSiteReferer',
        'security.allowPrivateUrls',
      ],
      'sign-in': [
        'external.emailEnabled',
        'external.phoneEnabled',
        'external.anonymousUsersEnabled',
        'external.flowStateExpiryMs',
        'external.apple.teamId',
        'external.apple.keyId',
      ],
      providers: { table: authFamilies, keys: ['provider'] },
      mail: [
        'mailer.autoconfirm',
        'mailer.linkConfirmationPage',
        'mailer.otpExpMs',
        'mailer.otpLength',
        'mailer.secureEmailChangeEnabled',
        'mailer.maxFrequencyMs',
        'mailer.queuePollIntervalMs',
        'mailer.urlPaths',
      ],
      'mail-kinds': {
        table: authFamilies,
        keys: ['subjects', 'templates', 'localeSubjects', 'localeTemplates', 'notifications'],
      },
      captcha: ['security.captcha'],
    },
  },
  {
    readme: 'packages/ratelimit/README.md',
    table: rateLimitTable,
    sections: {
      servers: [
        'host',
        'port',
        'adminApiToken',
        'grpcHost',
        'grpcPort',
        'grpcUds',
        'grpcMaxConnectionAgeMs',
        'grpcMaxConnectionAgeGraceMs',
        'grpcMaxConnectionIdleMs',
        'grpcMaxConcurrentStreams',
        'grpcMaxCallDurationMs',
        'grpcServerUseTls',
        'grpcServerTlsCert',
        'grpcServerTlsKey',
        'grpcClientTlsCaCert',
        'grpcClientTlsSan',
        'grpcServerImplementation',
        'workers',
        'debugHost',
        'debugPort',
        'logLevel',
        'logFormat',
      ],
      limits: [
        'maxDescriptorsPerRequest',
        'maxEntriesPerDescriptor',
        'maxDescriptorEntryBytes',
        'memoryMaxKeys',
      ],
      'config-loading': [
        'configType',
        'runtimeRoot',
        'runtimeSubdirectory',
        'runtimeAppDirectory',
        'runtimeIgnoreDotFiles',
        'runtimeWatchRoot',
        'mergeDomainConfig',
        'forceStartWithoutInitialConfig',
        'healthyWithAtLeastOneConfigLoaded',
      ],
      xds: [
        'xds.nodeId',
        'xds.nodeMetadata',
        'xds.serverUrl',
        'xds.connectRetryIntervalMs',
        'xds.additionalHeaders',
        'xds.useTls',
        'xds.serverTlsCaCert',
        'xds.serverTlsSan',
        'xds.clientTlsCert',
        'xds.clientTlsKey',
        'xds.backoffInitialMs',
        'xds.backoffMaxMs',
        'xds.backoffRandomFactor',
        'xds.backoffJitter',
        'xds.maxMsgSizeBytes',
      ],
      decisions: [
        'backendType',
        'backendStartupTimeoutMs',
        'nearLimitRatio',
        'cacheKeyPrefix',
        'expirationJitterMaxMs',
        'localCacheSizeInBytes',
        'stopCacheKeyIncrementWhenOverlimit',
        'rateLimitAlgorithm',
        'shadowMode',
        'quotaMode',
        'responseDynamicMetadata',
        'limitResponseHeadersEnabled',
        'limitLimitHeader',
        'limitRemainingHeader',
        'limitResetHeader',
        'backendFailureMode',
        'backendFailureLocalShare',
        'backendFailureCheckIntervalMs',
      ],
      redis: [
        'redis.socketType',
        'redis.type',
        'redis.url',
        'redis.auth',
        'redis.sentinelAuth',
        'redis.poolSize',
        'redis.timeoutMs',
        'redis.poolOnEmptyBehavior',
        'redis.poolOnEmptyWaitMs',
        'redis.closeConnectionOnReadonlyError',
        'redis.pipelineWindowMs',
        'redis.clusterPipelineParallelism',
        'redis.tls',
        'redis.tlsCaCert',
        'redis.tlsClientCert',
        'redis.tlsClientKey',
        'redis.tlsSkipHostnameVerification',
        'redisHealthCheckActiveConnection',
        'redisStartupInitialIntervalMs',
        'redisStartupMaxIntervalMs',
        'redisStartupMaxElapsedMs',
        'redisPerSecond',
        'redisPerSecondSettings',
      ],
      memcache: [
        'memcache.hostPort',
        'memcache.srv',
        'memcache.srvRefreshMs',
        'memcache.maxIdleConns',
        'memcache.tls',
        'memcache.tlsCaCert',
        'memcache.tlsClientCert',
        'memcache.tlsClientKey',
        'memcache.tlsSkipHostnameVerification',
      ],
      stats: [
        'useStatsd',
        'statsdHost',
        'statsdPort',
        'statsFlushIntervalMs',
        'extraTags',
        'disableStats',
        'statsMaxDynamicKeys',
        'statsMaxUnknownDomains',
      ],
      'tagged-statsd': ['useTaggedStatsd', 'taggedStatsdMogrifierNames'],
      prometheus: [
        'usePrometheus',
        'prometheusAddr',
        'prometheusPath',
        'prometheusMapperYaml',
        'prometheusResponseTimeAsMilliseconds',
      ],
      tracing: [
        'tracing.enabled',
        'tracing.exporterProtocol',
        'tracing.serviceName',
        'tracing.serviceNamespace',
        'tracing.serviceInstanceId',
        'tracing.samplingRate',
        'tracing.endpoint',
        'tracing.tracesEndpoint',
        'tracing.headers',
        'tracing.tracesHeaders',
        'tracing.timeoutMs',
        'tracing.tracesTimeoutMs',
      ],
    },
  },
]

/**
 * The README as it should be: every marked region holding its section's table.
 *
 * @param doc The README and its table.
 * @param text The README's text. @default the file's
 */
export function renderSettingsDoc(
  doc: SettingsDoc,
  text = readFileSync(join(root, doc.readme), 'utf8'),
): string {
  const tableOf = (section: string): string => {
    const named = doc.sections[section] ?? [section]
    if ('table' in named) {
      return named.table.markdown(named.keys === undefined ? {} : { keys: named.keys })
    }
    return doc.table.markdown({ keys: named })
  }
  return markedSections(text).reduce(
    (out, section) => replaceMarkedRegion(out, section, tableOf(section)),
    text,
  )
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const doc of SETTINGS_DOCS) {
    const path = join(root, doc.readme)
    const before = readFileSync(path, 'utf8')
    const after = renderSettingsDoc(doc, before)
    if (after !== before) writeFileSync(path, after)
    console.log(`${doc.readme}: ${after === before ? 'up to date' : 'updated'}`)
  }
}
