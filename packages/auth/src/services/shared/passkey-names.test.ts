import { describe, expect, it } from 'vitest'
import { DEFAULT_PASSKEY_NAME, passkeyName } from './passkey-names.js'

describe('passkeyName', () => {
  it('names well-known authenticator models by AAGUID, in any case', () => {
    expect(passkeyName('ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4')).toBe('Google Password Manager')
    expect(passkeyName('BADA5566-A7AA-401F-BD96-45619A55120D')).toBe('1Password')
    expect(passkeyName('d548826e-79b4-db40-a3d8-11116f7e8349')).toBe('Bitwarden')
    expect(passkeyName('08987058-cadc-4b81-b6e1-30de50dcbe96')).toBe('Windows Hello')
    expect(passkeyName('dd4ec289-e01d-41c9-bb89-70fa845d4bf2')).toBe('iCloud Keychain (Managed)')
  })

  it('falls back to "Passkey" for an unknown, zero or missing AAGUID', () => {
    expect(DEFAULT_PASSKEY_NAME).toBe('Passkey')
    expect(passkeyName('aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee')).toBe('Passkey')
    expect(passkeyName('00000000-0000-0000-0000-000000000000')).toBe('Passkey')
    expect(passkeyName(null)).toBe('Passkey')
    expect(passkeyName('')).toBe('Passkey')
    // Not a lookup into the object's prototype.
    expect(passkeyName('constructor')).toBe('Passkey')
  })
})
