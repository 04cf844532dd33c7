/**
 * Single sign-on with SAML 2.0. Service-provider initiated: `POST /sso` starts it (a signed
 * AuthnRequest over the HTTP-Redirect binding and a single-use relay state), the identity
 * provider posts its response to `/sso/saml/acs`, which checks it and signs the user in with a
 * session (implicit flow) or an auth code (PKCE flow). Identity-provider initiated: an
 * unsolicited response posted to the ACS signs the user in with a session.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/sso.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/samlacs.go
 * @module
 */
import type { Element } from '@xmldom/xmldom'
import type { AppContext, RequestContext } from '../context.js'
import {
  BadRequestError,
  ForbiddenError,
  NotFoundError,
  UnprocessableEntityError,
} from '../errors.js'
import { findFlowStateById, insertFlowState, issueOAuthAuthCode } from '../models/flow-state.js'
import { findIdentityByProviderId, refreshIdentity } from '../models/identity.js'
import type { JsonObject } from '../models/json.js'
import {
  findSsoProviderByDomain,
  findSsoProviderByEntityId,
  findSsoProviderById,
  insertSamlRelayState,
  isSsoProviderEnabled,
  recordSamlAssertionUse,
  refreshSamlMetadata,
  takeSamlRelayState,
  type SamlAttributeMapping,
  type SsoProvider,
} from '../models/sso.js'
import { getUserById, isBanned, type User } from '../models/user.js'
import type { IssuedSession } from '../sessions/token-service.js'
import { parsePkceChallenge } from './shared/pkce.js'
import { isRedirectUrlValid } from './shared/redirect.js'
import {
  SAML_CLOCK_SKEW_MS,
  SAML_NS,
  isSamlMetadataStale,
  parseIdpMetadata,
  parseXml,
  serviceProvider,
  spMetadataXml,
  spUrls,
  type IdpMetadata,
  type SpKey,
  type SpKeys,
} from './shared/saml.js'
import { isUuid } from './shared/validation.js'
import { fetchSamlMetadata } from './sso-admin.js'
import { afterUserCreated, createUser } from './users.js'

/** What `POST /sso` was asked. */
export interface SsoParams {
  readonly providerId: string
  readonly domain: string
  /** Validated `redirect_to` (else `SITE_URL`). */
  readonly redirectTo: string
  readonly codeChallenge: string
  readonly codeChallengeMethod: string
}

/** The SAML attribute that names the user before the NameID (upstream). */
const SUBJECT_ID_ATTRIBUTE = 'urn:oasis:names:tc:SAML:attribute:subject-id'
const EMAIL_ATTRIBUTES = [
  'urn:oid:0.9.2342.19200300.100.1.3',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  'http://schemas.xmlsoap.org/claims/EmailAddress',
  'mail',
  'Mail',
  'email',
]
const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress'
const TRANSIENT_FORMAT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient'
/** The claims upstream's `provider.Claims` names; other mapped keys go to `custom_claims`. */
const STANDARD_CLAIMS = new Set([
  'iss',
  'sub',
  'aud',
  'iat',
  'exp',
  'name',
  'family_name',
  'given_name',
  'middle_name',
  'nickname',
  'preferred_username',
  'profile',
  'picture',
  'website',
  'gender',
  'birthdate',
  'zoneinfo',
  'locale',
  'updated_at',
  'email',
  'email_verified',
  'phone',
  'phone_verified',
])

/** A new request or assertion id: `_` and 40 hex digits (an NCName). */
function newSamlId(ctx: AppContext): string {
  return `_${Buffer.from(ctx.random.bytes(20)).toString('hex')}`
}

/**
 * Finds the provider `/sso` asks for.
 *
 * @throws {@link BadRequestError} `validation_failed`; {@link NotFoundError}
 *   `sso_provider_not_found`, `sso_provider_disabled`.
 */
