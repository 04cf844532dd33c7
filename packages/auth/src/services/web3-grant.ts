/**
 * The `web3` grant of `POST /token` (auth-js `signInWithWeb3`, `signInWithEthereum`,
 * `signInWithSolana`): a message a wallet signed (EIP-4361 for Ethereum, its Solana twin) signs
 * in the user of the wallet's `web3:<chain>:<address>` identity, created without email on first
 * use, through the linking rules every external sign-in follows.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/web3.go
 * @module
 */
import type { AppContext, RequestContext } from '../context.js'
import { BadRequestError, OAuthJsonError, UnprocessableEntityError } from '../errors.js'
import { auditActor } from '../models/audit-log.js'
import {
  parseSignInMessage,
  SignInMessageError,
  type SignInMessage,
  type Web3Chain,
} from '../provider/web3-message.js'
import { verifyEthereumSignature, verifySolanaSignature } from '../provider/web3-signature.js'
import type { IssuedSession } from '../sessions/token-service.js'
import { finishIdentitySignIn, signInWithIdentity } from './shared/identities.js'
import type { NotificationLog } from './shared/notifications.js'
import { isRedirectUrlValid } from './shared/redirect.js'

/** The fields of a `web3` grant (upstream `Web3GrantParams`); absent ones are `''`. */
export interface Web3GrantParams {
  /** `ethereum` or `solana`. */
  readonly chain: string
  /** The sign-in message as the wallet signed it. */
  readonly message: string
  /** Ethereum: `0x` and 65 bytes in hex; Solana: 64 bytes in base64 or base64url. */
  readonly signature: string
}

/** The identity provider of every wallet (upstream `Web3Provider`). */
export const WEB3_PROVIDER = 'web3'

/** Messages shorter than this are refused before parsing (upstream's bound). */
const MIN_MESSAGE_BYTES = 64
/** Messages longer than this are refused before parsing (upstream's bound, 20 KiB). */
const MAX_MESSAGE_BYTES = 20 * 1024

/** `Ethereum` or `Solana`, as upstream's texts name the chain. */
const CHAIN_NAMES: Readonly<Record<Web3Chain, string>> = { ethereum: 'Ethereum', solana: 'Solana' }

/** Upstream's refusal of a signed message: `400 {"error": "invalid_grant", …}`. */
function invalidGrant(description: string): OAuthJsonError {
  return new OAuthJsonError('invalid_grant', description)
}

/** The chain of the grant, once it is known and enabled. */
function enabledChain(ctx: AppContext, chain: string): Web3Chain {
  const { web3Ethereum, web3Solana } = ctx.settings.external
  if (!web3Ethereum.enabled && !web3Solana.enabled) {
    throw new UnprocessableEntityError('web3_provider_disabled', 'Web3 provider is disabled')
  }
  if (chain !== 'ethereum' && chain !== 'solana') {
    throw new BadRequestError('web3_unsupported_chain', 'Unsupported chain')
  }
  if (!(chain === 'ethereum' ? web3Ethereum : web3Solana).enabled) {
    throw new UnprocessableEntityError(
      'web3_provider_disabled',
      `${CHAIN_NAMES[chain]} Web3 provider is disabled`,
    )
  }
  return chain
}

/** A Solana signature's 64 bytes from base64 or base64url, padded or not (upstream's reading). */
function solanaSignatureBytes(signature: string): Uint8Array {
  if (signature.length !== 86 && signature.length !== 88) {
    throw new BadRequestError(
      'validation_failed',
      'signature must be 64 bytes encoded as base64 with or without padding',
    )
  }
  const unpadded = signature.replace(/=+$/, '')
  if (!/^[A-Za-z0-9+/_-]*$/.test(unpadded) || unpadded.length % 4 === 1) {
    throw new BadRequestError(
      'validation_failed',
      'signature does not contain valid base64 characters',
    )
  }
  return Buffer.from(unpadded.replaceAll('+', '-').replaceAll('/', '_'), 'base64url')
}

