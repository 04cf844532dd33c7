import { describe, expect, it } from 'vitest'
import { parseRfc3339, parseSignInMessage, SignInMessageError } from './web3-message.js'
import { verifyEthereumSignature, verifySolanaSignature } from './web3-signature.js'

const ETH = '0xa1E993d09257291470e86778399D79A0864F327E'
const SOL = '2EZEiBdw47VHT6SpZSW9VnuSvBe7DxuYHBTxj19gxvv8'

/** A message of `chain` from its lines after the address. */
function message(chain: 'ethereum' | 'solana', ...rest: string[]): string {
  const account = chain === 'ethereum' ? 'Ethereum' : 'Solana'
  const address = chain === 'ethereum' ? ETH : SOL
  return [`example.com wants you to sign in with your ${account} account:`, address, ...rest].join(
    '\n',
  )
}

const FIELDS = ['URI: https://example.com/', 'Version: 1', 'Issued At: 2026-01-01T00:00:00Z']

function refusal(chain: 'ethereum' | 'solana', raw: string): string {
  try {
    parseSignInMessage(chain, raw)
  } catch (error) {
    if (error instanceof SignInMessageError) return error.message
    throw error
  }
  throw new Error('parsed')
}

describe('parseSignInMessage', () => {
  it('reads every field, with and without a statement', () => {
    const parsed = parseSignInMessage(
      'ethereum',
      message(
        'ethereum',
        '',
        'Sign in please',
        '',
        'URI: https://example.com/login',
        'Version: 1',
        'Chain ID: 137',
        'Nonce: abcdefgh123',
        'Issued At: 2026-01-01T00:00:00.123Z',
        'Expiration Time: 2026-01-01T02:00:00+01:00',
        'Not Before: 2025-12-31T23:59:59Z',
        'Request ID: req-1',
        'Resources:',
        '- https://example.com/a',
        '- ipfs://bafy',
        '',
      ),
    )
    expect(parsed).toMatchObject({
      chain: 'ethereum',
      domain: 'example.com',
      address: ETH,
      statement: 'Sign in please',
      uri: 'https://example.com/login',
      version: '1',
      chainId: '137',
      nonce: 'abcdefgh123',
      issuedAt: Date.UTC(2026, 0, 1, 0, 0, 0, 123),
      expirationTime: Date.UTC(2026, 0, 1, 1, 0, 0),
      notBefore: Date.UTC(2025, 11, 31, 23, 59, 59),
      requestId: 'req-1',
      resources: ['https://example.com/a', 'ipfs://bafy'],
    })
    const bare = parseSignInMessage('solana', message('solana', '', ...FIELDS))
    expect(bare).toMatchObject({ statement: undefined, chainId: '', nonce: '', resources: [] })
  })

  it('refuses each malformed part with upstream’s text', () => {
    const cases: [chain: 'ethereum' | 'solana', raw: string, text: string][] = [
      ['ethereum', 'a\nb', 'siwe: message needs at least 6 lines'],
      [
        'solana',
        message('ethereum', '', ...FIELDS),
        'siws: message first line does not end in " wants you to sign in with your Solana account:"',
      ],
      [
        'ethereum',
        message('ethereum', '', ...FIELDS).replace('example.com', 'exa mple'),
        'siwe: domain in first line of message is not valid',
      ],
      [
        'ethereum',
        message('ethereum', '', ...FIELDS).replace(ETH, '0x1234'),
        'siwe: wallet address is not a valid Ethereum address',
      ],
      [
        'solana',
        // Base58 characters, but 33 bytes: not an ed25519 key (stricter than upstream).
        message('solana', '', ...FIELDS).replace(SOL, 'z'.repeat(44)),
        'siws: wallet address is not in base58 format',
      ],
      ['ethereum', message('ethereum', 'x', ...FIELDS), 'siwe: third line must be empty'],
      [
        'ethereum',
        message('ethereum', '', ...FIELDS, 'garbage'),
        'siwe: encountered unparsable line at index 6',
      ],
      [
        'ethereum',
        message('ethereum', '', ...FIELDS, 'Nonce: a', 'Nonce: b'),
        'siwe: Nonce appears more than once',
      ],
      [
        'ethereum',
        message('ethereum', '', 'URI: not a uri', 'Version: 1', 'Issued At: 2026-01-01T00:00:00Z'),
        'siwe: URI is not valid',
      ],
      [
        'solana',
        message('solana', '', ...FIELDS, 'Issued At: yesterday'),
        'siws: Issued At appears more than once',
      ],
      [
        'ethereum',
        message('ethereum', '', 'URI: https://example.com/', 'Version: 1', 'Issued At: yesterday'),
        'siwe: Issued At is not a valid ISO8601 timestamp',
      ],
      [
        'ethereum',
        message('ethereum', '', ...FIELDS, 'Expiration Time: 2026-02-30T00:00:00Z'),
        'siwe: Expiration Time is not a valid ISO8601 timestamp',
      ],
      [
        'ethereum',
        message('ethereum', '', ...FIELDS, 'Not Before: 2026-01-01 00:00:00Z'),
        'siwe: Not Before is not a valid ISO8601 timestamp',
      ],
      [
        'ethereum',
        message(
          'ethereum',
          '',
          'URI: https://example.com/',
          'Version: 2',
          'Issued At: 2026-01-01T00:00:00Z',
        ),
        'siwe: Version value is not supported, expected 1 got "2"',
      ],
      [
        'ethereum',
        message('ethereum', '', 'URI: https://example.com/', 'Version: 1', 'Chain ID: 01'),
        'siwe: Chain ID is not valid',
      ],
      [
        'ethereum',
        message('ethereum', '', 'URI: https://example.com/', 'Version: 1', 'Nonce: abc'),
        'siwe: Issued At is not specified',
      ],
      [
        'solana',
        message('solana', '', 'Version: 1', 'Issued At: 2026-01-01T00:00:00Z', ''),
        'siws: URI is not specified',
      ],
      [
        'ethereum',
        message('ethereum', '', ...FIELDS, 'Expiration Time: 2025-01-01T00:00:00Z'),
        'siwe: Issued At is after Expiration Time',
      ],
      [
        'ethereum',
        message(
          'ethereum',
          '',
          'URI: https://example.com/',
          'Version: 1',
          'Issued At: 2025-01-01T00:00:00Z',
          'Expiration Time: 2026-01-01T00:00:00Z',
          'Not Before: 2026-06-01T00:00:00Z',
        ),
        'siwe: Not Before is after Expiration Time',
      ],
      [
        'solana',
        message('solana', '', ...FIELDS, 'Resources:', '- not a uri'),
        'siws: Resource at position 0 has invalid URI',
      ],
      [
        'solana',
        message('solana', '', ...FIELDS, 'Chain ID: solana:fakenet'),
        'siws: Chain ID is not valid',
      ],
    ]
    for (const [chain, raw, text] of cases) expect(refusal(chain, raw), raw).toBe(text)
  })
})

