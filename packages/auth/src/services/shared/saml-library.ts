/**
 * The XML and SAML libraries SAML single sign-on needs (`@node-saml/node-saml` with xml-crypto,
 * `@xmldom/xmldom`, `node-forge`), loaded at the first SAML request rather than with the server:
 * importing them takes about 0.2 s, which every start and every test file would pay while most
 * never speak SAML.
 *
 * @module
 */
import type * as NodeSaml from '@node-saml/node-saml'
import type * as XmlDom from '@xmldom/xmldom'
import type Forge from 'node-forge'

/** The libraries, each imported once (Node caches the modules). */
export interface SamlLibraries {
  /** `@node-saml/node-saml`. */
  readonly saml: typeof NodeSaml
  /** `@xmldom/xmldom`. */
  readonly xmldom: typeof XmlDom
  /** `node-forge`'s default export. */
  readonly forge: typeof Forge
}

/** Loads {@link SamlLibraries}. */
export async function samlLibraries(): Promise<SamlLibraries> {
  const [saml, xmldom, forge] = await Promise.all([
    import('@node-saml/node-saml'),
    import('@xmldom/xmldom'),
    import('node-forge'),
  ])
  return { saml, xmldom, forge: forge.default }
}
