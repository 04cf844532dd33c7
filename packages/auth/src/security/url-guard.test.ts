import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { checkRegisteredUrl, guardedFetch, reservedRangeOf, type HostLookup } from './url-guard.js'

/** A resolver answering `addresses` for every name. */
const resolvesTo =
  (...addresses: string[]): HostLookup =>
  () =>
    Promise.resolve(
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    )

describe('reservedRangeOf', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:c0a8:101', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.255', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['240.0.0.1', 'private'],
    ['not-an-ip', 'unspecified'],
  ])('%s is %s', (address, range) => {
    expect(reservedRangeOf(address)).toBe(range)
  })

  it.each(['8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8'])(
    '%s is public',
    (address) => {
      expect(reservedRangeOf(address)).toBeUndefined()
    },
  )
})

describe('checkRegisteredUrl', () => {
  const strict = (lookup: HostLookup) => ({ allowPrivate: false, lookup })

  it('accepts an https URL whose every address is public', async () => {
    await expect(
      checkRegisteredUrl('https://idp.example.com/x', strict(resolvesTo('93.184.216.34'))),
    ).resolves.toBeUndefined()
  })

  it.each([
    ['not a url', 'Invalid URL format'],
    ['http://idp.example.com', 'URL must use HTTPS'],
    ['ftp://idp.example.com', 'URL must use HTTPS'],
    ['https://user:pw@idp.example.com', 'URL must not carry credentials'],
    ['https://127.0.0.1/', 'URL cannot resolve to loopback addresses'],
    ['https://localhost/', 'URL cannot resolve to loopback addresses'],
    ['https://a.localhost/', 'URL cannot resolve to loopback addresses'],
    ['https://[::1]/', 'URL cannot resolve to loopback addresses'],
    ['https://[::ffff:127.0.0.1]/', 'URL cannot resolve to loopback addresses'],
    ['https://169.254.169.254/', 'URL cannot resolve to link-local addresses'],
    ['https://10.0.0.5/', 'URL cannot resolve to private network addresses'],
    ['https://100.64.1.1/', 'URL cannot resolve to private network addresses'],
    ['https://[fd00::1]/', 'URL cannot resolve to private network addresses'],
    ['https://224.0.0.1/', 'URL cannot resolve to multicast addresses'],
    ['https://0.0.0.0/', 'URL cannot resolve to unspecified addresses'],
  ])('refuses %s: %s', async (url, message) => {
    await expect(
      checkRegisteredUrl(url, strict(resolvesTo('93.184.216.34'))),
    ).rejects.toMatchObject({ name: 'BadRequestError', code: 'validation_failed', message })
  })

  it('refuses a name when any one of its addresses is private', async () => {
    await expect(
      checkRegisteredUrl(
        'https://idp.example.com',
        strict(resolvesTo('93.184.216.34', '10.0.0.1')),
      ),
    ).rejects.toMatchObject({ message: 'URL cannot resolve to private network addresses' })
  })

  it('refuses a name that does not resolve', async () => {
    const failing: HostLookup = () => Promise.reject(new Error('ENOTFOUND'))
    await expect(
      checkRegisteredUrl('https://nowhere.invalid', strict(failing)),
    ).rejects.toMatchObject({ message: 'Unable to resolve hostname' })
    await expect(
      checkRegisteredUrl('https://empty.example', strict(resolvesTo())),
    ).rejects.toMatchObject({ message: 'Unable to resolve hostname' })
  })

  it('with allowPrivate, allows private addresses, and http to loopback only', async () => {
    const open = { allowPrivate: true, lookup: resolvesTo('10.0.0.1') }
    await expect(checkRegisteredUrl('https://idp.internal', open)).resolves.toBeUndefined()
    await expect(checkRegisteredUrl('http://127.0.0.1:8080/', open)).resolves.toBeUndefined()
    await expect(checkRegisteredUrl('http://localhost:8080/', open)).resolves.toBeUndefined()
    await expect(checkRegisteredUrl('http://idp.internal/', open)).rejects.toMatchObject({
      message: 'URL must use HTTPS',
    })
  })
})

describe('guardedFetch', () => {
  it('is the default transport when private addresses are allowed', () => {
    expect(guardedFetch({ allowPrivate: true })).toBeUndefined()
  })

  it('checks the address it connects to, so a name rebound to a private address is refused', async () => {
    const server = createServer((_req, res) => res.end('{"ok":true}'))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    try {
      // Registration saw a public address; the name now resolves to loopback.
      const fetch = guardedFetch({ allowPrivate: false, lookup: resolvesTo('127.0.0.1') })
      await expect(
        fetch?.(`http://rebound.example:${String(port)}/`, {
          method: 'GET',
          headers: {},
          redirect: 'manual',
        }),
      ).rejects.toMatchObject({ cause: { code: 'ERR_BLOCKED_ADDRESS' } })
      // A literal loopback address is refused as well.
      await expect(
        fetch?.(`http://127.0.0.1:${String(port)}/`, {
          method: 'GET',
          headers: {},
          redirect: 'manual',
        }),
      ).rejects.toMatchObject({ cause: { code: 'ERR_BLOCKED_ADDRESS' } })
    } finally {
      server.close()
    }
  })
})
