/**
 * Names of passkeys by authenticator model: a new passkey is named after the model its AAGUID
 * identifies (upstream names passkeys the same way, from the community list of passkey provider
 * AAGUIDs), else `Passkey`. The table holds a few well-known providers only; an AAGUID is a
 * model's claim, not proof (attestation is not checked), so the name is a hint the user can
 * change.
 *
 * @module
 */

/** The name of a passkey whose model is unknown, or that gave no AAGUID (upstream's fallback). */
export const DEFAULT_PASSKEY_NAME = 'Passkey'

/** Well-known AAGUIDs (lowercase, hyphenated) and their models. */
const KNOWN_AAGUIDS: ReadonlyMap<string, string> = new Map(
  Object.entries({
    'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4': 'Google Password Manager',
    'adce0002-35bc-c60a-648b-0b25f1f05503': 'Chrome on Mac',
    '771b48fd-d3d4-4f74-9232-fc157ab0507a': 'Edge on Mac',
    'dd4ec289-e01d-41c9-bb89-70fa845d4bf2': 'iCloud Keychain (Managed)',
    '08987058-cadc-4b81-b6e1-30de50dcbe96': 'Windows Hello',
    '9ddd1817-af5a-4672-a2b9-3e3dd95000a9': 'Windows Hello',
    '6028b017-b1d4-4c02-b4b3-afcdafc96bb2': 'Windows Hello',
    '53414d53-554e-4700-0000-000000000000': 'Samsung Pass',
    'bada5566-a7aa-401f-bd96-45619a55120d': '1Password',
    'd548826e-79b4-db40-a3d8-11116f7e8349': 'Bitwarden',
    '531126d6-e717-415c-9320-3d9aa6981239': 'Dashlane',
    'b78a0a55-6ef8-d246-a042-ba0f6d55050c': 'LastPass',
    '50726f74-6f6e-5061-7373-50726f746f6e': 'Proton Pass',
    'fdb141b2-5d84-443e-8a35-4698c205a502': 'KeePassXC',
    'eaecdef2-1c31-5634-8639-f1cbd9c00a08': 'KeePassDX',
    'cb69481e-8ff7-4039-93ec-0a2729a154a8': 'YubiKey 5 Series',
    '19083c3d-8383-4b18-bc03-8f1c9ab2fd1b': 'YubiKey 5 Series',
  }),
)

/**
 * The name of a new passkey.
 *
 * @param aaguid The authenticator's AAGUID as a UUID string (any case), `null` or all zeros for
 *   none.
 * @returns The model's name, or {@link DEFAULT_PASSKEY_NAME}.
 */
export function passkeyName(aaguid: string | null | undefined): string {
  if (!aaguid) return DEFAULT_PASSKEY_NAME
  return KNOWN_AAGUIDS.get(aaguid.toLowerCase()) ?? DEFAULT_PASSKEY_NAME
}