async function chooseProvider(ctx: AppContext, p: SsoParams): Promise<SsoProvider> {
  const hasId = p.providerId !== ''
  const hasDomain = p.domain !== ''
  if (hasId && hasDomain) {
    throw new BadRequestError('validation_failed', 'Only one of provider_id or domain supported')
  }
  if (!hasId && !hasDomain) {
    throw new BadRequestError('validation_failed', 'A provider_id or domain needs to be provided')
  }
  let provider: SsoProvider | undefined
  if (hasId) {
    if (!isUuid(p.providerId)) {
      throw new BadRequestError('validation_failed', 'provider_id must be a UUID')
    }
    provider = await findSsoProviderById(ctx.db, p.providerId)
    if (provider === undefined) {
      throw new NotFoundError('sso_provider_not_found', 'No such SSO provider')
    }
  } else {
    provider = await findSsoProviderByDomain(ctx.db, p.domain.trim())
    if (provider === undefined) {
      throw new NotFoundError('sso_provider_not_found', 'No SSO provider assigned for this domain')
    }
  }
  if (!isSsoProviderEnabled(provider)) {
    throw new NotFoundError('sso_provider_disabled', 'SSO Provider is currently disabled')
  }
  return provider
}

/**
 * Starts a sign-in (`POST /sso`): picks the provider by `provider_id` or `domain`, stores the
 * PKCE flow state (when a challenge is given) and a relay state naming the AuthnRequest, and
 * returns the identity provider's URL with the signed request.
 *
 * @throws As {@link chooseProvider}, and the PKCE parameters' `validation_failed`.
 */
export async function startSso(ctx: AppContext, keys: SpKeys, p: SsoParams): Promise<string> {
  const provider = await chooseProvider(ctx, p)
  const challenge = parsePkceChallenge(p.codeChallenge, p.codeChallengeMethod)
  const idp = await parseIdpMetadata(provider.metadataXml)
  const requestId = newSamlId(ctx)
  const relayStateId = ctx.random.uuid()
  const sp = await serviceProvider(ctx.settings, {
    idp,
    key: keys.primary,
    decrypt: false,
    nameIdFormat: provider.nameIdFormat,
    newId: () => requestId,
    now: ctx.clock.now(),
  })
  const url = await sp.getAuthorizeUrlAsync(relayStateId, undefined, {})
  await ctx.db.transaction(async (tx) => {
    const now = ctx.clock.now()
    let flowStateId: string | null = null
    if (challenge !== undefined) {
      flowStateId = ctx.random.uuid()
      await insertFlowState(
        tx,
        {
          id: flowStateId,
          userId: null,
          authCode: ctx.random.uuid(),
          codeChallenge: challenge.codeChallenge,
          codeChallengeMethod: challenge.codeChallengeMethod,
          providerType: 'sso/saml',
          authenticationMethod: 'sso/saml',
        },
        now,
      )
    }
    await insertSamlRelayState(
      tx,
      {
        id: relayStateId,
        ssoProviderId: provider.id,
        requestId,
        redirectTo: p.redirectTo,
        flowStateId,
      },
      now,
    )
  })
  return url
}

/** This server's SAML metadata (`GET /sso/saml/metadata`). */
export function samlMetadata(ctx: AppContext, keys: SpKeys): Promise<string> {
  return spMetadataXml(ctx.settings, keys, () => newSamlId(ctx))
}

/** What the ACS was posted. */
export interface AcsForm {
  readonly SAMLResponse: string
  readonly RelayState: string
}

/** How an ACS post ends: a session in the fragment, or an auth code for the PKCE flow. */
export type SsoOutcome =
  | { readonly kind: 'session'; readonly session: IssuedSession; readonly redirectTo: string }
  | { readonly kind: 'code'; readonly authCode: string; readonly redirectTo: string }

/** An assertion refused: `validation_failed` "SAML Assertion is not valid: …". */
function notValid(reason: string, cause?: unknown): BadRequestError {
  return new BadRequestError('validation_failed', `SAML Assertion is not valid: ${reason}`, {
    cause,
  })
}

function descendants(el: Element, ns: string, name: string): Element[] {
  return Array.from(el.getElementsByTagNameNS(ns, name))
}

/** The values of the assertion's attributes named `name` (Name or FriendlyName, any case). */
function attributeValues(assertion: Element, name: string): string[] {
  const wanted = name.toLowerCase()
  return descendants(assertion, SAML_NS.assertion, 'Attribute')
    .filter(
      (a) =>
        (a.getAttribute('Name') ?? '').toLowerCase() === wanted ||
        (a.getAttribute('FriendlyName') ?? '').toLowerCase() === wanted,
    )
    .flatMap((a) => descendants(a, SAML_NS.assertion, 'AttributeValue'))
    .map((v) => (v.textContent ?? '').trim())
}

