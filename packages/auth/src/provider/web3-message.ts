/**
 * The sign-in messages a wallet signs for `POST /token?grant_type=web3`: EIP-4361 (Sign in with
 * Ethereum) and the Solana message of the same shape (upstream `siwe` and `siws`), read line by
 * line with upstream's rules and texts, and stricter where a lenient reading would let the
 * wallet show one thing and the server act on another (see {@link parseSignInMessage}).
 *
 * @see https://eips.ethereum.org/EIPS/eip-4361
 * @see https://github.com/supabase/auth/blob/master/internal/utilities/siwe/parser.go
 * @see https://github.com/supabase/auth/blob/master/internal/utilities/siws/parser.go
 * @module
 */
import { base58 } from '@scure/base'

/** The chains of the Web3 grant (its `chain` field). */
export const WEB3_CHAINS = ['ethereum', 'solana'] as const

/** One of {@link WEB3_CHAINS}. */
export type Web3Chain = (typeof WEB3_CHAINS)[number]

/** A message that does not read as a sign-in message; `message` is upstream's text. */
export class SignInMessageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SignInMessageError'
  }
}

/** A parsed sign-in message. Times are epoch milliseconds. */
export interface SignInMessage {
  /** The message as signed. */
  readonly raw: string
  readonly chain: Web3Chain
  /** The `domain` of the first line (`host[:port]`). */
  readonly domain: string
  /** The wallet address as written (hex for Ethereum, base58 for Solana). */
  readonly address: string
  /** The statement line, `undefined` when there is none. */
  readonly statement: string | undefined
  /** `URI` as written. */
  readonly uri: string
  readonly version: string
  /** `Chain ID`, `''` when absent. */
  readonly chainId: string
  /** `Nonce`, `''` when absent (not required, as upstream). */
  readonly nonce: string
  readonly issuedAt: number
  readonly expirationTime: number | undefined
  readonly notBefore: number | undefined
  readonly requestId: string | undefined
  readonly resources: readonly string[]
}

/** What differs between the two chains' messages. */
interface ChainRules {
  readonly prefix: string
  readonly account: string
  readonly addressError: string
  isAddress(address: string): boolean
  isChainId(value: string): boolean
}

/** A decimal EIP-155 chain id above zero (upstream reads it with `strconv.Atoi`). */
const ETHEREUM_CHAIN_ID = /^[1-9][0-9]{0,17}$/
const ETHEREUM_ADDRESS = /^0x[a-fA-F0-9]{40}$/
const SOLANA_ADDRESS = /^[a-zA-Z0-9]{32,44}$/
const SOLANA_CHAIN_ID = /^solana:(main|dev|test|local)net$/

/** A Solana address: base58 of a 32-byte ed25519 public key (upstream checks the pattern only). */
function isSolanaAddress(address: string): boolean {
  if (!SOLANA_ADDRESS.test(address)) return false
  try {
    return base58.decode(address).length === 32
  } catch {
    return false
  }
}

const RULES: Readonly<Record<Web3Chain, ChainRules>> = {
  ethereum: {
    prefix: 'siwe',
    account: 'Ethereum',
    addressError: 'wallet address is not a valid Ethereum address',
    isAddress: (address) => ETHEREUM_ADDRESS.test(address),
    isChainId: (value) => ETHEREUM_CHAIN_ID.test(value),
  },
  solana: {
    prefix: 'siws',
    account: 'Solana',
    addressError: 'wallet address is not in base58 format',
    isAddress: isSolanaAddress,
    isChainId: (value) => value === '' || SOLANA_CHAIN_ID.test(value),
  },
}

/** `host[:port]`: `localhost` or a DNS name with a top-level label of letters (upstream's). */
const DOMAIN =
  /^(localhost|(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,})(?::\d{1,5})?$/

/** RFC 3339 date-time, as Go's `time.Parse(time.RFC3339, …)` reads it. */
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-](\d{2}):(\d{2}))$/

/** Epoch milliseconds of an RFC 3339 timestamp, `undefined` when it is not one. */
export function parseRfc3339(value: string): number | undefined {
  const m = RFC3339.exec(value)
  if (m === null) return undefined
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ]
  const local = Date.UTC(year, month - 1, day, hour, minute, second)
  const back = new Date(local)
  if (
    year < 1 ||
    back.getUTCFullYear() !== year ||
    back.getUTCMonth() !== month - 1 ||
    back.getUTCDate() !== day ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  ) {
    return undefined
  }
  let offset = 0
  if (m[8] !== 'Z') {
    const offsetHours = Number(m[9])
    const offsetMinutes = Number(m[10])
    if (offsetHours > 23 || offsetMinutes > 59) return undefined
    offset = (m[8]?.startsWith('-') ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000
  }
  const millis = Number(`0.${m[7] ?? '0'}`) * 1000
  return local - offset + Math.floor(millis)
}

/**
 * Whether `value` is an absolute URI: printable ASCII without spaces and an absolute URL by
 * WHATWG (upstream's `url.ParseRequestURI` also takes a bare path; a sign-in URI is never one).
 */
function isAbsoluteUri(value: string): boolean {
  return /^[a-zA-Z][a-zA-Z0-9+.-]*:[\x21-\x7e]*$/.test(value) && URL.canParse(value)
}

