/**
 * A SAML 2.0 identity provider run by a test, on a random loopback port: its metadata, an
 * HTTP-Redirect SingleSignOnService that checks the service provider's signed AuthnRequest and
 * answers an HTML form posting a signed Response to the ACS (as a browser would follow), and a
 * builder of responses with every knob a hostile test turns. Signatures are made with xml-crypto.
 */
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { inflateRawSync } from 'node:zlib'
import { selfSignedCertificate } from '#internal/services/shared/saml.js'
import { SignedXml } from 'xml-crypto'
import { encrypt } from 'xml-encryption'

/** An RSA key with a self-signed certificate. */
export interface TestKey {
  readonly privateKeyPem: string
  readonly certificatePem: string
  /** Base64 DER, as metadata carries it. */
  readonly certificateBase64: string
}

/** A fresh RSA 2048 key and its self-signed certificate. */
export async function testKey(commonName: string): Promise<TestKey> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const cert = await selfSignedCertificate(privateKey, commonName)
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    certificatePem: cert.pem,
    certificateBase64: cert.base64,
  }
}

/** `SAML_PRIVATE_KEY`'s format: standard Base64 of a PKCS#1 DER RSA key. */
export function samlPrivateKeySetting(): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  return privateKey.export({ type: 'pkcs1', format: 'der' }).toString('base64')
}

/** What a Response says; every field can be turned hostile. */
export interface ResponseSpec {
  readonly acs: string
  readonly audience: string
  /** The AuthnRequest answered; `undefined` for an unsolicited (IdP-initiated) response. */
  readonly inResponseTo: string | undefined
  readonly nameId: string
  readonly nameIdFormat?: string
  readonly attributes?: Readonly<Record<string, readonly string[]>>
  /** Response/@Destination (`acs` by default; `null` leaves it out). */
  readonly destination?: string | null
  /** SubjectConfirmationData/@Recipient (`acs` by default). */
  readonly recipient?: string
  readonly issuer?: string
  /** Epoch ms of the IssueInstants (the real clock's now by default). */
  readonly issueInstant?: number
  /** Epoch ms of NotBefore / NotOnOrAfter (now − 1 min / now + 5 min by default). */
  readonly notBefore?: number
  readonly notOnOrAfter?: number
  /** Epoch ms of AuthnStatement/@SessionNotOnOrAfter (absent by default). */
  readonly sessionNotOnOrAfter?: number
  /** Sign the assertion with this key (the IdP's by default; `null`: unsigned). */
  readonly signWith?: TestKey | null
  readonly assertionId?: string
}

const xmlText = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

let counter = 0
/** A unique SAML id. */
export function samlId(): string {
  counter += 1
  return `_t${createHash('sha256')
    .update(`${String(Date.now())}-${String(counter)}`)
    .digest('hex')
    .slice(0, 38)}`
}

/** Signs the element with `ID="id"` (enveloped, exclusive C14N, RSA-SHA256), after its Issuer. */
export function signElement(xml: string, id: string, key: TestKey): string {
  const sig = new SignedXml({
    privateKey: key.privateKeyPem,
    publicCert: key.certificatePem,
    signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  })
  sig.addReference({
    xpath: `//*[@ID='${id}']`,
    transforms: [
      'http://www.w3.org/2000/09/xmldsig#enveloped-signature',
      'http://www.w3.org/2001/10/xml-exc-c14n#',
    ],
    digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
  })
  sig.computeSignature(xml, {
    location: { reference: `//*[@ID='${id}']/*[local-name(.)='Issuer']`, action: 'after' },
  })
  return sig.getSignedXml()
}

