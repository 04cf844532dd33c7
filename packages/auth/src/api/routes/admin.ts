import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Static } from 'typebox'
import { adminAuditActor } from '../../models/audit-log.js'
import type { ListUsersOptions } from '../../models/user.js'
import {
  createUserAsAdmin,
  deleteUserAsAdmin,
  getUser,
  listUsersPage,
  updateUserAsAdmin,
  type AdminUserParams,
} from '../../services/admin-users.js'
import { auditLogPage } from '../../services/audit-log.js'
import { endSession, listSessions } from '../../services/device-sessions.js'
import { generateLink } from '../../services/generate-link.js'
import { UUID_PATTERN } from '../../services/shared/validation.js'
import { adminClaimsOf, requireAdmin } from '../http/hooks.js'
import { requestRedirectTo } from '../http/redirect-to.js'
import { clientIp, requestContext } from '../http/request-context.js'
import type { RouteGroup } from './group.js'
import {
  Body,
  BoolField,
  ObjectField,
  OptionalBody,
  OptionalParam,
  Param,
  Params,
  PointerStringField,
  Query,
  StringField,
} from '../http/schema.js'
import { USER_LIST_RESPONSE, USER_RESPONSE } from '../http/response-schemas.js'
import { serializeDeviceSession, serializeUser } from '../http/serializers.js'

/**
 * The `Link` header of a page (upstream `addPaginationHeaders`): `rel="next"` when there is a
 * later page, and always `rel="last"`.
 */
export function paginationLink(path: string, page: number, perPage: number, total: number): string {
  const last = Math.ceil(total / perPage)
  const link = (p: number): string => `<${path}?page=${String(p)}&per_page=${String(perPage)}>`
  const links: string[] = []
  if (page < last) links.push(`${link(page + 1)}; rel="next"`)
  links.push(`${link(last)}; rel="last"`)
  return links.join(', ')
}

/**
 * A page number or size: empty (the default) or at most nine digits worth at least 1 (a larger
 * number names no page, and would overflow PostgreSQL's `OFFSET`).
 */
const PAGE = '^(?=\\d{0,9}$)(\\d*[1-9]\\d*)?$'

/** The most entries one page of the audit log holds (a larger `per_page` is taken as this). */
const MAX_AUDIT_PAGE_SIZE = 1000

const SORT_COLUMNS = ['created_at', 'email', 'phone', 'updated_at', 'last_sign_in_at'] as const

/** `sort`: empty, or a column, optionally followed by `asc` or `desc` (any case). */
const SORT = `^(|\\s*(${SORT_COLUMNS.join('|')})(\\s+([aA][sS][cC]|[dD][eE][sS][cC])(\\s[\\s\\S]*)?)?\\s*)$`

/** `page` and `per_page` of a paginated list (upstream `paginate`). */
const PAGINATION = {
  page: OptionalParam({ pattern: PAGE, errorMessage: 'Bad Pagination Parameters: page' }),
  per_page: OptionalParam({ pattern: PAGE, errorMessage: 'Bad Pagination Parameters: per_page' }),
}

/**
 * The page a request asks for (1 and 50 by default, `per_page` at most `maxPerPage`), and a
 * function that adds its `X-Total-Count` and `Link` headers once the total is known.
 */
function pageOf(
  query: { readonly page?: string; readonly per_page?: string },
  path: string,
  maxPerPage = Number.POSITIVE_INFINITY,
) {
  const page = Number(query.page || 1)
  const perPage = Math.min(Number(query.per_page || 50), maxPerPage)
  const headers = (reply: FastifyReply, total: number): void => {
    reply.header('x-total-count', String(total))
    reply.header('link', paginationLink(path, page, perPage, total))
  }
  return { page, perPage, headers }
}

const ListQuery = Query({
  ...PAGINATION,
  filter: OptionalParam(),
  sort: OptionalParam({ pattern: SORT, errorMessage: 'Bad Sort Parameters: %s' }),
})

const AuditQuery = Query({
  ...PAGINATION,
  query: OptionalParam(),
})

/** A `sort` that passed {@link SORT}, as columns and direction (default `created_at desc`). */
function parseSort(sort: string): ListUsersOptions['sort'] {
  if (sort === '') return { column: 'created_at', desc: true }
  const [column, direction = 'desc'] = sort.trim().split(/\s+/)
  return {
    column: column as ListUsersOptions['sort']['column'],
    desc: direction.toLowerCase() === 'desc',
  }
}

const GenerateLinkBody = Body({
  type: StringField(),
  email: StringField(),
  new_email: StringField(),
  password: StringField(),
  data: ObjectField(),
  redirect_to: StringField(),
})

const GenerateLinkQuery = Query({ redirect_to: OptionalParam() })

const UserParams = Params({
  user_id: Param({ pattern: UUID_PATTERN, errorMessage: 'user_id must be an UUID' }),
})

const UserSessionParams = Params({
  user_id: Param({ pattern: UUID_PATTERN, errorMessage: 'user_id must be an UUID' }),
  session_id: Param({ pattern: UUID_PATTERN, errorMessage: 'Session not found' }),
})

const AdminUserBody = Body({
  aud: StringField(),
  email: StringField(),
  phone: StringField(),
  password: PointerStringField(),
  password_hash: StringField(),
  id: StringField(),
  ban_duration: StringField(),
  user_metadata: ObjectField(),
  app_metadata: ObjectField(),
  email_confirm: BoolField(),
  phone_confirm: BoolField(),
  role: StringField(),
})

