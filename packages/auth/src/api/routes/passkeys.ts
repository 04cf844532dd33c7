import type { RouteContext } from '../../context.js'
import { NotFoundError } from '../../errors.js'
import { adminAuditActor } from '../../models/audit-log.js'
import type { WebauthnCredential } from '../../models/webauthn-credential.js'
import { refuseAnonymous } from '../../services/mfa.js'
import {
  deletePasskey,
  deletePasskeyAsAdmin,
  listPasskeys,
  listPasskeysAsAdmin,
  passkeyAuthenticationOptions,
  passkeyAuthenticationVerify,
  passkeyRegistrationOptions,
  passkeyRegistrationVerify,
  renamePasskey,
  type CeremonyOptions,
} from '../../services/passkeys.js'
import { UUID_PATTERN } from '../../services/shared/validation.js'
import {
  adminClaimsOf,
  authOf,
  rateLimit,
  requireAdmin,
  requireAuthentication,
  verifyCaptcha,
} from '../http/hooks.js'
import { clientIp, requestContext } from '../http/request-context.js'
import { SESSION_RESPONSE } from '../http/response-schemas.js'
import { Body, ObjectField, OptionalBody, Param, Params, StringField } from '../http/schema.js'
import { serializeSession } from '../http/serializers.js'
import type { RouteGroup, RouteScope } from './group.js'

const VerifyBody = Body({ challenge_id: StringField(), credential: ObjectField() })
const RenameBody = Body({ friendly_name: StringField() })
/** Any text: a malformed id is answered 404 "Passkey not found", as upstream. */
const PASSKEY_ID = Param()
const USER_ID = Param({ pattern: UUID_PATTERN, errorMessage: 'user_id must be an UUID' })
const PasskeyParams = Params({ passkey_id: PASSKEY_ID })
const UserParams = Params({ user_id: USER_ID })
const AdminPasskeyParams = Params({ user_id: USER_ID, passkey_id: PASSKEY_ID })

/** A passkey as upstream lists it: `friendly_name` and `last_used_at` only when set. */
export function serializePasskey(p: WebauthnCredential): Record<string, unknown> {
  return {
    id: p.id,
    ...(p.friendlyName !== '' ? { friendly_name: p.friendlyName } : {}),
    created_at: p.createdAt,
    ...(p.lastUsedAt !== null ? { last_used_at: p.lastUsedAt } : {}),
  }
}

/** The answer of an options request: `{challenge_id, options, expires_at}`. */
function serializeCeremony(begun: CeremonyOptions<unknown>): Record<string, unknown> {
  return {
    challenge_id: begun.challengeId,
    options: begun.options,
    expires_at: begun.expiresAt,
  }
}

/** Upstream `requirePasskeyEnabled`: 404 `passkey_disabled` while `PASSKEY_ENABLED` is off. */
function requirePasskeyEnabled(app: RouteScope, ctx: RouteContext): void {
  app.addHook('onRequest', (_request, _reply, done) => {
    done(
      ctx.settings.passkey.enabled
        ? undefined
        : new NotFoundError('passkey_disabled', 'Passkeys are disabled'),
    )
  })
}

/**
 * Username-less sign-in with a passkey: `POST /passkeys/authentication/options` (captcha, and
 * `RATE_LIMIT_PASSKEY`) and `POST /passkeys/authentication/verify`, which answers a session as
 * `/token` does.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/passkey_authentication.go
 */
export const passkeySignInRoutes: RouteGroup = (app, ctx) => {
  requirePasskeyEnabled(app, ctx)

  app.post(
    '/passkeys/authentication/options',
    {
      schema: { body: OptionalBody({}) },
      preHandler: [rateLimit(ctx, 'passkey'), verifyCaptcha(ctx)],
    },
    async (request) => {
      const begun = await passkeyAuthenticationOptions(request.ctx)
      return serializeCeremony(begun)
    },
  )

  app.post(
    '/passkeys/authentication/verify',
    { schema: { body: VerifyBody, response: { 200: SESSION_RESPONSE } } },
    async (request) =>
      serializeSession(
        await passkeyAuthenticationVerify(
          request.ctx,
          { challengeId: request.body.challenge_id, credential: request.body.credential },
          requestContext(request, ctx.settings),
        ),
      ),
  )
}

/**
 * A signed-in user's passkeys: register one (`POST /passkeys/registration/options` and
 * `/verify`, not for anonymous users), `GET /passkeys`, `PATCH /passkeys/<id>` (rename) and
 * `DELETE /passkeys/<id>`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/passkey_registration.go
 * @see https://github.com/supabase/auth/blob/master/internal/api/passkey_manage.go
 */
export const passkeyRoutes: RouteGroup = (app, ctx) => {
  const { settings } = ctx
  requirePasskeyEnabled(app, ctx)
  app.addHook('preValidation', requireAuthentication)

  app.post(
    '/passkeys/registration/options',
    { schema: { body: OptionalBody({}) } },
    async (request) => {
      refuseAnonymous(authOf(request))
      const begun = await passkeyRegistrationOptions(request.ctx, authOf(request))
      return serializeCeremony(begun)
    },
  )

  app.post('/passkeys/registration/verify', { schema: { body: VerifyBody } }, async (request) => {
    refuseAnonymous(authOf(request))
    const created = await passkeyRegistrationVerify(
      request.ctx,
      authOf(request),
      { challengeId: request.body.challenge_id, credential: request.body.credential },
      clientIp(request, settings),
    )
    return {
      id: created.id,
      ...(created.friendlyName !== '' ? { friendly_name: created.friendlyName } : {}),
      created_at: created.createdAt,
    }
  })

  app.get('/passkeys', async (request) =>
    (await listPasskeys(request.ctx, authOf(request).user.id)).map(serializePasskey),
  )

  app.patch(
    '/passkeys/:passkey_id',
    { schema: { params: PasskeyParams, body: RenameBody } },
    async (request) =>
      serializePasskey(
        await renamePasskey(
          request.ctx,
          authOf(request).user,
          request.params.passkey_id,
          request.body.friendly_name,
          clientIp(request, settings),
        ),
      ),
  )

  app.delete(
    '/passkeys/:passkey_id',
    { schema: { params: PasskeyParams } },
    async (request, reply) => {
      await deletePasskey(
        request.ctx,
        authOf(request),
        request.params.passkey_id,
        clientIp(request, settings),
      )
      return reply.code(204).send()
    },
  )
}

/**
 * The admin's view of a user's passkeys: `GET /admin/users/<id>/passkeys` and `DELETE
 * /admin/users/<id>/passkeys/<passkey_id>`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/passkey_admin.go
 */
export const adminPasskeyRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireAdmin(ctx))

  app.get('/admin/users/:user_id/passkeys', { schema: { params: UserParams } }, async (request) =>
    (await listPasskeysAsAdmin(request.ctx, request.params.user_id)).map(serializePasskey),
  )

  app.delete(
    '/admin/users/:user_id/passkeys/:passkey_id',
    { schema: { params: AdminPasskeyParams } },
    async (request, reply) => {
      await deletePasskeyAsAdmin(
        request.ctx,
        request.params.user_id,
        request.params.passkey_id,
        adminAuditActor(adminClaimsOf(request)),
        clientIp(request, ctx.settings),
      )
      return reply.code(204).send()
    },
  )
}