/** A running test identity provider. */
export interface TestIdp {
  readonly entityId: string
  readonly url: string
  readonly key: TestKey
  /** The IdP's metadata, for `metadata_xml`. */
  metadataXml(): string
  /** A Response (not Base64) as `spec` says. */
  response(spec: ResponseSpec): string
  /** Who the next sign-in is: NameID and attributes. */
  user: { nameId: string; attributes: Record<string, string[]> }
  /** The service provider's signing certificate (Base64 DER) the AuthnRequest must verify with. */
  spCertificate: string | undefined
  /** The last AuthnRequest received (decoded XML). */
  lastRequest: string | undefined
  close(): Promise<void>
}

/** Starts an identity provider whose entity ID is `entityId`. */
export async function startTestIdp(
  entityId = 'https://idp.example.test/metadata',
): Promise<TestIdp> {
  const key = await testKey('test-idp')
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://idp')
    if (url.pathname !== '/sso') {
      res.writeHead(404).end()
      return
    }
    const fail = (message: string) => {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(message)
    }
    const query = (req.url ?? '').split('?')[1] ?? ''
    const raw = new Map(query.split('&').map((p) => [p.split('=')[0] ?? '', p.split('=')[1] ?? '']))
    const signed = ['SAMLRequest', 'RelayState', 'SigAlg']
      .filter((k) => raw.has(k))
      .map((k) => `${k}=${raw.get(k) ?? ''}`)
      .join('&')
    const signature = raw.get('Signature') ?? ''
    if (idp.spCertificate !== undefined) {
      const pem = `-----BEGIN CERTIFICATE-----\n${idp.spCertificate}\n-----END CERTIFICATE-----`
      let ok: boolean
      try {
        ok = redirectSignatureVerifies(pem, signed, signature)
      } catch (error) {
        fail(`AuthnRequest signature unreadable: ${String(error)}`)
        return
      }
      if (!ok) {
        fail('AuthnRequest signature does not verify')
        return
      }
    }
    const request = inflateRawSync(
      Buffer.from(url.searchParams.get('SAMLRequest') ?? '', 'base64'),
    ).toString('utf8')
    idp.lastRequest = request
    const id = /\sID="([^"]+)"/.exec(request)?.[1] ?? ''
    const acs = /AssertionConsumerServiceURL="([^"]+)"/.exec(request)?.[1] ?? ''
    const audience = /<saml:Issuer[^>]*>([^<]+)</.exec(request)?.[1] ?? ''
    const xml = idp.response({
      acs,
      audience,
      inResponseTo: id,
      nameId: idp.user.nameId,
      attributes: idp.user.attributes,
    })
    const relayState = url.searchParams.get('RelayState') ?? ''
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(
        `<html><body onload="document.forms[0].submit()"><form method="post" action="${xmlText(acs)}">` +
          `<input type="hidden" name="SAMLResponse" value="${Buffer.from(xml).toString('base64')}"/>` +
          `<input type="hidden" name="RelayState" value="${xmlText(relayState)}"/>` +
          `</form></body></html>`,
      )
  })
  const idp: TestIdp = {
    entityId,
    url: '',
    key,
    user: { nameId: 'user-1', attributes: { email: ['user-1@example.com'] } },
    spCertificate: undefined,
    lastRequest: undefined,
    metadataXml() {
      return `<?xml version="1.0"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${xmlText(entityId)}">
  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing">
      <ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>${key.certificateBase64}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:persistent</md:NameIDFormat>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${idp.url}/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`
    },
    response(spec) {
      const now = spec.issueInstant ?? Date.now()
      const iso = (ms: number) => new Date(ms).toISOString()
      const inResponseTo =
        spec.inResponseTo === undefined ? '' : ` InResponseTo="${spec.inResponseTo}"`
      const sessionNotOnOrAfter =
        spec.sessionNotOnOrAfter === undefined
          ? ''
          : ` SessionNotOnOrAfter="${iso(spec.sessionNotOnOrAfter)}"`
      const assertionId = spec.assertionId ?? samlId()
      const attributes = Object.entries(spec.attributes ?? {})
        .map(
          ([name, values]) =>
            `<saml:Attribute Name="${xmlText(name)}">${values
              .map((v) => `<saml:AttributeValue>${xmlText(v)}</saml:AttributeValue>`)
              .join('')}</saml:Attribute>`,
        )
        .join('')
      const destination = spec.destination === undefined ? spec.acs : spec.destination
      const assertion = `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${assertionId}" Version="2.0" IssueInstant="${iso(now)}"><saml:Issuer>${xmlText(spec.issuer ?? entityId)}</saml:Issuer><saml:Subject><saml:NameID Format="${spec.nameIdFormat ?? 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent'}">${xmlText(spec.nameId)}</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData${inResponseTo} NotOnOrAfter="${iso(spec.notOnOrAfter ?? now + 300_000)}" Recipient="${xmlText(spec.recipient ?? spec.acs)}"/></saml:SubjectConfirmation></saml:Subject><saml:Conditions NotBefore="${iso(spec.notBefore ?? now - 60_000)}" NotOnOrAfter="${iso(spec.notOnOrAfter ?? now + 300_000)}"><saml:AudienceRestriction><saml:Audience>${xmlText(spec.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions><saml:AuthnStatement AuthnInstant="${iso(now)}" SessionIndex="${assertionId}"${sessionNotOnOrAfter}><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:Password</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement><saml:AttributeStatement>${attributes}</saml:AttributeStatement></saml:Assertion>`
      const signWith = spec.signWith === undefined ? key : spec.signWith
      const body = signWith === null ? assertion : signElement(assertion, assertionId, signWith)
      return `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${samlId()}" Version="2.0" IssueInstant="${iso(now)}"${destination === null ? '' : ` Destination="${xmlText(destination)}"`}${inResponseTo}><saml:Issuer>${xmlText(spec.issuer ?? entityId)}</saml:Issuer><samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>${body}</samlp:Response>`
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => {
          resolve()
        })
      })
    },
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  ;(idp as { url: string }).url =
    `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`
  return idp
}

