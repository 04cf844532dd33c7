/**
 * SAML 2.0 as this server speaks it, the service provider: its keys and certificates
 * (`SAML_PRIVATE_KEY`, `SAML_PRIVATE_KEY_NEXT`), its URLs, reading an identity provider's
 * metadata, and `@node-saml/node-saml` set up for one identity provider (which verifies the XML
 * signatures with xml-crypto against the provider's registered certificates only).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/saml.go
 * @module
 */
import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import type { CacheProvider, SAML } from '@node-saml/node-saml'
import type { Element } from '@xmldom/xmldom'
import type { Settings } from '../../conf/settings.js'
import { BadRequestError } from '../../errors.js'
import { samlLibraries } from './saml-library.js'

/** SAML's namespaces. */
export const SAML_NS = {
  metadata: 'urn:oasis:names:tc:SAML:2.0:metadata',
  assertion: 'urn:oasis:names:tc:SAML:2.0:assertion',
  protocol: 'urn:oasis:names:tc:SAML:2.0:protocol',
  dsig: 'http://www.w3.org/2000/09/xmldsig#',
} as const

/** The NameID formats `name_id_format` may name. */
export const NAME_ID_FORMATS = [
  'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
] as const

const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect'

/** Clock skew accepted on an assertion's times (upstream's library: 180 s). */
export const SAML_CLOCK_SKEW_MS = 180_000

/** This server's service provider URLs: under `SAML_EXTERNAL_URL`, else `API_EXTERNAL_URL`. */
export interface SpUrls {
  /** Entity ID and metadata URL: `<base>/sso/saml/metadata`. */
  readonly entityId: string
  /** Assertion consumer service: `<base>/sso/saml/acs`. */
  readonly acs: string
}

/** {@link SpUrls} from the settings. */
export function spUrls(settings: Settings): SpUrls {
  const raw = settings.saml.externalUrl === '' ? settings.apiExternalUrl : settings.saml.externalUrl
  const base = raw.endsWith('/') ? raw : `${raw}/`
  return {
    entityId: new URL('sso/saml/metadata', base).href,
    acs: new URL('sso/saml/acs', base).href,
  }
}

/** One service provider key: the RSA key as PKCS#8 PEM and its self-signed certificate. */
export interface SpKey {
  readonly privateKeyPem: string
  readonly certificatePem: string
  /** The certificate's Base64 DER (metadata `X509Certificate`). */
  readonly certificateBase64: string
}

/** The service provider's keys: `SAML_PRIVATE_KEY` and, while rotating, `SAML_PRIVATE_KEY_NEXT`. */
export interface SpKeys {
  readonly primary: SpKey
  readonly next: SpKey | undefined
}

/**
 * A self-signed X.509 certificate (SHA-256 with RSA) of an RSA key, derived from the key alone
 * (fixed validity, serial from the public key's hash), so every instance with the same key
 * publishes the same metadata.
 *
 * @param validity `[notBefore, notAfter]`; by default 2020 to 2120.
 */
export async function selfSignedCertificate(
  key: KeyObject,
  commonName: string,
  validity: readonly [Date, Date] = [
    new Date('2020-01-01T00:00:00Z'),
    new Date('2120-01-01T00:00:00Z'),
  ],
): Promise<{ pem: string; base64: string }> {
  const { forge } = await samlLibraries()
  const spkiPem = createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString()
  const spkiDer = createPublicKey(key).export({ type: 'spki', format: 'der' })
  const cert = forge.pki.createCertificate()
  cert.publicKey = forge.pki.publicKeyFromPem(spkiPem)
  cert.serialNumber = `01${createHash('sha256').update(spkiDer).digest('hex').slice(0, 30)}`
  cert.validity.notBefore = validity[0]
  cert.validity.notAfter = validity[1]
  const name = [{ name: 'commonName', value: commonName }]
  cert.setSubject(name)
  cert.setIssuer(name)
  const pkcs1 = key.export({ type: 'pkcs1', format: 'pem' }).toString()
  cert.sign(forge.pki.privateKeyFromPem(pkcs1), forge.md.sha256.create())
  const pem = forge.pki.certificateToPem(cert)
  const base64 = forge.util.encode64(forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes())
  return { pem, base64 }
}

