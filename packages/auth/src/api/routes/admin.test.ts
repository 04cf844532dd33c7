import { describe, expect, it } from 'vitest'
import { parseBanDuration } from '../../services/admin-users.js'
import { paginationLink } from './admin.js'

describe('paginationLink', () => {
  it('has next and last links like upstream', () => {
    expect(paginationLink('/admin/users', 1, 1, 3)).toBe(
      '</admin/users?page=2&per_page=1>; rel="next", </admin/users?page=3&per_page=1>; rel="last"',
    )
    expect(paginationLink('/admin/users', 3, 1, 3)).toBe(
      '</admin/users?page=3&per_page=1>; rel="last"',
    )
  })
})

describe('parseBanDuration', () => {
  it('accepts Go durations and none', () => {
    expect(parseBanDuration('24h')).toBe(86_400_000)
    expect(parseBanDuration('none')).toBeNull()
    expect(() => parseBanDuration('forever')).toThrow(
      'invalid format for ban duration: time: invalid duration "forever"',
    )
  })
})