/** Verifies an HTTP-Redirect binding signature (RSA-SHA256) over the raw query parts. */
function redirectSignatureVerifies(certPem: string, signed: string, signature: string): boolean {
  return verify(
    'RSA-SHA256',
    Buffer.from(signed),
    createPublicKey(certPem),
    Buffer.from(decodeURIComponent(signature), 'base64'),
  )
}

/** The hidden fields of the IdP's auto-post page. */
export function formFields(html: string): {
  action: string
  SAMLResponse: string
  RelayState: string
} {
  const action = /action="([^"]+)"/.exec(html)?.[1] ?? ''
  const value = (name: string) =>
    new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1]?.replace(/&amp;/g, '&') ?? ''
  return { action, SAMLResponse: value('SAMLResponse'), RelayState: value('RelayState') }
}

/**
 * The response with its (signed) assertion encrypted for the service provider's certificate
 * (`certBase64`, Base64 DER): AES-256-GCM under an RSA-OAEP key, in an `EncryptedAssertion`.
 */
export async function encryptAssertion(responseXml: string, certBase64: string): Promise<string> {
  const assertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(responseXml)?.[0] ?? ''
  const pem = `-----BEGIN CERTIFICATE-----\n${certBase64}\n-----END CERTIFICATE-----\n`
  const encrypted = await new Promise<string>((resolve, reject) => {
    encrypt(
      assertion,
      {
        rsa_pub: pem,
        pem,
        encryptionAlgorithm: 'http://www.w3.org/2009/xmlenc11#aes256-gcm',
        keyEncryptionAlgorithm: 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p',
      },
      // The typings say the error is always there; it is null on success.
      (error: Error | null, result) => {
        if (error === null) resolve(result)
        else reject(error)
      },
    )
  })
  return responseXml.replace(
    assertion,
    `<saml:EncryptedAssertion>${encrypted}</saml:EncryptedAssertion>`,
  )
}