/** The claims an attribute mapping gives (upstream `Process`). */
export function mapAttributes(
  assertion: Element,
  mapping: SamlAttributeMapping,
): Record<string, unknown> {
  const claims: Record<string, unknown> = {}
  for (const [key, mapper] of Object.entries(mapping.keys ?? {})) {
    const names = [...(mapper.name ? [mapper.name] : []), ...(mapper.names ?? [])]
    let found = false
    for (const name of names) {
      const values = attributeValues(assertion, name).filter((v) => v !== '')
      if (values.length === 0) continue
      found = true
      claims[key] = mapper.array === true ? values : values[0]
      break
    }
    if (!found && mapper.default !== undefined && mapper.default !== null) {
      claims[key] = mapper.default
    }
  }
  return claims
}

/** What the checked assertion says of the user. */
interface AssertedUser {
  readonly userId: string
  readonly email: string
  readonly claims: Record<string, unknown>
}

/** What the checked assertion says of the user and of its own lifetime. */
interface AssertedUser {
  readonly userId: string
  readonly email: string
  readonly claims: Record<string, unknown>
  /** The assertion's `ID`, recorded so that it is used once. */
  readonly assertionId: string
  /** Epoch milliseconds from which the assertion is refused anyway (its record may go). */
  readonly acceptableUntil: number
  /** The first `AuthnStatement/@SessionNotOnOrAfter`: the session's `not_after`. */
  readonly sessionNotAfter: Date | null
}

/**
 * Upstream's library's limit on an assertion's age: its `IssueInstant` plus 90 seconds (no
 * clock skew on top).
 */
const SAML_MAX_ISSUE_DELAY_MS = 90_000

/** An `xs:dateTime` attribute in epoch milliseconds; `undefined` when absent. */
function timeOf(el: Element, name: string): number | undefined {
  const text = el.getAttribute(name) ?? ''
  if (text === '') return undefined
  const ms = Date.parse(text)
  if (Number.isNaN(ms)) throw notValid(`${name} is not a valid time`)
  return ms
}

/**
 * The assertion's times, checked with the injected clock as upstream's library does (the SAML
 * library's own checks, which read the real clock, are off): `IssueInstant` at most 90 s old;
 * the `Conditions` and every `SubjectConfirmationData` (which must carry a `NotOnOrAfter`) not
 * before their `NotBefore` nor at or after their `NotOnOrAfter`, with {@link SAML_CLOCK_SKEW_MS}
 * of skew either way.
 *
 * @returns The epoch milliseconds from which the assertion is refused.
 */
function checkAssertionTimes(assertion: Element, now: number): number {
  const issued = timeOf(assertion, 'IssueInstant')
  if (issued === undefined) throw notValid('IssueInstant is missing')
  const tooOld = issued + SAML_MAX_ISSUE_DELAY_MS
  if (now > tooOld) throw notValid('the assertion is too old (IssueInstant)')
  const limits = [tooOld]
  const windows = [
    ...descendants(assertion, SAML_NS.assertion, 'Conditions').map((el) => ({
      el,
      required: false,
    })),
    ...descendants(assertion, SAML_NS.assertion, 'SubjectConfirmationData').map((el) => ({
      el,
      required: true,
    })),
  ]
  for (const { el, required } of windows) {
    const notBefore = timeOf(el, 'NotBefore')
    const notOnOrAfter = timeOf(el, 'NotOnOrAfter')
    if (notBefore !== undefined && now + SAML_CLOCK_SKEW_MS < notBefore) {
      throw notValid(`${el.localName} is not yet valid (NotBefore)`)
    }
    if (notOnOrAfter === undefined) {
      if (required) throw notValid(`${el.localName} has no NotOnOrAfter`)
      continue
    }
    limits.push(notOnOrAfter + SAML_CLOCK_SKEW_MS)
    if (now - SAML_CLOCK_SKEW_MS >= notOnOrAfter) {
      throw notValid(`${el.localName} has expired (NotOnOrAfter)`)
    }
  }
  return Math.min(...limits)
}

/** The first `SessionNotOnOrAfter` of the assertion's `AuthnStatement`s (upstream `NotAfter`). */
function sessionNotAfter(assertion: Element): Date | null {
  for (const statement of descendants(assertion, SAML_NS.assertion, 'AuthnStatement')) {
    const ms = timeOf(statement, 'SessionNotOnOrAfter')
    if (ms !== undefined) return new Date(ms)
  }
  return null
}

