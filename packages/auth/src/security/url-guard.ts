/**
 * The SSRF guard for every URL an administrator registers (custom OAuth/OIDC providers' issuers
 * and endpoints): it must be `https` and its host must resolve only to public addresses, unless
 * `SECURITY_ALLOW_PRIVATE_URLS` allows private ones (which also allows `http` to a loopback
 * host). Registration checks every address the name resolves to ({@link checkRegisteredUrl});
 * the requests made later connect through {@link guardedFetch}, whose DNS lookup checks the
 * address it connects to again, so a name that resolves elsewhere after registration (DNS
 * rebinding) is refused at connect time.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/utilities/url_validator.go
 * @module
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP } from 'node:net'
import { Agent, fetch as undiciFetch } from 'undici'
import type { FetchLike } from '@gatehouse/oauth2'
import { BadRequestError } from '../errors.js'

/** Why an address is refused: which reserved range it is in. */
export type AddressRange = 'loopback' | 'private' | 'link-local' | 'multicast' | 'unspecified'

/** Each reserved range, IPv4 and IPv6 (IPv4-mapped IPv6 addresses are checked as IPv4). */
const RANGES: Readonly<
  Record<AddressRange, readonly (readonly [string, number, 'ipv4' | 'ipv6'])[]>
> = {
  loopback: [
    ['127.0.0.0', 8, 'ipv4'],
    ['::1', 128, 'ipv6'],
  ],
  unspecified: [
    ['0.0.0.0', 8, 'ipv4'],
    ['::', 128, 'ipv6'],
  ],
  'link-local': [
    ['169.254.0.0', 16, 'ipv4'],
    ['fe80::', 10, 'ipv6'],
  ],
  multicast: [
    ['224.0.0.0', 4, 'ipv4'],
    ['ff00::', 8, 'ipv6'],
  ],
  private: [
    ['10.0.0.0', 8, 'ipv4'],
    ['172.16.0.0', 12, 'ipv4'],
    ['192.168.0.0', 16, 'ipv4'],
    // Carrier-grade NAT (RFC 6598), IETF protocol assignments, benchmarking, reserved.
    ['100.64.0.0', 10, 'ipv4'],
    ['192.0.0.0', 24, 'ipv4'],
    ['198.18.0.0', 15, 'ipv4'],
    ['240.0.0.0', 4, 'ipv4'],
    // Unique-local (RFC 4193), deprecated site-local, deprecated IPv4-compatible.
    ['fc00::', 7, 'ipv6'],
    ['fec0::', 10, 'ipv6'],
    ['::', 96, 'ipv6'],
  ],
}

const BLOCK_LISTS = Object.entries(RANGES).map(([range, subnets]) => {
  const list = new BlockList()
  for (const [network, prefix, family] of subnets) list.addSubnet(network, prefix, family)
  return [range as AddressRange, list] as const
})

/**
 * The reserved range an IP address is in, `undefined` for a public one. IPv4-mapped IPv6
 * addresses (`::ffff:10.0.0.1`) count as their IPv4 address.
 */
export function reservedRangeOf(address: string): AddressRange | undefined {
  const family = isIP(address)
  if (family === 0) return 'unspecified'
  const type = family === 4 ? 'ipv4' : 'ipv6'
  for (const [range, list] of BLOCK_LISTS) {
    if (list.check(address, type)) return range
  }
  return undefined
}

/** Upstream's text for each range. */
const RANGE_MESSAGES: Readonly<Record<AddressRange, string>> = {
  loopback: 'URL cannot resolve to loopback addresses',
  private: 'URL cannot resolve to private network addresses',
  'link-local': 'URL cannot resolve to link-local addresses',
  multicast: 'URL cannot resolve to multicast addresses',
  unspecified: 'URL cannot resolve to unspecified addresses',
}

/** Resolves a host name to every address it has (`dns.lookup` with `all`). */
export type HostLookup = (hostname: string) => Promise<readonly LookupAddress[]>

/** The system resolver, as `dns.lookup(host, { all: true })`, bounded to 5 s. */
export const systemLookup: HostLookup = (hostname) =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error('DNS lookup timed out'))
    }, 5_000)
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => {
      clearTimeout(timer)
      if (error) reject(error)
      else resolve(addresses)
    })
  })

/** How URLs are checked. */
export interface UrlGuardOptions {
  /** `SECURITY_ALLOW_PRIVATE_URLS`: private addresses (and `http` to loopback) are allowed. */
  readonly allowPrivate: boolean
  /** The resolver. @default {@link systemLookup} */
  readonly lookup?: HostLookup
}

