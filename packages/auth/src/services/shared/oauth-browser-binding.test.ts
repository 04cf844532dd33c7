import { describe, expect, it } from 'vitest'
import {
  BINDING_COOKIE,
  INSECURE_BINDING_COOKIE,
  bindingCookie,
  bindingCookieName,
  bindingHash,
  newBindingSecret,
  readBindingSecret,
} from './oauth-browser-binding.js'

const at = (apiExternalUrl: string) => ({ apiExternalUrl })

describe('the browser-binding cookie', () => {
  it('is a Secure __Host- cookie on https and on plain-http loopback hosts', () => {
    for (const url of [
      'https://auth.example.com/auth/v1',
      'http://localhost:9999',
      'http://app.localhost:9999',
      'http://127.0.0.1:9999',
      'http://127.1.2.3:9999',
      'http://[::1]:9999',
    ]) {
      expect(bindingCookieName(at(url))).toBe(BINDING_COOKIE)
    }
    expect(bindingCookie(at('http://127.0.0.1:9999'), 'x'.repeat(43))).toBe(
      `__Host-gatehouse-oauth=${'x'.repeat(43)}; Max-Age=300; Path=/; HttpOnly; SameSite=Lax; Secure`,
    )
  })

  it('drops Secure (and the prefix that needs it) on other plain-http hosts', () => {
    for (const url of ['http://192.168.1.10:9999', 'http://auth.internal', 'http://[::2]:1']) {
      expect(bindingCookieName(at(url))).toBe(INSECURE_BINDING_COOKIE)
    }
    expect(bindingCookie(at('http://auth.internal'), 'y'.repeat(43))).toBe(
      `gatehouse-oauth=${'y'.repeat(43)}; Max-Age=300; Path=/; HttpOnly; SameSite=Lax`,
    )
  })

  it('reads only a well-formed secret of its own name', () => {
    const secret = newBindingSecret({ bytes: (n) => new Uint8Array(n).fill(7) })
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/)
    const s = at('https://auth.example.com')
    expect(readBindingSecret(s, `a=1; __Host-gatehouse-oauth=${secret}; b=2`)).toBe(secret)
    expect(readBindingSecret(s, `gatehouse-oauth=${secret}`)).toBeUndefined()
    expect(readBindingSecret(s, '__Host-gatehouse-oauth=short')).toBeUndefined()
    expect(readBindingSecret(s, `__Host-gatehouse-oauth=${secret}x`)).toBeUndefined()
    expect(readBindingSecret(s, undefined)).toBeUndefined()
    expect(bindingHash(secret)).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(bindingHash(secret)).not.toBe(secret)
  })
})
