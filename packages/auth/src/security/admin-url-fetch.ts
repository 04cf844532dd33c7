/**
 * Fetching a URL an admin registered (a SAML `metadata_url`): HTTPS GET with a deadline and a
 * size cap, refused when the host resolves to a loopback, private, link-local or otherwise
 * non-public address unless `SECURITY_ALLOW_PRIVATE_URLS` is on. The address is checked when
 * the connection is made (the socket's own lookup), so a name cannot resolve to a public address
 * for the check and a private one for the request.
 *
 * @module
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { request } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { reservedRangeOf } from './url-guard.js'

/** Whether `address` (IPv4 or IPv6, IPv4-mapped IPv6 too) is not a public internet address. */
export function isNonPublicAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped?.[1] !== undefined) return isNonPublicAddress(mapped[1])
  // The ranges of the custom providers' guard: one list of what is not the public internet.
  return reservedRangeOf(address) !== undefined
}

/** Why a fetch failed; `message` is safe to show the admin. */
export class AdminUrlFetchError extends Error {}

/** How {@link fetchAdminUrl} fetches. */
export interface AdminUrlFetchOptions {
  /** `SECURITY_ALLOW_PRIVATE_URLS`. */
  readonly allowPrivate: boolean
  /** Deadline of the whole fetch, in milliseconds. */
  readonly timeoutMs: number
  /** Largest body accepted, in bytes. */
  readonly maxBytes: number
  /** Extra request headers. */
  readonly headers?: Readonly<Record<string, string>>
  /** Certificate authorities to trust instead of Node's (tests). */
  readonly ca?: string
}

/**
 * GETs an `https:` URL and returns its body as text (status 200 only).
 *
 * @throws {@link AdminUrlFetchError} For a non-HTTPS URL, a non-public address (unless allowed),
 *   a connection failure, a status other than 200, a body over `maxBytes` or the deadline.
 */
export function fetchAdminUrl(url: string, options: AdminUrlFetchOptions): Promise<string> {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return Promise.reject(new AdminUrlFetchError(`'${url}' is not a valid URL`))
  }
  if (target.protocol !== 'https:') {
    return Promise.reject(new AdminUrlFetchError(`'${url}' is not a HTTPS URL`))
  }
  const refuse = (address: string) =>
    new AdminUrlFetchError(
      `'${url}' resolves to a non-public address (${address}); set SECURITY_ALLOW_PRIVATE_URLS to allow it`,
    )
  const host = target.hostname.replace(/^\[|\]$/g, '')
  if (isIP(host) !== 0 && !options.allowPrivate && isNonPublicAddress(host)) {
    return Promise.reject(refuse(host))
  }
  const lookup: LookupFunction = (hostname, lookupOptions, callback) => {
    dnsLookup(hostname, { ...lookupOptions, all: true }, (error, found: LookupAddress[]) => {
      if (error) {
        callback(error, '', 0)
        return
      }
      const bad = found.find((a) => isNonPublicAddress(a.address))
      if (!options.allowPrivate && bad !== undefined) {
        callback(refuse(bad.address), '', 0)
        return
      }
      if (lookupOptions.all === true) {
        ;(callback as unknown as (e: null, a: LookupAddress[]) => void)(null, found)
        return
      }
      const first = found[0]
      if (first === undefined) callback(new AdminUrlFetchError(`'${url}' has no address`), '', 0)
      else callback(null, first.address, first.family)
    })
  }
  return new Promise<string>((resolve, reject) => {
    let settled = false
    const fail = (error: unknown) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      req.destroy()
      reject(
        error instanceof AdminUrlFetchError
          ? error
          : new AdminUrlFetchError(
              `Fetching '${url}' failed: ${error instanceof Error ? error.message : String(error)}`,
              { cause: error },
            ),
      )
    }
    const req = request(
      target,
      {
        method: 'GET',
        lookup,
        // A connection of its own: a kept-alive socket would skip the address check.
        agent: false,
        headers: options.headers,
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      },
      (res) => {
        if (res.statusCode !== 200) {
          fail(new AdminUrlFetchError(`HTTP ${String(res.statusCode)} error fetching '${url}'`))
          return
        }
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > options.maxBytes) {
            fail(
              new AdminUrlFetchError(
                `'${url}' answered more than ${String(options.maxBytes)} bytes`,
              ),
            )
            return
          }
          chunks.push(chunk)
        })
        res.on('end', () => {
          if (settled) return
          settled = true
          clearTimeout(deadline)
          resolve(Buffer.concat(chunks).toString('utf8'))
        })
        res.on('error', fail)
      },
    )
    const deadline = setTimeout(() => {
      fail(new AdminUrlFetchError(`Fetching '${url}' timed out`))
    }, options.timeoutMs)
    req.on('error', fail)
    req.end()
  })
}
