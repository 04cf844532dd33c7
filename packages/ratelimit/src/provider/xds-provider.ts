/**
 * The GRPC_XDS_SOTW configuration provider: a State-of-the-World client of Envoy's Aggregated
 * Discovery Service (`/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources`)
 * on @grpc/grpc-js, subscribed to every `ratelimit.config.ratelimit.v3.RateLimitConfig` of its
 * node (upstream: `src/provider/xds_grpc_sotw_provider.go` on go-control-plane's client).
 *
 * - Connects to `CONFIG_GRPC_XDS_SERVER_URL` (retrying every
 *   `CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL` while it cannot), with
 *   `CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS` as metadata, then sends
 *   `DiscoveryRequest{node, type_url, version_info='', response_nonce=''}`.
 * - Each response is the whole configuration: its resources are loaded together (the listener
 *   validates them as files). Loaded: ACK (`version_info` and `response_nonce` of the response).
 *   Refused: NACK (`version_info` of the last ACKed response, the response's nonce,
 *   `error_detail.message` = the error text) and the previous configuration stays.
 * - When the stream fails or ends, the client waits (`XDS_CLIENT_BACKOFF_*`, see
 *   {@link xdsBackoffDelay}), reconnects and subscribes again from scratch.
 *
 * @module
 */
import * as grpc from '@grpc/grpc-js'
import type { Logger } from 'pino'
import { systemRandom, type Random } from '../clock.js'
import { xdsConfigFiles } from '../config/xds.js'
import {
  decodeDiscoveryResponse,
  encodeDiscoveryRequest,
  type DiscoveryRequest,
  type DiscoveryResponse,
  type XdsNode,
} from '../protocol/protobuf/discovery.js'
import { RATE_LIMIT_CONFIG_TYPE_URL } from '../protocol/protobuf/rls-conf.js'
import { readTlsFiles } from '../server/tls.js'
import type { XdsSettings } from '../settings/settings.js'
import type { ConfigProvider, ConfigUpdateListener } from './provider.js'

/** The ADS method path. */
export const ADS_STREAM_PATH =
  '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources'

/** The wait between reconnections (`XDS_CLIENT_BACKOFF_*`). */
export interface XdsBackoff {
  /** `XDS_CLIENT_BACKOFF_INITIAL_INTERVAL`, milliseconds: the first wait. */
  readonly initialMs: number
  /** `XDS_CLIENT_BACKOFF_MAX_INTERVAL`, milliseconds: the longest wait. */
  readonly maxMs: number
  /** `XDS_CLIENT_BACKOFF_RANDOM_FACTOR` (0..1): each wait varies by ± this fraction. */
  readonly randomFactor: number
  /** `XDS_CLIENT_BACKOFF_JITTER`: randomise the waits. */
  readonly jitter: boolean
}

/**
 * The wait before reconnection number `attempt` (0 for the first after a failure): the initial
 * interval doubled at each attempt up to the maximum, then, with jitter, multiplied by a random
 * factor in `[1 - randomFactor, 1 + randomFactor]` and kept at most the maximum. (Upstream's
 * jpillora/backoff takes the random factor as the growth factor, which makes every wait the
 * initial interval; Gatehouse gives the setting the meaning its name says.)
 *
 * @returns Milliseconds.
 */
export function xdsBackoffDelay(attempt: number, backoff: XdsBackoff, random: Random): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(attempt, 32))
  if (!backoff.jitter) return base
  const spread = backoff.randomFactor * (2 * random() - 1)
  return Math.min(backoff.maxMs, Math.max(0, Math.round(base * (1 + spread))))
}

/**
 * The channel credentials the `CONFIG_GRPC_XDS_*` settings ask for: plaintext, or TLS with the
 * server CA (`CONFIG_GRPC_XDS_SERVER_TLS_CACERT`, else the system's), an optional client
 * certificate, and the name the server certificate must carry (`CONFIG_GRPC_XDS_SERVER_TLS_SAN`,
 * else the host of the URL).
 *
 * @throws {@link SettingsError} When a TLS file cannot be read, naming its variable.
 */
