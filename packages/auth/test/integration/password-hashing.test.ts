import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '@gatehouse/testing'
import { gatedPasswordHasher, signUp, startTestServer, type TestServer } from '../helpers.js'

/**
 * bcrypt is CPU-bound: without a bound, a flood of wrong passwords queues without end and starves
 * every sign-in. The verifications here are held open by the test, so that the running slot and
 * the queue are full exactly when the next request arrives.
 *
 * @see issue 8, item 8 (CPU exhaustion by bcrypt)
 */
describe('password hashing capacity', () => {
  let server: TestServer
  const gated = gatedPasswordHasher({ concurrency: 1, queueSize: 1 })
  const { hasher } = gated

  beforeAll(async () => {
    server = await startTestServer('hashing', {}, undefined, { deps: { passwordHasher: hasher } })
  })
  afterAll(async () => {
    gated.release()
    await server.close()
  })

  function signIn(password: string) {
    return server.request('POST', '/token?grant_type=password', {
      body: { email: 'busy@example.com', password },
    })
  }

  it('beyond the running and queued checks, sign-ins get 429 at once; the others complete', async () => {
    await signUp(server, 'busy@example.com', 'secret123')
    gated.hold()
    const running = signIn('wrong-1')
    await waitFor(() => hasher.running === 1, { what: 'the first check to run' })
    const queued = signIn('wrong-2')
    await waitFor(() => hasher.queued === 1, { what: 'the second check to queue' })

    const rejected = await signIn('wrong-3')
    expect(rejected.statusCode).toBe(429)
    expect(rejected.json()).toEqual({
      code: 429,
      error_code: 'over_request_rate_limit',
      msg: 'Too many password checks in progress, please retry in a moment',
    })
    expect(rejected.headers['retry-after']).toBe('1')
    // A genuine sign-in meanwhile is refused at once, not left waiting behind the flood.
    expect((await signIn('secret123')).statusCode).toBe(429)

    gated.release()
    expect((await running).json().error_code).toBe('invalid_credentials')
    expect((await queued).json().error_code).toBe('invalid_credentials')
    expect(hasher.running + hasher.queued).toBe(0)
    expect((await signIn('secret123')).statusCode).toBe(200)
  })
})
