/* eslint-disable no-console -- examples print what they get */
// SnakyHash serialization with hooks; a custom class for parsed responses.
import { Client, SnakyHash } from '@gatehouse/oauth2'

class SealedHash extends SnakyHash {
  static override dumpValue(value: unknown): unknown {
    return typeof value === 'string' ? Buffer.from(value).toString('base64') : value
  }
  static override loadValue(value: unknown): unknown {
    return typeof value === 'string' ? Buffer.from(value, 'base64').toString() : value
  }
}

const client = new Client('id', 'secret', { site: 'https://auth.example.com' })
const token = await client.clientCredentials.getToken({ snakyHashClass: SealedHash })
const parsed = token.response?.parsed
if (parsed instanceof SealedHash) {
  const stored = SealedHash.dump(parsed) // JSON with every string base64-encoded
  const restored = SealedHash.load(stored)
  console.log(restored.get('accessToken') === parsed.access_token)
}
