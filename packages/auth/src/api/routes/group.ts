/**
 * The shape of a route group, apart from the list of groups (`routes.ts`) so that a group's file
 * imports its type without importing the list that imports it.
 * @module
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify'
import type { RouteContext } from '../../context.js'

/**
 * The Fastify instance a route group adds its routes and hooks to: its own encapsulated context,
 * whose routes take their request types from their TypeBox schemas.
 */
export type RouteScope = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>

/**
 * A route group: adds its hooks and routes to its own scope (registered by `authRoutes`). `ctx`
 * serves registration (settings, limiters); the work of a request goes through `request.ctx`.
 */
export type RouteGroup = (app: RouteScope, ctx: RouteContext) => void
