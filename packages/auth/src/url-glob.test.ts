import { describe, expect, it } from 'vitest'
import { compileGlob, GlobSyntaxError } from './url-glob.js'

describe('compileGlob (gobwas/glob with separators . and /)', () => {
  it.each([
    // * stays inside one label or segment; ** crosses.
    ['https://*.example.com', 'https://a.example.com', true],
    ['https://*.example.com', 'https://a.b.example.com', false],
    ['https://**.example.com', 'https://a.b.example.com', true],
    ['http://localhost:8000/*', 'http://localhost:8000/path', true],
    ['http://localhost:8000/*', 'http://localhost:8000/path/to/page', false],
    ['http://localhost:8000/*', 'http://localhost:8000/path?param=1', true],
    ['http://localhost:8000/*', 'http://localhost:8000', false],
    ['http://localhost:8000/**', 'http://localhost:8000/a/b.c/d', true],
    ['http://*:12345/*', 'http://127.0.0.1:12345/path', false],
    ['http://**:12345/*', 'http://127.0.0.1:12345/path', true],
    // The whole URL must match.
    ['https://app.example.com', 'https://app.example.com.evil.io', false],
    ['https://app.example.com', 'https://appXexample.com', false],
    // ? is one non-separator character.
    ['https://pr-?.example.com', 'https://pr-1.example.com', true],
    ['https://pr-?.example.com', 'https://pr-12.example.com', false],
    ['https://a?b.com', 'https://a.b.com', false],
    // Character sets, ranges and negation.
    ['https://pr-[0-9].example.com', 'https://pr-7.example.com', true],
    ['https://pr-[0-9].example.com', 'https://pr-x.example.com', false],
    ['https://[!x]y.com', 'https://ay.com', true],
    ['https://[!x]y.com', 'https://xy.com', false],
    ['https://[ab].com', 'https://b.com', true],
    // Alternatives, nested patterns inside.
    ['https://{app,admin}.example.com/**', 'https://admin.example.com/x/y', true],
    ['https://{app,admin}.example.com/**', 'https://api.example.com/x', false],
    ['https://{*.preview,www}.example.com', 'https://pr-3.preview.example.com', true],
    // Escapes and characters that mean something in regular expressions.
    ['https://example.com/\\*', 'https://example.com/*', true],
    ['https://example.com/\\*', 'https://example.com/a', false],
    ['myapp://callback(1)+$^|', 'myapp://callback(1)+$^|', true],
    ['com.example.app://*', 'com.example.app://login-callback', true],
    ['com.example.app://*', 'com.example.app://login/callback', false],
  ])('%s matches %s: %s', (glob, url, matches) => {
    expect(compileGlob(glob).test(url)).toBe(matches)
  })

  it.each([
    ['https://[a.com', '"https://[a.com": [ is not closed by ]'],
    ['https://{a,b.com', '"https://{a,b.com": { is not closed by }'],
    ['https://a.com/\\', '"https://a.com/\\": a trailing \\ escapes nothing'],
    ['https://[!].com', '"https://[!].com": [] names no character'],
    ['https://[z-a].com', '"https://[z-a].com": the range z-a is reversed'],
  ])('refuses %s', (glob, message) => {
    expect(() => compileGlob(glob)).toThrow(new GlobSyntaxError(message))
  })
})
