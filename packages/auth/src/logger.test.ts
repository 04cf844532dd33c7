import { once, type EventEmitter } from 'node:events'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { REDACT_CENSOR, redactUrl } from '@gatehouse/settings'
import pino from 'pino'
import { describe, expect, it } from 'vitest'
import { createLogger } from './logger.js'

/** A stream that keeps what is written to it. */
function capture(): { stream: Writable; lines: string[] } {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'))
      done()
    },
  })
  return { stream, lines }
}

describe('redactUrl on OAuth callbacks', () => {
  it('censors codes, states and OAuth 1.0a verifiers in query strings and leaves the rest', () => {
    expect(
      redactUrl(
        '/callback?code=abc&state=eyJ.x.y&oauth_token=t&oauth_verifier=v&iss=http%3A%2F%2Fidp',
      ),
    ).toBe(
      `/callback?code=${REDACT_CENSOR}&state=${REDACT_CENSOR}&oauth_token=${REDACT_CENSOR}&oauth_verifier=${REDACT_CENSOR}&iss=http%3A%2F%2Fidp`,
    )
    expect(redactUrl('/authorize?provider=github')).toBe('/authorize?provider=github')
    expect(redactUrl('/authorize?provider=github&link_ticket=eyJ.x.y')).toBe(
      `/authorize?provider=github&link_ticket=${REDACT_CENSOR}`,
    )
    expect(redactUrl('/health')).toBe('/health')
  })
})

describe('createLogger', () => {
  /** @see issue 25, item 13: GoTrue's logrus writes `"level":"info"`; pipelines filter on it. */
  it('writes levels as logrus words, as GoTrue does', () => {
    const { stream, lines } = capture()
    const logger = createLogger({ level: 'trace', file: '' }, stream)
    logger.trace('a')
    logger.debug('b')
    logger.info('c')
    logger.warn('d')
    logger.error('e')
    logger.fatal('f')
    expect(lines.map((line) => (JSON.parse(line) as { level: unknown }).level)).toEqual([
      'trace',
      'debug',
      'info',
      'warning',
      'error',
      'fatal',
    ])
    expect(lines[2]).toMatch(/^\{"level":"info","time":\d+,/)
  })

  it('logs request URLs without their one-time codes', () => {
    const { stream, lines } = capture()
    createLogger({ level: 'info', file: '' }, stream).info(
      { req: { method: 'GET', url: '/callback?code=one-time-code&oauth_verifier=v-123' } },
      'incoming request',
    )
    const line = lines.join('')
    expect(line).toContain('"method":"GET"')
    expect(line).not.toContain('one-time-code')
    expect(line).not.toContain('v-123')
  })

  it('redacts credentials and tokens', () => {
    const { stream, lines } = capture()
    const logger = createLogger({ level: 'info', file: '' }, stream)
    logger.info(
      {
        req: { headers: { authorization: 'Bearer abc.def.ghi' } },
        password: 'hunter2',
        body: { password: 'hunter3', refresh_token: 'abcdefghijkl' },
      },
      'hello',
    )
    const line = lines.join('')
    expect(line).toContain('"msg":"hello"')
    for (const secret of ['abc.def.ghi', 'hunter2', 'hunter3', 'abcdefghijkl'])
      expect(line).not.toContain(secret)
  })

  it('redacts cookies, API keys and secret settings with the list both servers share', () => {
    const { stream, lines } = capture()
    createLogger({ level: 'info', file: '' }, stream).info(
      {
        req: { headers: { cookie: 'sb=cookie-1', apikey: 'apikey-1', host: 'example.com' } },
        res: { headers: { 'set-cookie': 'sb=cookie-2' } },
        env: { GOTRUE_JWT_SECRET: 'jwt-secret-1', DATABASE_URL: 'postgres://u:pw-1@h/db' },
        settings: { secret: 'jwt-secret-2' },
      },
      'request',
    )
    const line = lines.join('')
    expect(line).toContain('example.com')
    for (const secret of [
      'cookie-1',
      'cookie-2',
      'apikey-1',
      'jwt-secret-1',
      'pw-1',
      'jwt-secret-2',
    ])
      expect(line).not.toContain(secret)
  })

  it('appends JSON lines to LOG_FILE', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-auth-log-'))
    try {
      const file = join(dir, 'logs', 'auth.log')
      const logger = createLogger({ level: 'warn', file })
      // The file opens asynchronously: wait for it, then the flush below calls back once the
      // lines are written.
      const stream = (logger as unknown as Record<symbol, EventEmitter>)[pino.symbols.streamSym]
      if (stream === undefined) throw new Error('the logger has no stream')
      await once(stream, 'ready')
      logger.info('hidden')
      logger.warn({ password: 'hunter2' }, 'shown')
      // The file is written asynchronously: its flush calls back once the lines are on disk.
      await new Promise<void>((resolve, reject) => {
        logger.flush((error) => {
          if (error) reject(error)
          else resolve()
        })
      })
      const lines = (await readFile(file, 'utf8')).trim().split('\n')
      expect(lines).toHaveLength(1)
      expect(JSON.parse(lines[0]!)).toMatchObject({
        level: 'warning',
        msg: 'shown',
        password: '[redacted]',
      })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