describe('parseRfc3339', () => {
  it('reads RFC 3339 times with offsets and fractions, and nothing else', () => {
    expect(parseRfc3339('2026-03-01T10:00:00.5-02:30')).toBe(Date.UTC(2026, 2, 1, 12, 30, 0, 500))
    expect(parseRfc3339('2026-03-01T10:00:00.123456789Z')).toBe(Date.UTC(2026, 2, 1, 10, 0, 0, 123))
    for (const bad of ['2026-03-01', '2026-13-01T00:00:00Z', '2026-03-01T24:00:00Z', '1e9']) {
      expect(parseRfc3339(bad), bad).toBeUndefined()
    }
  })
})

describe('signatures of real wallets (upstream’s test vectors)', () => {
  it('verifies a MetaMask personal_sign and refuses it for another message', async () => {
    const raw =
      'supabase.com wants you to sign in with your Ethereum account:\n0xa1E993d09257291470e86778399D79A0864F327E\n\nStatement\n\nURI: https://supabase.com\nVersion: 1\nIssued At: 2025-03-29T00:00:00.000Z\nExpiration Time: 2025-03-29T00:10:00Z\nNot Before: 2025-03-29T00:00:00Z'
    const signature =
      '0x37495c9ac73f7a3acb589820699db39e1ab290f6756e41e16c2ddeb8588669440c9df95027597d518e3afb7db6f692fb63c44f56d266b2c65ac78a5d317bf5ef1c'
    const parsed = parseSignInMessage('ethereum', raw)
    expect(await verifyEthereumSignature(parsed, signature)).toBe(true)
    const other = parseSignInMessage('ethereum', raw.replace('Statement', 'Statemenu'))
    expect(await verifyEthereumSignature(other, signature)).toBe(false)
    expect(await verifyEthereumSignature(parsed, signature.slice(2))).toBe(false)
    expect(await verifyEthereumSignature(parsed, `0x${'00'.repeat(65)}`)).toBe(false)
  })

  it('verifies a Ledger-signed Solana message (off-chain frame)', () => {
    const raw =
      'supabase.com wants you to sign in with your Solana account:\nEqzxWVyBpLD34SV9w1FFpPPvbfrfAXdiDVg1cyHTR1Rv\n\nI confirm ownership of this wallet\n\nVersion: 1\nURI: https://supabase.com/\nIssued At: 2025-07-29T22:29:52.235Z'
    const signature = Buffer.from(
      '9slc0BBJw16TzWYs4/op8na3vt9E0CKt0FL5pqhzTDxvqF/txpbdo+ULDCeSzrDE/uJWmpMQw+hF0rkDj4Q0Bw==',
      'base64',
    )
    const parsed = parseSignInMessage('solana', raw)
    expect(verifySolanaSignature(parsed, signature)).toBe(true)
    expect(verifySolanaSignature(parsed, signature.subarray(1))).toBe(false)
    const flipped = Buffer.from(signature)
    flipped[0] = (flipped[0] ?? 0) ^ 1
    expect(verifySolanaSignature(parsed, flipped)).toBe(false)
  })
})
