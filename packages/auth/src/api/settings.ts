import type { FastifyInstance } from 'fastify'
import { EXTERNAL_PROVIDERS } from '../conf/settings.js'
import type { AppContext } from './context.js'

/**
 * `GET /settings`: which sign-in methods are on (upstream `settings.go`): `external` has one
 * boolean per provider plus `email`, `phone` and `anonymous_users`.
 */
export function settingsRoutes(app: FastifyInstance, ctx: AppContext): void {
  const s = ctx.settings
  const external: Record<string, boolean> = {
    anonymous_users: s.external.anonymousUsersEnabled,
    ...Object.fromEntries(EXTERNAL_PROVIDERS.map((p) => [p, s.external.providers[p]])),
    email: s.external.emailEnabled,
    phone: s.external.phoneEnabled,
  }
  const body = {
    external,
    disable_signup: s.disableSignup,
    mailer_autoconfirm: s.mailer.autoconfirm,
    phone_autoconfirm: s.sms.autoconfirm,
    sms_provider: s.sms.provider,
    saml_enabled: false,
    autoconfirm: s.mailer.autoconfirm,
  }
  app.get('/settings', async (_request, reply) => reply.send(body))
}
