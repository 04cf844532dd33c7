/**
 * Whether a wallet signed a sign-in message: Ethereum's `personal_sign` (EIP-191) through viem,
 * Solana's ed25519 through `@noble/curves`, both as upstream accepts them. Nothing here verifies
 * a signature by hand: the libraries do, this module only frames the bytes they are given.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/utilities/siwe/parser.go
 * @see https://github.com/supabase/auth/blob/master/internal/utilities/siws/parser.go
 * @module
 */
import { ed25519 } from '@noble/curves/ed25519.js'
import { base58 } from '@scure/base'
import type { SignInMessage } from './web3-message.js'

const HEX_SIGNATURE = /^0x[0-9a-fA-F]{130}$/

/**
 * Whether `signature` (`0x` and 65 bytes in hex: r, s, v with v 0, 1, 27 or 28) is the
 * EIP-191 signature of the message by its address (upstream `SIWEMessage.VerifySignature`).
 * Never throws: a malformed signature does not match.
 */
export async function verifyEthereumSignature(
  message: SignInMessage,
  signature: string,
): Promise<boolean> {
  if (!HEX_SIGNATURE.test(signature)) return false
  try {
    // viem is loaded at the first Ethereum sign-in, not with the server (it takes ~0.3 s).
    const { verifyMessage } = await import('viem')
    return await verifyMessage({
      address: message.address as `0x${string}`,
      message: message.raw,
      signature: signature as `0x${string}`,
    })
  } catch {
    return false
  }
}

/** The signing domain of an off-chain message: `\xffsolana offchain`. */
const OFFCHAIN_SIGNING_DOMAIN = new Uint8Array([
  0xff,
  ...new TextEncoder().encode('solana offchain'),
])

/**
 * The bytes a Ledger device signs for `text` (Solana off-chain message, header version 0): the
 * signing domain, version 0, the application domain (the message's domain, zero-padded or cut
 * to 32 bytes), format 0 (ASCII), one signer and its key, the length (16 bits, little-endian)
 * and the text. `undefined` when the text is too long to frame.
 *
 * @see https://docs.anza.xyz/proposals/off-chain-message-signing
 */
function offchainFrame(domain: string, publicKey: Uint8Array, text: Uint8Array) {
  if (text.length > 0xffff) return undefined
  const applicationDomain = new Uint8Array(32)
  applicationDomain.set(new TextEncoder().encode(domain).subarray(0, 32))
  const length = new Uint8Array([text.length & 0xff, text.length >> 8])
  const parts = [
    OFFCHAIN_SIGNING_DOMAIN,
    new Uint8Array([0]),
    applicationDomain,
    new Uint8Array([0, 1]),
    publicKey,
    length,
    text,
  ]
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

/**
 * Whether `signature` (64 bytes) is the ed25519 signature of the message by its address (a
 * base58 public key), over the message itself (Sign in with Solana, wallets' `signMessage`) or
 * over its off-chain frame (a Ledger device), as upstream `SIWSMessage.VerifySignature`.
 * Verification follows RFC 8032 strictly (`zip215: false`: canonical encodings only). Never
 * throws.
 */
export function verifySolanaSignature(message: SignInMessage, signature: Uint8Array): boolean {
  if (signature.length !== 64) return false
  let publicKey: Uint8Array
  try {
    publicKey = base58.decode(message.address)
  } catch {
    return false
  }
  if (publicKey.length !== 32) return false
  const text = new TextEncoder().encode(message.raw)
  const verify = (bytes: Uint8Array): boolean => {
    try {
      return ed25519.verify(signature, bytes, publicKey, { zip215: false })
    } catch {
      return false
    }
  }
  if (verify(text)) return true
  const framed = offchainFrame(message.domain, publicKey, text)
  return framed !== undefined && verify(framed)
}
