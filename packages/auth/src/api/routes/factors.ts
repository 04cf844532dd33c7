import type { FastifyRequest } from 'fastify'
import type { AppContext } from '../../context.js'
import { adminAuditActor } from '../../models/audit-log.js'
import {
  challengeFactor,
  deleteFactorAsAdmin,
  enrollFactor,
  listFactorsAsAdmin,
  loadOwnFactor,
  refuseAnonymous,
  unenrollFactor,
  updateFactorAsAdmin,
  verifyFactor,
} from '../../services/mfa.js'
import {
  deleteRecoveryCodes,
  generateRecoveryCodes,
  RECOVERY_CODE_FACTOR_TYPE,
  recoveryCodesStatus,
  regenerateRecoveryCodes,
  resetRecoveryCodesAsAdmin,
  verifyRecoveryCode,
  type GeneratedRecoveryCodes,
} from '../../services/mfa-recovery-codes.js'
import { UUID_PATTERN } from '../../services/shared/validation.js'
import {
  adminClaimsOf,
  authOf,
  rateLimit,
  requireAdmin,
  requireAuthentication,
} from '../http/hooks.js'
import { clientIp, requestContext } from '../http/request-context.js'
import type { RouteGroup } from './group.js'
import { Body, ObjectField, OptionalBody, Param, Params, StringField } from '../http/schema.js'
import { SESSION_RESPONSE } from '../http/response-schemas.js'
import { serializeFactor, serializeSession } from '../http/serializers.js'

const FACTOR_ID = Param({ pattern: UUID_PATTERN, errorMessage: 'factor_id must be an UUID' })
const USER_ID = Param({ pattern: UUID_PATTERN, errorMessage: 'user_id must be an UUID' })

const FactorParams = Params({ factor_id: FACTOR_ID })
const UserFactorsParams = Params({ user_id: USER_ID })
const UserFactorParams = Params({ user_id: USER_ID, factor_id: FACTOR_ID })

const EnrollBody = Body({
  factor_type: StringField(),
  friendly_name: StringField(),
  issuer: StringField(),
  phone: StringField(),
})
/** `webauthn` (auth-js sends `{rpId, rpOrigins}`) is read but not used: the server's are. */
const ChallengeBody = OptionalBody({ channel: StringField(), webauthn: ObjectField() })
const VerifyBody = Body({
  challenge_id: StringField(),
  code: StringField(),
  webauthn: ObjectField(),
})
const RecoveryGenerateBody = OptionalBody({ friendly_name: StringField() })
const RecoveryVerifyBody = Body({ code: StringField() })

/** The answer of generate and regenerate (upstream's shape): the codes, shown this once. */
function generatedJson({ set, codes }: GeneratedRecoveryCodes) {
  return {
    id: set.id,
    type: RECOVERY_CODE_FACTOR_TYPE,
    friendly_name: set.friendlyName,
    total: set.total,
    codes,
  }
}

const AdminUpdateBody = OptionalBody({ friendly_name: StringField(), phone: StringField() })

/** The caller's factor named in the path (upstream `loadFactor`). */
async function factorOf(
  ctx: AppContext,
  request: FastifyRequest<{ Params: { factor_id: string } }>,
) {
  return loadOwnFactor(ctx.db, authOf(request).user.id, request.params.factor_id)
}

/**
 * The MFA API for a signed-in, non-anonymous user: `POST /factors` (enroll `totp`, `phone` or
 * `webauthn`),
 * `POST /factors/<id>/challenge`, `POST /factors/<id>/verify` (both rate-limited by
 * `MFA_RATE_LIMIT_CHALLENGE_AND_VERIFY`) and `DELETE /factors/<id>`; recovery codes:
 * `GET`, `POST` and `DELETE /factors/recovery-codes`, `POST /factors/recovery-codes/regenerate`
 * and `POST /factors/recovery-codes/verify` (rate-limited as factor verification).
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/mfa.go
 */