export function xdsChannelCredentials(
  settings: XdsSettings,
): Pick<XdsProviderOptions, 'credentials' | 'channelOptions'> {
  if (!settings.useTls) return { credentials: grpc.credentials.createInsecure() }
  const files = readTlsFiles({
    CONFIG_GRPC_XDS_SERVER_TLS_CACERT: settings.serverTlsCaCert,
    CONFIG_GRPC_XDS_CLIENT_TLS_CERT: settings.clientTlsCert,
    CONFIG_GRPC_XDS_CLIENT_TLS_KEY: settings.clientTlsKey,
  })
  return {
    credentials: grpc.credentials.createSsl(
      files.CONFIG_GRPC_XDS_SERVER_TLS_CACERT ?? null,
      files.CONFIG_GRPC_XDS_CLIENT_TLS_KEY ?? null,
      files.CONFIG_GRPC_XDS_CLIENT_TLS_CERT ?? null,
    ),
    channelOptions:
      settings.serverTlsSan === ''
        ? {}
        : { 'grpc.ssl_target_name_override': settings.serverTlsSan },
  }
}

/** Options of {@link XdsConfigProvider}. */
export interface XdsProviderOptions {
  /** `CONFIG_GRPC_XDS_SERVER_URL`: a gRPC target (`host:port`). */
  readonly serverUrl: string
  /** `CONFIG_GRPC_XDS_NODE_ID` and `CONFIG_GRPC_XDS_NODE_METADATA`. */
  readonly node: XdsNode
  /** `CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL`, milliseconds. */
  readonly connectRetryIntervalMs: number
  /** `CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS`: metadata of the stream. */
  readonly additionalHeaders: Readonly<Record<string, string>>
  /** Plaintext, or TLS from the `CONFIG_GRPC_XDS_*TLS*` settings. */
  readonly credentials: grpc.ChannelCredentials
  /** Further channel options (`grpc.ssl_target_name_override` for `CONFIG_GRPC_XDS_SERVER_TLS_SAN`). */
  readonly channelOptions?: grpc.ChannelOptions
  readonly backoff: XdsBackoff
  /** `XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES`; 0 = gRPC's default (4 MiB). */
  readonly maxMsgSizeBytes: number
  readonly logger: Logger
  /** For the backoff jitter. @default {@link systemRandom} */
  readonly random?: Random
}

/** A running ADS stream and what it has ACKed. */
interface Stream {
  readonly call: grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>
  /** The version of the last response this stream ACKed ('' before). */
  ackedVersion: string
}

/** Receives the rate limit configuration from an xDS management server. */
export class XdsConfigProvider implements ConfigProvider {
  readonly #options: XdsProviderOptions
  readonly #random: Random
  #listener: ConfigUpdateListener | undefined
  #client: grpc.Client | undefined
  #stream: Stream | undefined
  #timer: NodeJS.Timeout | undefined
  #attempt = 0
  #stopped = false
  #first: { resolve: () => void; reject: (error: Error) => void } | undefined

  constructor(options: XdsProviderOptions) {
    this.#options = options
    this.#random = options.random ?? systemRandom
  }

  /**
   * Connects and subscribes. Resolves once a first configuration was loaded (ACKed); a refused
   * one does not count. Connection failures are retried, never thrown.
   *
   * @throws {Error} When {@link stop} is called before a first configuration was loaded.
   */
  start(listener: ConfigUpdateListener): Promise<void> {
    this.#listener = listener
    const first = new Promise<void>((resolve, reject) => {
      this.#first = { resolve, reject }
    })
    this.#connect()
    return first
  }