/** The host of a URI as written (`host[:port]`, without user info), `''` without authority. */
function rawHost(uri: string): string {
  return /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/(?:[^/?#@]*@)?([^/?#]*)/.exec(uri)?.[1] ?? ''
}

/** A host without its port and IPv6 brackets (Go's `URL.Hostname`). */
function hostname(host: string): string {
  const bracketed = /^\[([^\]]*)\]/.exec(host)
  if (bracketed !== null) return bracketed[1] ?? ''
  const colon = host.lastIndexOf(':')
  return colon < 0 ? host : host.slice(0, colon)
}

/**
 * The checks of a message whose signature holds, in upstream's order: its URI is HTTPS (or on
 * `localhost`) and an allowed redirect (`SITE_URL`, `URI_ALLOW_LIST`); off `localhost`, its
 * domain is the URI's host and `https://<domain>/` is allowed too; `Not Before` has passed,
 * `Expiration Time` has not (upstream checks it only beside a `Not Before` for Ethereum: here
 * always); `Issued At` is within `EXTERNAL_WEB3_<CHAIN>_MAXIMUM_VALIDITY_DURATION` of now.
 */
function checkMessage(ctx: AppContext, message: SignInMessage, now: number): void {
  const { settings } = ctx
  const name = CHAIN_NAMES[message.chain]
  const host = rawHost(message.uri)
  const local = hostname(host) === 'localhost'
  const scheme = message.uri.slice(0, message.uri.indexOf(':')).toLowerCase()
  if (scheme !== 'https' && !local) {
    throw invalidGrant(`Signed ${name} message is using URI which does not use HTTPS`)
  }
  if (!isRedirectUrlValid(settings, message.uri)) {
    throw invalidGrant(
      `Signed ${name} message is using URI which is not allowed on this server, message was signed for another app`,
    )
  }
  if (
    !local &&
    (host !== message.domain || !isRedirectUrlValid(settings, `https://${message.domain}/`))
  ) {
    throw invalidGrant(
      `Signed ${name} message is using a Domain that does not match the one in URI which is not allowed on this server`,
    )
  }
  if (message.notBefore !== undefined && now < message.notBefore) {
    throw invalidGrant(`Signed ${name} message becomes valid in the future`)
  }
  if (message.expirationTime !== undefined && now > message.expirationTime) {
    throw invalidGrant(`Signed ${name} message is expired`)
  }
  const window =
    message.chain === 'ethereum'
      ? settings.external.web3Ethereum.maximumValidityDurationMs
      : settings.external.web3Solana.maximumValidityDurationMs
  if (now > message.issuedAt + window) {
    throw invalidGrant(`${name} message was issued too long ago`)
  }
  if (now < message.issuedAt - window) {
    throw invalidGrant(`${name} message was issued too far in the future`)
  }
}

/**
 * Checks the signed message and signs the wallet's user in (upstream `Web3Grant`):
 * 1. Web3 on (422 `web3_provider_disabled` "Web3 provider is disabled"), `chain` known (400
 *    `web3_unsupported_chain` "Unsupported chain") and enabled (422 `web3_provider_disabled`
 *    "Ethereum Web3 provider is disabled");
 * 2. the message 64 bytes to 20 KiB, the signature's encoding (400 `validation_failed`), the
 *    message read by {@link parseSignInMessage} (400 `validation_failed` with its reason);
 * 3. the signature (400 `invalid_grant` "Signature does not match address in message"), then
 *    the URI, domain and times (400 `invalid_grant`, see {@link checkMessage});
 * 4. the user of identity `web3:<chain>:<address>` (provider `web3`), created without email
 *    (`identity_data` `{sub, custom_claims: {address, chain, network, domain, statement}}`), a
 *    `login` audit entry with the chain, network, address, domain and URI, and a session with
 *    `amr` `web3`.
 *
 * @throws as listed; the sign-in's errors (`signup_disabled`, `user_banned`).
 */
export async function web3Grant(
  ctx: AppContext,
  params: Web3GrantParams,
  client: RequestContext,
  log: NotificationLog,
): Promise<IssuedSession> {
  const chain = enabledChain(ctx, params.chain)
  const size = Buffer.byteLength(params.message)
  if (size < MIN_MESSAGE_BYTES) {
    throw new BadRequestError('validation_failed', 'message is too short')
  }
  if (size > MAX_MESSAGE_BYTES) {
    throw new BadRequestError('validation_failed', 'message must not exceed 20KB')
  }
  let solanaSignature: Uint8Array | undefined
  if (chain === 'ethereum') {
    if (params.signature.replace(/^0x/, '').length !== 130) {
      throw new BadRequestError(
        'validation_failed',
        'signature must be 65 bytes long, encoded as a 130 character-long hexadecimal string',
      )
    }
  } else {
    solanaSignature = solanaSignatureBytes(params.signature)
  }
  let message: SignInMessage
  try {
    message = parseSignInMessage(chain, params.message)
  } catch (error) {
    if (error instanceof SignInMessageError) {
      throw new BadRequestError('validation_failed', error.message)
    }
    throw error
  }
  const signed =
    solanaSignature === undefined
      ? await verifyEthereumSignature(message, params.signature)
      : verifySolanaSignature(message, solanaSignature)
  if (!signed) throw invalidGrant('Signature does not match address in message')
  checkMessage(ctx, message, ctx.clock.now())

  const providerId = `${WEB3_PROVIDER}:${chain}:${message.address}`
  const claims = {
    sub: providerId,
    custom_claims: {
      address: message.address,
      chain,
      network: message.chainId,
      domain: message.domain,
      // Upstream's Ethereum statement is a pointer (null when absent), its Solana one a string.
      statement: message.statement ?? (chain === 'ethereum' ? null : ''),
    },
  }
  const result = await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    const identity = await signInWithIdentity(
      ctx,
      tx,
      {
        provider: WEB3_PROVIDER,
        data: { id: providerId, emails: [], claims },
        referrer: ctx.settings.siteUrl,
        withoutEmail: true,
      },
      client,
      now,
    )
    await ctx.audit.record(
      tx,
      {
        id: ctx.random.uuid(),
        actor: auditActor(identity.user),
        action: 'login',
        traits: {
          provider: WEB3_PROVIDER,
          chain,
          network: message.chainId,
          address: message.address,
          domain: message.domain,
          uri: message.uri,
        },
        ip: client.ip,
      },
      now,
    )
    const pending = await ctx.tokens.startSession(tx, identity.user, 'web3', client, false)
    return { identity, pending }
  })
  await finishIdentitySignIn(ctx, result.identity, WEB3_PROVIDER, client, log)
  return ctx.tokens.finish(result.pending)
}