export const factorRoutes: RouteGroup = (app, ctx) => {
  const { settings } = ctx
  app.addHook('preValidation', requireAuthentication)
  app.addHook('preValidation', (request, _reply, done) => {
    try {
      refuseAnonymous(authOf(request))
      done()
    } catch (error) {
      done(error as Error)
    }
  })

  app.post('/factors', { schema: { body: EnrollBody } }, async (request) => {
    const { body } = request
    const { factor, totp, phone } = await enrollFactor(
      request.ctx,
      authOf(request),
      {
        factorType: body.factor_type,
        friendlyName: body.friendly_name,
        issuer: body.issuer,
        phone: body.phone,
      },
      clientIp(request, settings),
    )
    return {
      id: factor.id,
      type: factor.factorType,
      friendly_name: factor.friendlyName,
      ...(totp ? { totp: { qr_code: totp.qrCode, secret: totp.secret, uri: totp.uri } } : {}),
      ...(phone !== undefined && phone !== '' ? { phone } : {}),
    }
  })

  app.post(
    '/factors/:factor_id/challenge',
    {
      schema: { params: FactorParams, body: ChallengeBody },
      preHandler: rateLimit(ctx, 'factor_challenge'),
    },
    async (request) => {
      const challenge = await challengeFactor(
        request.ctx,
        authOf(request),
        await factorOf(request.ctx, request),
        request.body?.channel ?? '',
        clientIp(request, settings),
      )
      return {
        id: challenge.id,
        type: challenge.type,
        expires_at: challenge.expiresAt,
        ...(challenge.webauthn
          ? {
              webauthn: {
                type: challenge.webauthn.type,
                credential_options: challenge.webauthn.credentialOptions,
              },
            }
          : {}),
      }
    },
  )

  app.post(
    '/factors/:factor_id/verify',
    {
      schema: { params: FactorParams, body: VerifyBody, response: { 200: SESSION_RESPONSE } },
      preHandler: rateLimit(ctx, 'factor_verify'),
    },
    async (request) => {
      const session = await verifyFactor(
        request.ctx,
        authOf(request),
        await factorOf(request.ctx, request),
        {
          challengeId: request.body.challenge_id,
          code: request.body.code,
          webauthn: request.body.webauthn,
        },
        requestContext(request, settings),
        request.log,
      )
      return serializeSession(session)
    },
  )

  app.get('/factors/recovery-codes', async (request) => {
    const set = await recoveryCodesStatus(request.ctx, authOf(request))
    return {
      id: set.id,
      type: RECOVERY_CODE_FACTOR_TYPE,
      friendly_name: set.friendlyName,
      total: set.total,
      remaining: set.remaining,
      created_at: set.createdAt.toISOString(),
      updated_at: set.updatedAt.toISOString(),
    }
  })

  app.post('/factors/recovery-codes', { schema: { body: RecoveryGenerateBody } }, async (request) =>
    generatedJson(
      await generateRecoveryCodes(
        request.ctx,
        authOf(request),
        request.body?.friendly_name ?? '',
        clientIp(request, settings),
      ),
    ),
  )

  app.post('/factors/recovery-codes/regenerate', async (request) =>
    generatedJson(
      await regenerateRecoveryCodes(request.ctx, authOf(request), clientIp(request, settings)),
    ),
  )

  app.post(
    '/factors/recovery-codes/verify',
    {
      schema: { body: RecoveryVerifyBody, response: { 200: SESSION_RESPONSE } },
      preHandler: rateLimit(ctx, 'factor_verify'),
    },
    async (request) =>
      serializeSession(
        await verifyRecoveryCode(
          request.ctx,
          authOf(request),
          request.body.code,
          requestContext(request, settings),
          request.log,
        ),
      ),
  )

  app.delete('/factors/recovery-codes', async (request) => ({
    id: await deleteRecoveryCodes(request.ctx, authOf(request), clientIp(request, settings)),
  }))

  app.delete('/factors/:factor_id', { schema: { params: FactorParams } }, async (request) => {
    const factor = await factorOf(request.ctx, request)
    const client = requestContext(request, settings)
    await unenrollFactor(request.ctx, authOf(request), factor, client, request.log)
    return { id: factor.id }
  })
}

/**
 * The admin's view of a user's factors: `GET /admin/users/<id>/factors`, `PUT` (friendly name,
 * phone) and `DELETE /admin/users/<id>/factors/<factor_id>`, and the reset of a user's recovery
 * codes, `DELETE /admin/users/<id>/factors/recovery-codes`, for tokens whose role is in
 * `JWT_ADMIN_ROLES`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/admin.go
 */
export const adminFactorRoutes: RouteGroup = (app, ctx) => {
  app.addHook('preValidation', requireAdmin(ctx))

  app.get(
    '/admin/users/:user_id/factors',
    { schema: { params: UserFactorsParams } },
    async (request) =>
      (await listFactorsAsAdmin(request.ctx, request.params.user_id)).map(serializeFactor),
  )

  app.delete(
    '/admin/users/:user_id/factors/:factor_id',
    { schema: { params: UserFactorParams } },
    async (request) =>
      serializeFactor(
        await deleteFactorAsAdmin(
          request.ctx,
          request.params.user_id,
          request.params.factor_id,
          adminAuditActor(adminClaimsOf(request)),
          clientIp(request, ctx.settings),
        ),
      ),
  )

  app.delete(
    '/admin/users/:user_id/factors/recovery-codes',
    { schema: { params: UserFactorsParams } },
    async (request) => ({
      id: await resetRecoveryCodesAsAdmin(
        request.ctx,
        request.params.user_id,
        adminAuditActor(adminClaimsOf(request)),
        clientIp(request, ctx.settings),
      ),
    }),
  )

  app.put(
    '/admin/users/:user_id/factors/:factor_id',
    { schema: { params: UserFactorParams, body: AdminUpdateBody } },
    async (request) =>
      serializeFactor(
        await updateFactorAsAdmin(
          request.ctx,
          request.params.user_id,
          request.params.factor_id,
          { friendlyName: request.body?.friendly_name ?? '', phone: request.body?.phone ?? '' },
          adminAuditActor(adminClaimsOf(request)),
          clientIp(request, ctx.settings),
        ),
      ),
  )
}