  #connect(): void {
    if (this.#stopped) return
    const o = this.#options
    const client = new grpc.Client(o.serverUrl, o.credentials, {
      'grpc.initial_reconnect_backoff_ms': o.connectRetryIntervalMs,
      'grpc.max_reconnect_backoff_ms': o.connectRetryIntervalMs,
      ...(o.maxMsgSizeBytes > 0 ? { 'grpc.max_receive_message_length': o.maxMsgSizeBytes } : {}),
      ...o.channelOptions,
    })
    this.#client = client
    o.logger.info(`xDS: connecting to ${o.serverUrl}`)
    client.waitForReady(Infinity, (error) => {
      if (this.#stopped || this.#client !== client) return
      if (error !== undefined) {
        this.#reconnect(`cannot connect to ${o.serverUrl}: ${error.message}`)
        return
      }
      this.#subscribe(client)
    })
  }

  #subscribe(client: grpc.Client): void {
    const metadata = new grpc.Metadata()
    for (const [key, value] of Object.entries(this.#options.additionalHeaders)) {
      metadata.set(key, value)
    }
    const call = client.makeBidiStreamRequest(
      ADS_STREAM_PATH,
      encodeDiscoveryRequest,
      decodeDiscoveryResponse,
      metadata,
    )
    const stream: Stream = { call, ackedVersion: '' }
    this.#stream = stream
    call.on('data', (response: DiscoveryResponse) => {
      if (this.#stream === stream) this.#onResponse(stream, response)
    })
    call.on('error', () => {
      // Reported by 'status', which every call ends with.
    })
    call.on('status', (status: grpc.StatusObject) => {
      if (this.#stream !== stream || this.#stopped) return
      this.#reconnect(`stream ended: ${grpc.status[status.code]} ${status.details}`)
    })
    this.#send(stream, { versionInfo: '', responseNonce: '', errorDetail: undefined })
  }

  #send(
    stream: Stream,
    fields: Pick<DiscoveryRequest, 'versionInfo' | 'responseNonce' | 'errorDetail'>,
  ): void {
    stream.call.write({
      ...fields,
      node: this.#options.node,
      resourceNames: [],
      typeUrl: RATE_LIMIT_CONFIG_TYPE_URL,
    } satisfies DiscoveryRequest)
  }

  #onResponse(stream: Stream, response: DiscoveryResponse): void {
    const logger = this.#options.logger
    let error: Error | undefined
    if (response.typeUrl !== RATE_LIMIT_CONFIG_TYPE_URL) {
      error = new Error(
        `unexpected type_url ${JSON.stringify(response.typeUrl)}, subscribed to ${RATE_LIMIT_CONFIG_TYPE_URL}`,
      )
      logger.error(`xDS: ${error.message}`)
    } else {
      try {
        error = this.#listener?.({ files: xdsConfigFiles(response.resources) })
      } catch (decodeError) {
        error = decodeError as Error
        this.#listener?.({ error })
      }
    }
    if (error !== undefined) {
      logger.warn(`xDS: NACK of version ${JSON.stringify(response.versionInfo)}: ${error.message}`)
      this.#send(stream, {
        versionInfo: stream.ackedVersion,
        responseNonce: response.nonce,
        errorDetail: { code: 0, message: error.message },
      })
      return
    }
    stream.ackedVersion = response.versionInfo
    this.#attempt = 0
    logger.info(`xDS: ACK of version ${JSON.stringify(response.versionInfo)}`)
    this.#send(stream, {
      versionInfo: response.versionInfo,
      responseNonce: response.nonce,
      errorDetail: undefined,
    })
    this.#first?.resolve()
    this.#first = undefined
  }

  /** Closes the connection and connects again after the backoff wait. */
  #reconnect(reason: string): void {
    this.#closeConnection()
    const delay = xdsBackoffDelay(this.#attempt, this.#options.backoff, this.#random)
    this.#attempt++
    this.#options.logger.warn(`xDS: ${reason}; reconnecting in ${String(delay)} ms`)
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      this.#connect()
    }, delay)
  }

  #closeConnection(): void {
    const stream = this.#stream
    this.#stream = undefined
    stream?.call.cancel()
    this.#client?.close()
    this.#client = undefined
  }

  /** {@inheritDoc ConfigProvider.stop} */
  stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    this.#closeConnection()
    this.#first?.reject(new Error('xDS: stopped before a first configuration was loaded'))
    this.#first = undefined
    return Promise.resolve()
  }
}