const DeleteBody = OptionalBody({ should_soft_delete: BoolField() })

/** The fields of an admin create or update body, as Go would have decoded them. */
function adminUserParams(body: Static<typeof AdminUserBody>): AdminUserParams {
  return {
    aud: body.aud,
    role: body.role,
    email: body.email,
    phone: body.phone,
    password: body.password,
    passwordHash: body.password_hash,
    id: body.id,
    banDuration: body.ban_duration,
    userMetadata: body.user_metadata,
    appMetadata: body.app_metadata,
    emailConfirm: body.email_confirm,
    phoneConfirm: body.phone_confirm,
  }
}

function actorOf(request: FastifyRequest) {
  return adminAuditActor(adminClaimsOf(request))
}

/**
 * Admin users API: `GET`/`POST /admin/users`, `GET`/`PUT` (or `POST`)/`DELETE
 * /admin/users/<user_id>`, `POST /admin/generate_link` and `GET /admin/audit` (the audit log, a
 * page at a time, `query=<scope>:<text>`), for tokens whose role is in `JWT_ADMIN_ROLES`.
 *
 * @see https://github.com/supabase/auth/blob/master/internal/api/admin.go
 */
export const adminRoutes: RouteGroup = (app, ctx) => {
  const { settings } = ctx
  app.addHook('preValidation', requireAdmin(ctx))

  app.get(
    '/admin/users',
    { schema: { querystring: ListQuery, response: { 200: USER_LIST_RESPONSE } } },
    async (request, reply) => {
      const { query } = request
      const { page, perPage, headers } = pageOf(query, '/admin/users')
      const aud = requestContext(request, settings).aud
      const { users, total } = await listUsersPage(request.ctx, {
        aud,
        page,
        perPage,
        filter: query.filter ?? '',
        sort: parseSort(query.sort ?? ''),
      })
      headers(reply, total)
      return { users: users.map((u) => serializeUser(u.user, u.identities)), aud }
    },
  )

  app.get('/admin/audit', { schema: { querystring: AuditQuery } }, async (request, reply) => {
    const { query } = request
    const { page, perPage, headers } = pageOf(query, '/admin/audit', MAX_AUDIT_PAGE_SIZE)
    const { entries, total } = await auditLogPage(request.ctx, query.query ?? '', page, perPage)
    headers(reply, total)
    return entries
  })

  app.post(
    '/admin/users',
    { schema: { body: AdminUserBody, response: { 200: USER_RESPONSE } } },
    async (request) => {
      const { user, identities } = await createUserAsAdmin(
        request.ctx,
        adminUserParams(request.body),
        actorOf(request),
        requestContext(request, settings),
        request.deadline,
      )
      return serializeUser(user, identities)
    },
  )

  app.get(
    '/admin/users/:user_id',
    { schema: { params: UserParams, response: { 200: USER_RESPONSE } } },
    async (request) => {
      const { user, identities } = await getUser(request.ctx, request.params.user_id)
      return serializeUser(user, identities)
    },
  )

  // The spec lists POST and PUT for updates; upstream has PUT only. Both are served.
  app.route({
    method: ['PUT', 'POST'],
    url: '/admin/users/:user_id',
    schema: { params: UserParams, body: AdminUserBody, response: { 200: USER_RESPONSE } },
    handler: async (request) => {
      const { user, identities } = await updateUserAsAdmin(
        request.ctx,
        request.params.user_id,
        adminUserParams(request.body),
        actorOf(request),
        clientIp(request, settings),
        request.deadline,
      )
      return serializeUser(user, identities)
    },
  })

  app.delete(
    '/admin/users/:user_id',
    { schema: { params: UserParams, body: DeleteBody } },
    async (request) => {
      const soft = request.body?.should_soft_delete === true
      await deleteUserAsAdmin(
        request.ctx,
        request.params.user_id,
        soft,
        actorOf(request),
        clientIp(request, settings),
      )
      return {}
    },
  )

  app.get('/admin/users/:user_id/sessions', { schema: { params: UserParams } }, async (request) => {
    const sessions = await listSessions(request.ctx, request.params.user_id, undefined)
    return { sessions: sessions.map(serializeDeviceSession) }
  })

  app.delete(
    '/admin/users/:user_id/sessions/:session_id',
    { schema: { params: UserSessionParams } },
    async (request) => {
      const { user_id: userId, session_id: sessionId } = request.params
      await endSession(
        request.ctx,
        userId,
        sessionId,
        actorOf(request),
        requestContext(request, settings),
      )
      return {}
    },
  )

  app.post(
    '/admin/generate_link',
    { schema: { body: GenerateLinkBody, querystring: GenerateLinkQuery } },
    async (request) => {
      const { body } = request
      const { user, identities, mail } = await generateLink(
        request.ctx,
        {
          type: body.type,
          email: body.email,
          newEmail: body.new_email,
          password: body.password,
          data: body.data ?? {},
          redirectTo: requestRedirectTo(request, settings),
        },
        requestContext(request, settings),
        request.deadline,
      )
      return {
        ...serializeUser(user, identities),
        action_link: mail.link,
        email_otp: mail.otp,
        hashed_token: mail.hash,
        verification_type: mail.type,
        redirect_to: mail.redirectTo,
      }
    },
  )
}