/**
 * Reads the verified assertion: its Issuer must be the provider's entity ID, the Recipient of
 * every subject confirmation this ACS, its times valid now (see {@link checkAssertionTimes}); in
 * an unsolicited response, no subject confirmation may answer a request (`InResponseTo`). The
 * user id is the `subject-id` attribute or a non-transient NameID, the email the mapped `email`,
 * a known email attribute or an email-format NameID.
 */
async function readAssertion(
  assertionXml: string,
  expected: { readonly acs: string; readonly solicited: boolean; readonly now: number },
  provider: SsoProvider,
): Promise<AssertedUser> {
  const { acs } = expected
  const assertion = await parseXml(assertionXml, 'SAML Assertion')
  const issuer = descendants(assertion, SAML_NS.assertion, 'Issuer')[0]?.textContent?.trim() ?? ''
  if (issuer !== provider.entityId) {
    throw notValid(`Issuer must be ${provider.entityId}`)
  }
  const assertionId = assertion.getAttribute('ID') ?? ''
  if (assertionId === '') throw notValid('the assertion has no ID')
  const confirmations = descendants(assertion, SAML_NS.assertion, 'SubjectConfirmationData')
  const recipients = confirmations.map((d) => d.getAttribute('Recipient') ?? '')
  if (recipients.length === 0 || recipients.some((r) => r !== acs)) {
    throw notValid(`Recipient must be ${acs}`)
  }
  if (
    !expected.solicited &&
    confirmations.some((d) => (d.getAttribute('InResponseTo') ?? '') !== '')
  ) {
    throw notValid('an unsolicited response must not be InResponseTo a request')
  }
  const acceptableUntil = checkAssertionTimes(assertion, expected.now)
  const nameId = descendants(assertion, SAML_NS.assertion, 'NameID')[0]
  const nameIdValue = (nameId?.textContent ?? '').trim()
  const format = nameId?.getAttribute('Format') ?? ''
  const subjectId = attributeValues(assertion, SUBJECT_ID_ATTRIBUTE)[0] ?? ''
  const userId =
    subjectId !== ''
      ? subjectId
      : nameIdValue === '' || format === TRANSIENT_FORMAT
        ? ''
        : format === EMAIL_FORMAT
          ? nameIdValue.toLowerCase()
          : nameIdValue
  if (userId === '') {
    throw new BadRequestError(
      'saml_assertion_no_user_id',
      'SAML Assertion did not contain a persistent Subject Identifier attribute or Subject NameID uniquely identifying this user',
    )
  }
  const claims = mapAttributes(assertion, provider.attributeMapping)
  let email = typeof claims.email === 'string' ? claims.email : ''
  if (email === '') {
    email =
      EMAIL_ATTRIBUTES.map((n) => attributeValues(assertion, n).find((v) => v !== '') ?? '').find(
        (v) => v !== '',
      ) ?? (format === EMAIL_FORMAT ? nameIdValue : '')
  }
  if (email === '') {
    throw new BadRequestError(
      'saml_assertion_no_email',
      'SAML Assertion does not contain an email address',
    )
  }
  return {
    userId,
    email,
    claims,
    assertionId,
    acceptableUntil,
    sessionNotAfter: sessionNotAfter(assertion),
  }
}

/** The posted `SAMLResponse`: Base64 of a `samlp:Response`. */
async function readResponse(samlResponse: string): Promise<Element> {
  if (!/^[A-Za-z0-9+/=\s]*$/.test(samlResponse)) {
    throw new BadRequestError('validation_failed', 'SAMLResponse is not a valid Base64 string')
  }
  const xml = Buffer.from(samlResponse, 'base64').toString('utf8')
  const root = await parseXml(xml, 'SAMLResponse')
  if (root.namespaceURI !== SAML_NS.protocol || root.localName !== 'Response') {
    throw new BadRequestError('validation_failed', 'SAMLResponse is not a valid XML SAML assertion')
  }
  return root
}

/** Response/@Destination, when present, must be this ACS (the assertion's Recipient always is). */
function checkDestination(response: Element, acs: string): void {
  const destination = response.getAttribute('Destination') ?? ''
  if (destination !== '' && destination !== acs) {
    throw notValid(`Destination must be ${acs}`)
  }
}