function refused(message: string): BadRequestError {
  return new BadRequestError('validation_failed', message)
}

/** A host name without IPv6 brackets. */
function bareHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1')
}

/**
 * Checks a URL an administrator registers: parsed, `https`, with a host that resolves only to
 * public addresses (every address checked). With `allowPrivate`, any address is allowed, and
 * `http` too when every address is a loopback one.
 *
 * @throws {@link BadRequestError} `validation_failed` with upstream's texts: "Invalid URL
 *   format", "URL must use HTTPS", "URL must have a valid hostname", "Unable to resolve
 *   hostname", "URL cannot resolve to loopback addresses", and so on for each range.
 */
export async function checkRegisteredUrl(raw: string, options: UrlGuardOptions): Promise<void> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw refused('Invalid URL format')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refused('URL must use HTTPS')
  const host = bareHost(url)
  if (host === '') throw refused('URL must have a valid hostname')
  if (url.username !== '' || url.password !== '') {
    throw refused('URL must not carry credentials')
  }
  let addresses: readonly string[]
  if (isIP(host) !== 0) {
    addresses = [host]
  } else if (host === 'localhost' || host.endsWith('.localhost')) {
    addresses = ['127.0.0.1']
  } else {
    try {
      addresses = (await (options.lookup ?? systemLookup)(host)).map((a) => a.address)
    } catch {
      throw refused('Unable to resolve hostname')
    }
    if (addresses.length === 0) throw refused('Unable to resolve hostname')
  }
  const ranges = addresses.map(reservedRangeOf)
  if (url.protocol === 'http:') {
    if (!options.allowPrivate || !ranges.every((r) => r === 'loopback')) {
      throw refused('URL must use HTTPS')
    }
    return
  }
  if (options.allowPrivate) return
  const blocked = ranges.find((r) => r !== undefined)
  if (blocked !== undefined) throw refused(RANGE_MESSAGES[blocked])
}

/** The error a guarded connection fails with when its host resolves to a reserved address. */
export class BlockedAddressError extends Error {
  readonly code = 'ERR_BLOCKED_ADDRESS'
  constructor(hostname: string, range: AddressRange) {
    super(`${hostname} resolves to a ${range} address`)
    this.name = 'BlockedAddressError'
  }
}

/**
 * A `fetch` whose connections check, at connect time, the address they connect to: the DNS
 * lookup of each connection refuses a host with any reserved address (unless `allowPrivate`), so
 * the address checked is the address used. Requests to the URLs {@link checkRegisteredUrl}
 * accepted go through it, which defeats DNS rebinding between registration and use.
 *
 * @returns `undefined` with `allowPrivate` (nothing to check: the library's own transport).
 */
export function guardedFetch(options: UrlGuardOptions): FetchLike | undefined {
  if (options.allowPrivate) return undefined
  const resolve = options.lookup ?? systemLookup
  const agent = new Agent({
    connect: {
      lookup(hostname, lookupOptions, callback) {
        const host = hostname.replace(/^\[(.*)\]$/, '$1')
        const found: Promise<readonly LookupAddress[]> =
          isIP(host) !== 0
            ? Promise.resolve([{ address: host, family: isIP(host) }])
            : resolve(host)
        found.then(
          (addresses) => {
            for (const { address } of addresses) {
              const range = reservedRangeOf(address)
              if (range !== undefined) {
                callback(new BlockedAddressError(hostname, range), '', 0)
                return
              }
            }
            const wantsAll = (lookupOptions as { all?: boolean }).all === true
            if (wantsAll) {
              ;(callback as unknown as (e: null, a: readonly LookupAddress[]) => void)(
                null,
                addresses,
              )
            } else {
              const first = addresses[0]
              if (first === undefined) callback(new Error(`${hostname} has no address`), '', 0)
              else callback(null, first.address, first.family)
            }
          },
          (error: unknown) => {
            callback(error instanceof Error ? error : new Error(String(error)), '', 0)
          },
        )
      },
    },
  })
  return async (input, init) => {
    // A literal address connects without a lookup: checked here.
    const host = bareHost(new URL(input))
    const range = isIP(host) === 0 ? undefined : reservedRangeOf(host)
    if (range !== undefined) {
      throw new TypeError('fetch failed', { cause: new BlockedAddressError(host, range) })
    }
    return undiciFetch(input, { ...init, dispatcher: agent })
  }
}
