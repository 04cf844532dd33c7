import { describe, expect, it } from 'vitest'
import { grpcMessage } from './grpc-native.js'

describe('grpc-message percent-encoding', () => {
  it('keeps printable ASCII except % and encodes the rest as UTF-8 bytes', () => {
    expect(grpcMessage('rate limit domain must not be empty')).toBe(
      'rate limit domain must not be empty',
    )
    expect(grpcMessage('grpc: error: 100%')).toBe('grpc: error: 100%25')
    expect(grpcMessage('ü\n')).toBe('%C3%BC%0A')
  })
})