/** The Response's Issuer, else its first Assertion's: which provider an unsolicited one names. */
function responseIssuer(response: Element): string {
  const issuers = descendants(response, SAML_NS.assertion, 'Issuer')
  const own = issuers.find((issuer) => issuer.parentNode === response)
  return ((own ?? issuers[0])?.textContent ?? '').trim()
}

/** Validates the response with one key; the signed assertion's XML. */
async function validated(
  ctx: AppContext,
  provider: SsoProvider,
  idp: IdpMetadata,
  key: SpKey,
  requestId: string | undefined,
  samlResponse: string,
): Promise<string> {
  const sp = await serviceProvider(ctx.settings, {
    idp,
    key,
    decrypt: ctx.settings.saml.allowEncryptedAssertions,
    nameIdFormat: provider.nameIdFormat,
    newId: () => newSamlId(ctx),
    ...(requestId === undefined ? {} : { inResponseTo: requestId }),
    now: ctx.clock.now(),
  })
  const { profile } = await sp.validatePostResponseAsync({ SAMLResponse: samlResponse })
  const xml = profile?.getAssertionXml?.()
  if (xml === undefined) throw new Error('the response has no assertion')
  return xml
}

/**
 * The identity's `identity_data`: upstream's claims (`iss` the entity ID, `sub` the user id, the
 * verified email, the mapped standard claims) and the other mapped keys under `custom_claims`.
 */
function identityData(provider: SsoProvider, asserted: AssertedUser): JsonObject {
  const data: JsonObject = {}
  const custom: JsonObject = {}
  for (const [key, value] of Object.entries(asserted.claims)) {
    if (STANDARD_CLAIMS.has(key)) data[key] = value
    else custom[key] = value
  }
  return {
    ...data,
    iss: provider.entityId,
    sub: asserted.userId,
    email: asserted.email,
    email_verified: true,
    phone_verified: false,
    ...(Object.keys(custom).length > 0 ? { custom_claims: custom } : {}),
  }
}

/** Where the ACS reports what does not fail a sign-in: a pino logger such as `request.log`. */
export interface SsoLog {
  warn(details: Record<string, unknown>, message: string): void
}

/** Who an ACS post answers: a sign-in started at `/sso`, or none (IdP-initiated). */
interface Solicitation {
  readonly provider: SsoProvider
  /** The AuthnRequest's ID; `undefined` for an unsolicited response. */
  readonly requestId: string | undefined
  readonly redirectTo: string
  readonly flowStateId: string | null
}

/** Whether a relay state is a URL an IdP may name (upstream: Go's `url.ParseRequestURI`). */
function isRequestUri(value: string): boolean {
  if (value.startsWith('/')) return true
  return /^[a-z][a-z0-9+.-]*:/i.test(value) && URL.canParse(value)
}

/** The sign-in a relay state names (taken once; expired after its validity period). */
async function solicitedBy(ctx: AppContext, relayStateId: string): Promise<Solicitation> {
  const relayState = await takeSamlRelayState(ctx.db, relayStateId)
  if (relayState === undefined) {
    throw new NotFoundError(
      'saml_relay_state_not_found',
      'SAML RelayState does not exist, try logging in again?',
    )
  }
  if (
    ctx.clock.now() - relayState.createdAt.getTime() >=
    ctx.settings.saml.relayStateValidityPeriodMs
  ) {
    throw new UnprocessableEntityError(
      'saml_relay_state_expired',
      'SAML RelayState has expired. Try logging in again?',
    )
  }
  const provider = await findSsoProviderById(ctx.db, relayState.ssoProviderId)
  if (provider === undefined || !isSsoProviderEnabled(provider)) {
    throw new NotFoundError(
      'sso_provider_disabled',
      'SSO Provider assigned for this domain is currently disabled',
    )
  }
  return {
    provider,
    requestId: relayState.requestId,
    redirectTo: relayState.redirectTo,
    flowStateId: relayState.flowStateId,
  }
}

/** An unsolicited response: the provider its Issuer names; the relay state, if any, a URL. */
async function unsolicited(
  ctx: AppContext,
  response: Element,
  relayState: string,
): Promise<Solicitation> {
  const provider = await findSsoProviderByEntityId(ctx.db, responseIssuer(response))
  if (provider === undefined) {
    throw new NotFoundError(
      'saml_idp_not_found',
      'A SAML connection has not been established with this Identity Provider',
    )
  }
  if (!isSsoProviderEnabled(provider)) {
    throw new NotFoundError(
      'sso_provider_disabled',
      'SSO Provider assigned for this domain is currently disabled',
    )
  }
  return { provider, requestId: undefined, redirectTo: relayState, flowStateId: null }
}