/** A key of a setting (standard Base64 PKCS#1 DER) with its {@link selfSignedCertificate}. */
async function spKey(base64Pkcs1: string, commonName: string): Promise<SpKey> {
  const key = createPrivateKey({
    key: Buffer.from(base64Pkcs1, 'base64'),
    format: 'der',
    type: 'pkcs1',
  })
  const cert = await selfSignedCertificate(key, commonName)
  return {
    privateKeyPem: key.export({ type: 'pkcs8', format: 'pem' }).toString(),
    certificatePem: cert.pem,
    certificateBase64: cert.base64,
  }
}

/**
 * Loads the service provider's keys from the settings (call once; the app keeps them).
 *
 * @throws When `SAML_PRIVATE_KEY` is empty (the settings refuse that while `SAML_ENABLED`).
 */
export async function loadSpKeys(settings: Settings): Promise<SpKeys> {
  const { privateKey, privateKeyNext } = settings.saml
  if (privateKey === '') throw new Error('SAML_PRIVATE_KEY is not set')
  const host = new URL(spUrls(settings).entityId).host
  return {
    primary: await spKey(privateKey, host),
    next: privateKeyNext === '' ? undefined : await spKey(privateKeyNext, host),
  }
}

/** What this server needs of an identity provider's metadata. */
export interface IdpMetadata {
  readonly entityId: string
  /** The HTTP-Redirect `SingleSignOnService` location. */
  readonly ssoUrl: string
  /** Signing certificates (Base64 DER, whitespace removed). */
  readonly signingCerts: readonly string[]
  /** `validUntil`, when the metadata has one. */
  readonly validUntil: Date | undefined
  /** `cacheDuration` in milliseconds, when the metadata has a readable one. */
  readonly cacheDurationMs: number | undefined
}

const DURATION_UNITS_MS = {
  Y: 365 * 86_400_000,
  M: 30 * 86_400_000,
  D: 86_400_000,
  H: 3_600_000,
  Min: 60_000,
  S: 1000,
} as const

/**
 * An `xs:duration` (`P1D`, `PT6H`, `P1Y2M3DT4H5M6.5S`) in milliseconds, a year counted 365 days
 * and a month 30; `undefined` when it is not one, negative or zero.
 */
export function parseXsDuration(text: string): number | undefined {
  const m =
    /^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(
      text.trim(),
    )
  if (m === null || text.trim().endsWith('T')) return undefined
  const [, y, mo, d, h, mi, sec] = m
  const ms =
    Number(y ?? 0) * DURATION_UNITS_MS.Y +
    Number(mo ?? 0) * DURATION_UNITS_MS.M +
    Number(d ?? 0) * DURATION_UNITS_MS.D +
    Number(h ?? 0) * DURATION_UNITS_MS.H +
    Number(mi ?? 0) * DURATION_UNITS_MS.Min +
    Number(sec ?? 0) * DURATION_UNITS_MS.S
  return Number.isFinite(ms) && ms > 0 ? ms : undefined
}

function invalid(message: string): BadRequestError {
  return new BadRequestError('validation_failed', message)
}

function children(parent: Element, ns: string, name: string): Element[] {
  const found: Element[] = []
  for (let node = parent.firstChild; node !== null; node = node.nextSibling) {
    if (node.nodeType === 1) {
      const el = node as Element
      if (el.namespaceURI === ns && el.localName === name) found.push(el)
    }
  }
  return found
}

/** Parses XML, refusing DTDs (no entity expansion) and malformed documents. */
export async function parseXml(xml: string, what: string): Promise<Element> {
  if (/<!DOCTYPE/i.test(xml)) throw invalid(`${what} must not contain a DOCTYPE`)
  const { DOMParser } = (await samlLibraries()).xmldom
  let root: Element | null
  try {
    root = new DOMParser({
      onError: (level) => {
        if (level !== 'warning') throw new Error('malformed')
      },
    }).parseFromString(xml, 'text/xml').documentElement
  } catch {
    throw invalid(`${what} is not valid XML`)
  }
  if (root === null) throw invalid(`${what} is not valid XML`)
  return root
}

