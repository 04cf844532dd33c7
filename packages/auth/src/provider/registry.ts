/**
 * The providers of the settings: `providerFor` gives the enabled provider of a name, built once
 * per server by {@link ProviderRegistry} (in `app.ts`).
 *
 * @module
 */
import { Client, type FetchLike } from '@gatehouse/oauth2'
import type { Clock } from '../clock.js'
import type { Settings } from '../conf/settings.js'
import { EXTERNAL_PROVIDERS, type ExternalProvider } from './names.js'
import { BadRequestError } from '../errors.js'
import { apple } from './apple.js'
import { azure } from './azure.js'
import { presetProvider, type ProviderContext } from './base.js'
import type { CustomProviders } from './custom.js'
import type { IdTokenIssuer } from './id-token.js'
import type { OAuthProvider } from './oauth-provider.js'
import { twitter } from './twitter.js'
import { vercelMarketplace } from './vercel-marketplace.js'

/** The providers with a module of their own; every other one is its preset as it is. */
const SPECIAL: Partial<Record<ExternalProvider, (ctx: ProviderContext) => OAuthProvider>> = {
  apple,
  azure,
  twitter,
  vercel_marketplace: vercelMarketplace,
}

/**
 * Each provider's module: Apple (its client-secret JWT), Azure (its tenants' issuers), Twitter
 * (OAuth 1.0a) and Vercel Marketplace (its API host beside its issuer) have their own; every other provider is its `@gatehouse/oauth2/providers` preset
 * as it is ({@link presetProvider}).
 */
export const PROVIDER_MODULES = Object.fromEntries(
  EXTERNAL_PROVIDERS.map((name) => [
    name,
    SPECIAL[name] ?? ((ctx: ProviderContext) => presetProvider(ctx, name)),
  ]),
) as Readonly<Record<ExternalProvider, (ctx: ProviderContext) => OAuthProvider>>

/** Looks up the enabled providers, each built once on first use. */
export class ProviderRegistry {
  readonly #settings: Settings
  readonly #clock: Clock
  readonly #fetch: FetchLike | undefined
  readonly #custom: CustomProviders | undefined
  readonly #built = new Map<ExternalProvider, OAuthProvider>()
  /** The `id_token` grant's clients, by issuer (insertion order: the oldest is dropped first). */
  readonly #idTokenClients = new Map<string, Promise<Client>>()

  /**
   * @param fetch A `fetch` for every provider call instead of the library's default transport.
   * @param custom The custom providers (`custom:<name>`).
   */
  constructor(settings: Settings, clock: Clock, fetch?: FetchLike, custom?: CustomProviders) {
    this.#settings = settings
    this.#clock = clock
    this.#fetch = fetch
    this.#custom = custom
  }

  /**
   * The enabled provider called `name`: a built-in one ({@link ProviderRegistry.get}) or a
   * custom one (`custom:<name>`, looked up in the database).
   *
   * @throws {@link BadRequestError} `validation_failed` "Unsupported provider: …".
   */
  async resolve(name: string): Promise<OAuthProvider> {
    if (name.toLowerCase().startsWith('custom:')) {
      if (this.#custom === undefined) {
        throw new BadRequestError(
          'validation_failed',
          'Unsupported provider: custom OAuth providers are disabled',
        )
      }
      return this.#custom.provider(name.toLowerCase())
    }
    return this.get(name)
  }

  /**
   * The enabled provider called `name` (upstream `Provider`).
   *
   * @throws {@link BadRequestError} `validation_failed` "Unsupported provider: Provider <name>
   *   could not be found" or "Unsupported provider: provider is not enabled".
   */
  get(name: string): OAuthProvider {
    const known = EXTERNAL_PROVIDERS.find((p) => p === name.toLowerCase())
    if (known === undefined) {
      throw new BadRequestError(
        'validation_failed',
        `Unsupported provider: Provider ${name} could not be found`,
      )
    }
    const config = this.#settings.external[known]
    if (!config.enabled) {
      throw new BadRequestError(
        'validation_failed',
        'Unsupported provider: provider is not enabled',
      )
    }
    let provider = this.#built.get(known)
    if (provider === undefined) {
      provider = PROVIDER_MODULES[known]({
        config,
        clock: this.#clock,
        fetch: this.#fetch,
        apple: this.#settings.external.apple,
      })
      this.#built.set(known, provider)
    }
    return provider
  }

  /**
   * The client that checks ID tokens of `issuer` for the `id_token` grant: its metadata found by
   * OIDC discovery from `issuer.discoveryIssuer` (through `@gatehouse/oauth2`, 10 s and 512 KiB
   * per request), its `issuer` the token's, kept for later tokens (its JWKS is cached and refetched on an
   * unknown `kid`). At most {@link MAX_ID_TOKEN_ISSUERS} issuers are kept (Azure has one per
   * tenant); a failed discovery is not kept, so the next token tries again.
   *
   * @throws The library's `OAuth2Error` (`invalid_metadata`, a transport error) when discovery
   *   fails.
   */
  idTokenClient(issuer: IdTokenIssuer): Promise<Client> {
    const key = `${issuer.discoveryIssuer} ${issuer.issuer} ${issuer.discoveryUrl ?? ''}`
    let client = this.#idTokenClients.get(key)
    if (client === undefined) {
      const fetch = issuer.provider.startsWith('custom:') ? this.#custom?.fetch : this.#fetch
      const options = {
        clock: this.#clock,
        // Bounded: 10 s per request, 512 KiB per discovery document or JWKS.
        connectionOpts: { timeout: 10_000, maxResponseBytes: 512 * 1024 },
        ...(fetch === undefined ? {} : { fetch }),
      }
      const at = issuer.discoveryUrl === undefined ? {} : { discoveryUrl: issuer.discoveryUrl }
      const id = issuer.clientIds[0] ?? 'unused'
      client = Client.discover(issuer.discoveryIssuer, id, undefined, { ...options, ...at }).then(
        (found) =>
          found.options.metadata?.issuer === issuer.issuer
            ? found
            : new Client(id, undefined, {
                ...options,
                metadata: { ...found.options.metadata, issuer: issuer.issuer },
              }),
      )
      client.catch(() => this.#idTokenClients.delete(key))
      if (this.#idTokenClients.size >= MAX_ID_TOKEN_ISSUERS) {
        const oldest = this.#idTokenClients.keys().next().value
        if (oldest !== undefined) this.#idTokenClients.delete(oldest)
      }
      this.#idTokenClients.set(key, client)
    }
    return client
  }
}

/** Issuers whose ID-token clients are kept at once (Azure tenants seen). */
export const MAX_ID_TOKEN_ISSUERS = 100
