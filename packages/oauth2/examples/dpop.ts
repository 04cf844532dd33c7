/* eslint-disable no-console -- examples print what they get */
// DPoP (RFC 9449): sender-constrained tokens. A stolen token is useless without the key.
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose'
import { AccessToken, Client, type DPoPKeyPair } from '@gatehouse/oauth2'

declare const vault: { load(): Promise<{ key?: JWK; token?: Record<string, unknown> }> }
declare const save: (record: { key: JWK; token: Record<string, unknown> }) => Promise<void>

// A key pair that outlives the process: a bound token is only usable with the key it was bound
// to, so keep the private JWK with the token (encrypted at rest). `dpop: true` would generate a
// non-extractable ES256 key pair in memory instead.
const stored = await vault.load()
async function restoreKeyPair(jwk: JWK): Promise<DPoPKeyPair> {
  const { d: _private, ...publicJwk } = jwk
  return {
    privateKey: (await importJWK(jwk, 'ES256')) as CryptoKey,
    publicKey: (await importJWK(publicJwk, 'ES256')) as CryptoKey,
  }
}
const keyPair: DPoPKeyPair =
  stored.key === undefined
    ? await generateKeyPair('ES256', { extractable: true })
    : await restoreKeyPair(stored.key)

// Discovery settles the algorithm against dpop_signing_alg_values_supported.
const client = await Client.discover('https://auth.example.com', 'fapi-client', 'secret', {
  redirect_uri: 'https://app.example.com/callback',
  dpop: { keyPair },
})

// Every token request carries a DPoP proof; the server binds the token to the key
// (token_type DPoP, cnf.jkt = the key's thumbprint). Server nonces are handled: a request the
// server refuses with use_dpop_nonce is resent once with its DPoP-Nonce.
const token = await client.clientCredentials.getToken({ scope: 'payments' })
console.log(token.params.token_type, token.dpopBound, await client.dpopJkt())

// Resource requests send Authorization: DPoP <token> and a fresh proof (htm, htu, iat, jti, ath).
const accounts = await token.get('https://api.example.com/accounts')
console.log(accounts.parsed)

// Bind the authorization code too (RFC 9449 §10): dpop_jkt in the authorization request.
console.log(client.authCode.authorizeUrl({ scope: 'openid', dpop_jkt: await client.dpopJkt() }))

// Persist key and token together; restore the token with a client that has the same key.
await save({ key: await exportJWK(keyPair.privateKey), token: token.toHash() })
const restored = AccessToken.fromHash(client, token.toHash())
await restored.get('https://api.example.com/accounts')