/**
 * Reads an identity provider's metadata (an `EntityDescriptor`, or an `EntitiesDescriptor` with
 * exactly one) as upstream checks it: an `entityID`, exactly one `IDPSSODescriptor`; and, what
 * this server needs to use it, an HTTP-Redirect `SingleSignOnService` and a signing certificate.
 *
 * @throws {@link BadRequestError} `validation_failed` naming what is missing.
 */
export async function parseIdpMetadata(xml: string): Promise<IdpMetadata> {
  if (xml.includes('\uFFFD')) {
    throw invalid(
      'SAML Metadata XML contains invalid UTF-8 characters, which are not supported at this time',
    )
  }
  let root = await parseXml(xml, 'SAML Metadata XML')
  if (root.namespaceURI === SAML_NS.metadata && root.localName === 'EntitiesDescriptor') {
    const entities = children(root, SAML_NS.metadata, 'EntityDescriptor')
    if (entities.length !== 1 || entities[0] === undefined) {
      throw invalid('SAML Metadata must contain exactly one EntityDescriptor')
    }
    root = entities[0]
  }
  if (root.namespaceURI !== SAML_NS.metadata || root.localName !== 'EntityDescriptor') {
    throw invalid('SAML Metadata is not an EntityDescriptor')
  }
  const entityId = root.getAttribute('entityID') ?? ''
  if (entityId === '') throw invalid('SAML Metadata does not contain an EntityID')
  const idps = children(root, SAML_NS.metadata, 'IDPSSODescriptor')
  if (idps.length < 1 || idps[0] === undefined) {
    throw invalid('SAML Metadata does not contain any IDPSSODescriptor')
  }
  if (idps.length > 1) throw invalid('SAML Metadata contains multiple IDPSSODescriptors')
  const idp = idps[0]
  const sso = children(idp, SAML_NS.metadata, 'SingleSignOnService').find(
    (s) => s.getAttribute('Binding') === REDIRECT_BINDING,
  )
  const ssoUrl = sso?.getAttribute('Location') ?? ''
  if (!/^https?:\/\//i.test(ssoUrl)) {
    throw invalid('SAML Metadata does not contain a HTTP-Redirect SingleSignOnService')
  }
  const signingCerts = children(idp, SAML_NS.metadata, 'KeyDescriptor')
    .filter((k) => (k.getAttribute('use') ?? '') !== 'encryption')
    .flatMap((k) => Array.from(k.getElementsByTagNameNS(SAML_NS.dsig, 'X509Certificate')))
    .map((c: Element) => (c.textContent ?? '').replace(/\s+/g, ''))
    .filter((c) => c !== '')
  if (signingCerts.length === 0) {
    throw invalid('SAML Metadata does not contain a signing certificate (KeyDescriptor)')
  }
  const validUntilText = root.getAttribute('validUntil') ?? ''
  const validUntil = validUntilText === '' ? undefined : new Date(validUntilText)
  return {
    entityId,
    ssoUrl,
    signingCerts,
    validUntil:
      validUntil === undefined || Number.isNaN(validUntil.getTime()) ? undefined : validUntil,
    cacheDurationMs: parseXsDuration(root.getAttribute('cacheDuration') ?? ''),
  }
}

/** How long metadata that says neither `validUntil` nor `cacheDuration` is used: 24 hours. */
export const SAML_METADATA_REFRESH_MS = 86_400_000

/**
 * Whether the metadata of a provider registered by `metadata_url` is to be fetched again
 * (upstream `IsSAMLMetadataStale`): past its `validUntil`, past its `cacheDuration` since it
 * was stored, or, saying neither, stored more than {@link SAML_METADATA_REFRESH_MS} ago.
 *
 * @param storedAt Epoch milliseconds the metadata was stored (`saml_providers.updated_at`).
 * @param now Epoch milliseconds.
 */
export function isSamlMetadataStale(metadata: IdpMetadata, storedAt: number, now: number): boolean {
  const { validUntil, cacheDurationMs } = metadata
  if (validUntil !== undefined && now > validUntil.getTime()) return true
  if (cacheDurationMs !== undefined && now > storedAt + cacheDurationMs) return true
  return (
    validUntil === undefined &&
    cacheDurationMs === undefined &&
    now > storedAt + SAML_METADATA_REFRESH_MS
  )
}