/**
 * The provider's metadata to check a response with. A provider registered by `metadata_url`
 * whose metadata is stale ({@link isSamlMetadataStale}) has it fetched again and stored; when
 * that fails (the fetch, or metadata that does not parse or names another entity), the stored
 * metadata is used and a warning logged, as upstream carries on with it. Unlike upstream, which
 * checks the response with the stored metadata and stores the fetched one only after a
 * successful sign-in, the fetched metadata is stored and used at once (so that a rotated
 * signing certificate works on the first sign-in after it).
 *
 * @param ctx The clock and the database.
 * @param fetchMetadata Fetches a `metadata_url` (the ACS: {@link fetchSamlMetadata}).
 * @param log Where a failed refresh is reported.
 */
export async function currentMetadata(
  ctx: Pick<AppContext, 'clock' | 'db'>,
  provider: SsoProvider,
  fetchMetadata: (url: string) => Promise<string>,
  log: SsoLog,
): Promise<IdpMetadata> {
  const stored = await parseIdpMetadata(provider.metadataXml)
  const now = ctx.clock.now()
  if (provider.metadataUrl === null || provider.metadataUrl === '') {
    if (stored.validUntil !== undefined && stored.validUntil.getTime() - now <= 30 * 86_400_000) {
      log.warn(
        { sso_provider_id: provider.id, valid_until: stored.validUntil.toISOString() },
        'SAML Metadata for identity provider will expire soon! Update its metadata_xml!',
      )
    }
    return stored
  }
  if (!isSamlMetadataStale(stored, provider.samlUpdatedAt.getTime(), now)) return stored
  try {
    const raw = await fetchMetadata(provider.metadataUrl)
    const fresh = await parseIdpMetadata(raw)
    if (fresh.entityId !== provider.entityId) {
      throw new Error(`the metadata now names the entity ${fresh.entityId}`)
    }
    await refreshSamlMetadata(ctx.db, provider.id, raw, ctx.clock.now())
    return fresh
  } catch (error) {
    log.warn(
      {
        sso_provider_id: provider.id,
        valid_until: stored.validUntil?.toISOString() ?? null,
        err: error,
      },
      'SAML Metadata could not be retrieved, continuing with existing metadata',
    )
    return stored
  }
}

/**
 * Finishes a sign-in at the ACS (`POST /sso/saml/acs`). A relay state that is a UUID names a
 * sign-in started at `/sso` (taken once; expired after `SAML_RELAY_STATE_VALIDITY_PERIOD`); an
 * empty one or a URL makes the response unsolicited (IdP-initiated, as upstream allows): its
 * Issuer names the provider, and the relay state, if allowed (`URI_ALLOW_LIST`), is where the
 * user lands (else `SITE_URL`). The response is validated against the provider's registered
 * certificates (its metadata fetched again first when stale; signature, wrapping, issuer,
 * audience, `InResponseTo` the relay state's request or, unsolicited, none, times by the injected
 * clock, Destination, Recipient; with `SAML_PRIVATE_KEY_NEXT` as the second decryption key), its
 * assertion ID is recorded so that it signs in once, then the SSO user is found or created
 * (`is_sso_user`, identity `sso:<provider id>`) and a session started (its `not_after` the
 * assertion's `SessionNotOnOrAfter`) or, for a PKCE sign-in, the auth code handed out.
 *
 * @param log Where a failed metadata refresh is reported (it never fails the sign-in).
 * @throws {@link BadRequestError} `validation_failed`, `saml_assertion_no_user_id`,
 *   `saml_assertion_no_email`; {@link NotFoundError} `saml_relay_state_not_found`,
 *   `saml_idp_not_found`, `sso_provider_disabled`; {@link UnprocessableEntityError}
 *   `saml_relay_state_expired`, `signup_disabled`; {@link ForbiddenError} `user_banned`.
 */
