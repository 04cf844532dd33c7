import { EXTERNAL_PROVIDERS } from '../../provider/names.js'
import type { RouteGroup } from './group.js'

/**
 * `GET /settings`: which sign-in methods are on: `external` has one boolean per provider plus
 * `email`, `phone`, `anonymous_users`, and `web3_ethereum` and `web3_solana` (the names of
 * upstream's `External.Web3Ethereum` and `Web3Solana` settings; upstream's `/settings` does not
 * list them yet).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/settings.go
 */
export const settingsRoutes: RouteGroup = (app, ctx) => {
  const s = ctx.settings
  const external: Record<string, boolean> = {
    anonymous_users: s.external.anonymousUsersEnabled,
    ...Object.fromEntries(EXTERNAL_PROVIDERS.map((p) => [p, s.external[p].enabled])),
    email: s.external.emailEnabled,
    phone: s.external.phoneEnabled,
    web3_ethereum: s.external.web3Ethereum.enabled,
    web3_solana: s.external.web3Solana.enabled,
  }
  const body = {
    external,
    disable_signup: s.disableSignup,
    mailer_autoconfirm: s.mailer.autoconfirm,
    phone_autoconfirm: s.sms.autoconfirm,
    sms_provider: s.sms.provider,
    saml_enabled: s.saml.enabled,
    passkeys_enabled: s.passkey.enabled,
    autoconfirm: s.mailer.autoconfirm,
  }
  app.get('/settings', () => body)
}
