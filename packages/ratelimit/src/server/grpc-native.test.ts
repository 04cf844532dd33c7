import { describe, expect, it } from 'vitest'
import { grpcMessage, parseGrpcTimeout } from './grpc-native.js'

describe('grpc-message percent-encoding', () => {
  it('keeps printable ASCII except % and encodes the rest as UTF-8 bytes', () => {
    expect(grpcMessage('rate limit domain must not be empty')).toBe(
      'rate limit domain must not be empty',
    )
    expect(grpcMessage('grpc: error: 100%')).toBe('grpc: error: 100%25')
    expect(grpcMessage('ü\n')).toBe('%C3%BC%0A')
  })
})

describe('grpc-timeout parsing (as grpc-js reads it)', () => {
  it.each([
    ['1H', 3_600_000],
    ['2M', 120_000],
    ['3S', 3000],
    ['250m', 250],
    ['12345678m', 12_345_678],
    ['1500u', 1],
    ['999999n', 0],
    [' 5 S', 5000],
    ['x7my', 7],
  ])('reads %j as %d ms', (value, ms) => {
    expect(parseGrpcTimeout(value)).toBe(ms)
  })

  it.each(['', 'soon', 'm', '5', '5x', '-'])('refuses %j', (value) => {
    expect(parseGrpcTimeout(value)).toBeUndefined()
  })
})