/** The fields a message may carry after its statement, by their label. */
const FIELDS = [
  'URI',
  'Version',
  'Chain ID',
  'Nonce',
  'Issued At',
  'Expiration Time',
  'Not Before',
  'Request ID',
] as const
type FieldName = (typeof FIELDS)[number]
const FIELD_NAMES: ReadonlySet<string> = new Set(FIELDS)

/**
 * Reads a sign-in message of `chain` (upstream `siwe.ParseMessage` / `siws.ParseMessage`): the
 * first line `<domain> wants you to sign in with your <Ethereum|Solana> account:`, the address,
 * an empty line, an optional statement followed by an empty line, then `Label: value` fields
 * and an optional `Resources:` list of `- <uri>` lines. `Version` must be `1`, `URI` and
 * `Issued At` present, the times RFC 3339 and in order (`Issued At` and `Not Before` not after
 * `Expiration Time`); a Solana `Chain ID` is `solana:<main|dev|test|local>net`, an Ethereum one a
 * decimal above zero. Errors carry upstream's texts (`siwe: …`, `siws: …`).
 *
 * Stricter than upstream (SECURITY.md), where it ignores what it does not understand: a label
 * it does not know, or one given twice, is refused (the wallet may show the first and a server
 * use the last); a URI must be absolute; a Solana address must be the base58 of 32 bytes.
 *
 * The caller bounds the length (20 KiB): the work is linear in it.
 *
 * @throws {@link SignInMessageError} with the reason.
 */
export function parseSignInMessage(chain: Web3Chain, raw: string): SignInMessage {
  const rules = RULES[chain]
  const fail = (reason: string): never => {
    throw new SignInMessageError(`${rules.prefix}: ${reason}`)
  }
  const lines = raw.split('\n')
  if (lines.length < 6) fail('message needs at least 6 lines')
  const suffix = ` wants you to sign in with your ${rules.account} account:`
  const header = lines[0] ?? ''
  if (!header.endsWith(suffix)) fail(`message first line does not end in "${suffix}"`)
  const domain = header.slice(0, -suffix.length).trim()
  if (!DOMAIN.test(domain)) fail('domain in first line of message is not valid')
  const address = (lines[1] ?? '').trim()
  if (!rules.isAddress(address)) fail(rules.addressError)
  if (lines[2] !== '') fail('third line must be empty')

  let statement: string | undefined
  let start = 3
  if (lines[3] !== '' && lines[4] === '') {
    statement = lines[3]
    start = 5
  }

  const fields = new Map<FieldName, string>()
  const resources: string[] = []
  let inResources = false
  let sawResources = false
  for (let i = start; i < lines.length; i++) {
    const line = (lines[i] ?? '').trim()
    if (inResources) {
      if (line.startsWith('- ')) {
        const resource = line.slice(2).trim()
        if (!isAbsoluteUri(resource)) {
          fail(`Resource at position ${String(resources.length)} has invalid URI`)
        }
        resources.push(resource)
        continue
      }
      inResources = false
    }
    if (line === 'Resources:') {
      if (sawResources) fail('Resources appear more than once')
      inResources = true
      sawResources = true
      continue
    }
    if (line === '') continue
    const colon = line.indexOf(':')
    if (colon < 0) fail(`encountered unparsable line at index ${String(i)}`)
    const label = line.slice(0, colon)
    if (!FIELD_NAMES.has(label)) fail(`encountered unknown field "${label}" at index ${String(i)}`)
    if (fields.has(label as FieldName)) fail(`${label} appears more than once`)
    fields.set(label as FieldName, line.slice(colon + 1).trim())
  }

  const time = (label: FieldName, error: string): number | undefined => {
    const value = fields.get(label)
    if (value === undefined) return undefined
    return parseRfc3339(value) ?? fail(error)
  }
  const uri = fields.get('URI')
  if (uri !== undefined && !isAbsoluteUri(uri)) fail('URI is not valid')
  const chainId = fields.get('Chain ID')
  if (chainId !== undefined && !rules.isChainId(chainId)) fail('Chain ID is not valid')
  const issuedAt = time('Issued At', 'Issued At is not a valid ISO8601 timestamp')
  const expirationTime = time('Expiration Time', 'Expiration Time is not a valid ISO8601 timestamp')
  const notBefore = time('Not Before', 'Not Before is not a valid ISO8601 timestamp')
  const version = fields.get('Version') ?? ''
  if (version !== '1') fail(`Version value is not supported, expected 1 got "${version}"`)
  if (issuedAt === undefined) return fail('Issued At is not specified')
  if (uri === undefined) return fail('URI is not specified')
  if (expirationTime !== undefined && issuedAt > expirationTime) {
    fail('Issued At is after Expiration Time')
  }
  if (notBefore !== undefined && expirationTime !== undefined && notBefore > expirationTime) {
    fail('Not Before is after Expiration Time')
  }
  return {
    raw,
    chain,
    domain,
    address,
    statement,
    uri,
    version,
    chainId: chainId ?? '',
    nonce: fields.get('Nonce') ?? '',
    issuedAt,
    expirationTime,
    notBefore,
    requestId: fields.get('Request ID'),
    resources,
  }
}