/** How {@link serviceProvider} is set up for one exchange. */
export interface ServiceProviderOptions {
  readonly idp: IdpMetadata
  readonly key: SpKey
  /** Decrypt encrypted assertions with `key` (`SAML_ALLOW_ENCRYPTED_ASSERTIONS`). */
  readonly decrypt: boolean
  /** The NameID format to ask for; persistent when `null`. */
  readonly nameIdFormat: string | null
  /** Ids of the requests made (`generateUniqueId`). */
  readonly newId: () => string
  /**
   * The one request ID an answer must be in response to (ACS, a sign-in started at `/sso`); for
   * an unsolicited (IdP-initiated) response, `undefined`: then no `InResponseTo` is accepted.
   */
  readonly inResponseTo?: string
  /** Epoch milliseconds now (the relay state's own age is checked before). */
  readonly now: number
}

/**
 * A cache of request IDs that holds exactly the one the relay state names. The library's own
 * age check of the entry reads the real clock, so it is turned off (`requestIdExpirationPeriodMs`
 * in {@link serviceProvider}): the relay state's age was checked with the injected clock.
 */
function oneRequestCache(requestId: string | undefined, now: number): CacheProvider {
  const issued = new Date(now).toISOString()
  return {
    saveAsync: () => Promise.resolve(null),
    getAsync: (key) =>
      Promise.resolve(requestId !== undefined && key === requestId ? issued : null),
    removeAsync: (key) => Promise.resolve(key),
  }
}

/**
 * `@node-saml/node-saml` configured for one identity provider: it checks the signature with the
 * registered certificates, the wrapping, the issuer, the audience and `InResponseTo`, but not the
 * times (see `acceptedClockSkewMs`).
 */
export async function serviceProvider(
  settings: Settings,
  options: ServiceProviderOptions,
): Promise<SAML> {
  const { SAML, ValidateInResponseTo } = (await samlLibraries()).saml
  const urls = spUrls(settings)
  return new SAML({
    issuer: urls.entityId,
    callbackUrl: urls.acs,
    audience: urls.entityId,
    entryPoint: options.idp.ssoUrl,
    idpIssuer: options.idp.entityId,
    idpCert: [...options.idp.signingCerts],
    privateKey: options.key.privateKeyPem,
    signatureAlgorithm: 'sha256',
    ...(options.decrypt ? { decryptionPvk: options.key.privateKeyPem } : {}),
    identifierFormat: options.nameIdFormat ?? NAME_ID_FORMATS[0],
    wantAssertionsSigned: false,
    wantAuthnResponseSigned: false,
    // The library reads the real clock: its time checks are off (-1), the caller checks the
    // assertion's times with the injected clock (`checkAssertionTimes` in `services/sso.ts`).
    acceptedClockSkewMs: -1,
    requestIdExpirationPeriodMs: Number.MAX_SAFE_INTEGER,
    validateInResponseTo:
      options.inResponseTo === undefined
        ? ValidateInResponseTo.ifPresent
        : ValidateInResponseTo.always,
    cacheProvider: oneRequestCache(options.inResponseTo, options.now),
    disableRequestedAuthnContext: true,
    generateUniqueId: options.newId,
  })
}

/**
 * This server's metadata: entity ID, ACS (HTTP-POST), the signing certificate (and the next
 * one while rotating), the encryption certificate(s) when encrypted assertions are allowed.
 */
export async function spMetadataXml(
  settings: Settings,
  keys: SpKeys,
  newId: () => string,
): Promise<string> {
  const { SAML } = (await samlLibraries()).saml
  const urls = spUrls(settings)
  const sp = new SAML({
    issuer: urls.entityId,
    callbackUrl: urls.acs,
    idpCert: 'unused',
    privateKey: keys.primary.privateKeyPem,
    ...(settings.saml.allowEncryptedAssertions
      ? { decryptionPvk: keys.primary.privateKeyPem }
      : {}),
    identifierFormat: NAME_ID_FORMATS[0],
    wantAssertionsSigned: true,
    generateUniqueId: newId,
  })
  const signing = [keys.primary.certificatePem, ...(keys.next ? [keys.next.certificatePem] : [])]
  return sp.generateServiceProviderMetadata(
    settings.saml.allowEncryptedAssertions ? keys.primary.certificatePem : null,
    signing,
  )
}
