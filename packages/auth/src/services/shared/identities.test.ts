import { describe, expect, it } from 'vitest'
import { chooseEmail } from './identities.js'

describe('chooseEmail', () => {
  it('prefers the primary verified address, then any verified one, then the primary', () => {
    const a = { email: 'A@Example.com', verified: false, primary: true }
    const b = { email: 'b@example.com', verified: true, primary: false }
    const c = { email: 'c@example.com', verified: true, primary: true }
    expect(chooseEmail([a, b, c])).toEqual({ ...c })
    expect(chooseEmail([a, b])).toEqual(b)
    expect(chooseEmail([a])).toEqual({ ...a, email: 'a@example.com' })
    expect(chooseEmail([])).toBeUndefined()
  })
})
