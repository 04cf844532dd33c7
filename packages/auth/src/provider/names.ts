/**
 * The external OAuth providers by name, as the `EXTERNAL_<P>_*` settings, `GET /settings` and
 * `/authorize?provider=` spell them.
 *
 * @module
 */

/**
 * External OAuth providers whose `EXTERNAL_<P>_ENABLED` switch is reported by `GET /settings`.
 * The spec's list plus the ones upstream reports.
 */
export const EXTERNAL_PROVIDERS = [
  'apple',
  'azure',
  'bitbucket',
  'discord',
  'facebook',
  'figma',
  'fly',
  'github',
  'gitlab',
  'google',
  'kakao',
  'keycloak',
  'linkedin',
  'linkedin_oidc',
  'notion',
  'snapchat',
  'spotify',
  'slack',
  'slack_oidc',
  'twitch',
  'twitter',
  'vercel_marketplace',
  'workos',
  'x',
  'zoom',
] as const

/** One of {@link EXTERNAL_PROVIDERS}. */
export type ExternalProvider = (typeof EXTERNAL_PROVIDERS)[number]
