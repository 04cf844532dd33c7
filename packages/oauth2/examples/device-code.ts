/* eslint-disable no-console -- examples print what they get */
// Device authorization grant (RFC 8628): sign-in on a TV or in a CLI, approved on a phone.
import { Client, OAuth2Error } from '@gatehouse/oauth2'

// A public client: authScheme 'request_body' without a secret sends only client_id.
const client = await Client.discover('https://auth.example.com', 'tv-app', undefined, {
  authScheme: 'request_body',
})

const device = await client.deviceCode.start({ scope: 'openid offline_access' })
console.log(`Visit ${device.verification_uri} and enter ${device.user_code}`)
if (device.verification_uri_complete !== undefined) {
  console.log(`or scan a QR code of ${device.verification_uri_complete}`)
}

// poll() waits `interval` seconds between requests (5 when the server gives none, and never less
// than 5), adds 5 s on slow_down, keeps going on authorization_pending and stops at expires_in
// (at most 1800 s). Cancel it with a signal (here: Ctrl-C).
const controller = new AbortController()
process.once('SIGINT', () => {
  controller.abort()
})
try {
  const token = await device.poll({ signal: controller.signal })
  console.log('signed in; expires at', token.expiresAt)
} catch (error) {
  if (error instanceof OAuth2Error && error.code === 'access_denied') console.log('refused')
  else if (error instanceof OAuth2Error && error.code === 'expired_token') console.log('too late')
  else throw error
}