export async function finishSamlAcs(
  ctx: AppContext,
  keys: SpKeys,
  form: AcsForm,
  client: RequestContext,
  log: SsoLog,
): Promise<SsoOutcome> {
  if (form.SAMLResponse === '') {
    throw new BadRequestError('validation_failed', 'SAMLResponse is missing')
  }
  let solicitation: Solicitation
  let response: Element
  if (isUuid(form.RelayState)) {
    solicitation = await solicitedBy(ctx, form.RelayState)
    response = await readResponse(form.SAMLResponse)
  } else if (form.RelayState === '' || isRequestUri(form.RelayState)) {
    response = await readResponse(form.SAMLResponse)
    solicitation = await unsolicited(ctx, response, form.RelayState)
  } else {
    throw new BadRequestError('validation_failed', 'SAML RelayState is not a valid UUID or URL')
  }
  const { provider, requestId } = solicitation
  const { acs } = spUrls(ctx.settings)
  checkDestination(response, acs)
  const idp = await currentMetadata(ctx, provider, (url) => fetchSamlMetadata(ctx, url), log)
  let assertionXml: string
  try {
    assertionXml = await validated(ctx, provider, idp, keys.primary, requestId, form.SAMLResponse)
  } catch (error) {
    if (error instanceof BadRequestError) throw error
    let retried: string | undefined
    if (ctx.settings.saml.allowEncryptedAssertions && keys.next !== undefined) {
      retried = await validated(ctx, provider, idp, keys.next, requestId, form.SAMLResponse).catch(
        () => undefined,
      )
    }
    if (retried === undefined) {
      throw notValid(error instanceof Error ? error.message : 'unreadable response', error)
    }
    assertionXml = retried
  }
  const asserted = await readAssertion(
    assertionXml,
    { acs, solicited: requestId !== undefined, now: ctx.clock.now() },
    provider,
  )
  const redirectTo = isRedirectUrlValid(ctx.settings, solicitation.redirectTo)
    ? solicitation.redirectTo
    : ctx.settings.siteUrl
  const providerName = `sso:${provider.id}`
  const data = identityData(provider, asserted)
  // A user this sign-in creates is told to the after-user-created hook once it is committed.
  let created: User | undefined
  return ctx.db
    .transaction(async (tx) => {
      const now = ctx.clock.now()
      const firstUse = await recordSamlAssertionUse(
        tx,
        {
          ssoProviderId: provider.id,
          assertionId: asserted.assertionId,
          expiresAt: asserted.acceptableUntil,
        },
        now,
      )
      if (!firstUse) throw notValid('the assertion was already used')
      const existing = await findIdentityByProviderId(tx, asserted.userId, providerName)
      let user: User
      if (existing !== undefined) {
        await refreshIdentity(tx, existing.id, data, now)
        user = await getUserById(tx, existing.userId, true)
      } else {
        if (ctx.settings.disableSignup) {
          throw new UnprocessableEntityError(
            'signup_disabled',
            'Signups not allowed for this instance',
          )
        }
        ;({ user } = await createUser(
          ctx,
          tx,
          {
            aud: client.aud,
            email: asserted.email.toLowerCase(),
            emailConfirmed: true,
            ssoUser: true,
            external: { provider: providerName, providerId: asserted.userId, identityData: data },
          },
          now,
        ))
        created = user
      }
      if (isBanned(user, now)) throw new ForbiddenError('user_banned', 'User is banned')
      if (solicitation.flowStateId !== null) {
        const authCode = await issueSsoAuthCode(tx, solicitation.flowStateId, user.id, now)
        return { kind: 'code', authCode, redirectTo } as const
      }
      const pending = await ctx.tokens.startSession(
        tx,
        user,
        'sso/saml',
        client,
        true,
        asserted.sessionNotAfter,
      )
      return { kind: 'session', pending, redirectTo } as const
    })
    .then(async (result) => {
      if (created !== undefined) await afterUserCreated(ctx, created, client)
      return result.kind === 'code'
        ? result
        : {
            kind: 'session' as const,
            session: await ctx.tokens.finish(result.pending),
            redirectTo: result.redirectTo,
          }
    })
}

/** Records the user of a PKCE flow and returns its auth code. */
async function issueSsoAuthCode(
  tx: Parameters<typeof issueOAuthAuthCode>[0],
  flowStateId: string,
  userId: string,
  now: number,
): Promise<string> {
  await issueOAuthAuthCode(
    tx,
    flowStateId,
    { userId, providerAccessToken: '', providerRefreshToken: '' },
    now,
  )
  const code = (await findFlowStateById(tx, flowStateId))?.authCode
  if (code === undefined) {
    throw new NotFoundError('flow_state_not_found', 'invalid flow state, no valid flow state found')
  }
  return code
}
