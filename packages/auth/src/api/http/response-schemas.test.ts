import Fastify from 'fastify'
import { describe, expect, it } from 'vitest'
import { responseSchemaOf, type ResponseComponent } from './response-schemas.js'

const USER = {
  id: 'u1',
  aud: 'authenticated',
  role: 'authenticated',
  email: 'ada@example.com',
  phone: '',
  app_metadata: { provider: 'email' },
  user_metadata: {},
  identities: [{ identity_id: 'i1', identity_data: { sub: 'u1' }, extra: null }],
  created_at: '2026-01-01T00:00:00.000Z',
  is_anonymous: false,
  field_the_document_lacks: 7,
}
const SESSION = {
  access_token: 'a.b.c',
  token_type: 'bearer',
  expires_in: 3600,
  expires_at: 1_800_000_000,
  refresh_token: 'r',
  user: USER,
}

/** What a route with the `name` response schema answers for `body`. */
async function served(name: ResponseComponent, body: unknown) {
  const app = Fastify()
  app.get('/', { schema: { response: { 200: responseSchemaOf(name) } } }, () => body)
  try {
    return await app.inject({ method: 'GET', url: '/' })
  } finally {
    await app.close()
  }
}

describe('response schemas', () => {
  it('serialize a session and a user exactly as built, fields the document lacks included', async () => {
    expect((await served('Session', SESSION)).json()).toEqual(SESSION)
    expect((await served('User', USER)).json()).toEqual(USER)
  })

  it('serialize a page of users as built, and refuse one without its users', async () => {
    const page = { users: [USER], aud: 'authenticated' }
    expect((await served('UserList', page)).json()).toEqual(page)
    expect((await served('UserList', { aud: 'authenticated' })).statusCode).toBe(500)
  })

  it("serialize sign-up's user or session, each as built", async () => {
    expect((await served('UserOrSession', SESSION)).json()).toEqual(SESSION)
    expect((await served('UserOrSession', USER)).json()).toEqual(USER)
    const { id: _id, ...withoutId } = USER
    expect((await served('UserOrSession', withoutId)).statusCode).toBe(500)
    expect((await served('UserOrSession', { ...SESSION, user: withoutId })).statusCode).toBe(500)
  })

  it("serialize POST /verify's session or message, each as built", async () => {
    const verified = { ...SESSION, type: 'signup' }
    expect((await served('SessionOrAccepted', verified)).json()).toEqual(verified)
    const accepted = { msg: 'Confirmation link accepted.', code: '200' }
    expect((await served('SessionOrAccepted', accepted)).json()).toEqual(accepted)
    const { user: _user, ...withoutUser } = verified
    expect((await served('SessionOrAccepted', withoutUser)).statusCode).toBe(500)
  })

  it('refuse to answer a session without its user or a user without its id', async () => {
    const { user: _user, ...withoutUser } = SESSION
    expect((await served('Session', withoutUser)).statusCode).toBe(500)
    const { id: _id, ...withoutId } = USER
    expect((await served('User', withoutId)).statusCode).toBe(500)
    expect((await served('Session', { ...SESSION, user: withoutId })).statusCode).toBe(500)
  })
})
