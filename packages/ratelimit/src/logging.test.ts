import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createLogger, sharedLinesLogger } from './logging.js'

function capture(): { stream: Writable; text: () => string } {
  const chunks: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'))
      done()
    },
  })
  return { stream, text: () => chunks.join('') }
}

const SECRETS = {
  auth: 'user:redis-pass-1',
  redis: { auth: 'redis-pass-2', url: 'localhost:6379' },
  env: { REDIS_AUTH: 'redis-pass-3', KVSTORE_PERSECOND_AUTH: 'redis-pass-4' },
  password: 'hunter2',
  req: { headers: { authorization: 'Bearer abc.def.ghi', cookie: 'sid=cookie-1' } },
}

describe('createLogger', () => {
  it.each(['json', 'text'] as const)(
    'censors credentials with the shared redaction list (%s)',
    (format) => {
      const out = capture()
      const logger = createLogger({ level: 'info', format }, out.stream)
      logger.warn(SECRETS, 'connected')
      const line = out.text()
      expect(line).toContain('connected')
      expect(line).toContain('localhost:6379')
      expect(line).toContain('[redacted]')
      for (const secret of [
        'redis-pass-1',
        'redis-pass-2',
        'redis-pass-3',
        'redis-pass-4',
        'hunter2',
        'abc.def.ghi',
        'cookie-1',
      ]) {
        expect(line).not.toContain(secret)
      }
    },
  )

  it('writes JSON records with @timestamp, @message and the logrus level', () => {
    const out = capture()
    createLogger({ level: 'info', format: 'json' }, out.stream).warn({ auth: 'x' }, 'hello')
    expect(JSON.parse(out.text())).toMatchObject({
      '@message': 'hello',
      level: 'warning',
      auth: '[redacted]',
    })
  })
})

describe('sharedLinesLogger', () => {
  it('writes the shared lines in the first worker only, and in the others only at debug level', () => {
    const out = capture()
    const logger = createLogger({ level: 'info', format: 'text' }, out.stream)
    sharedLinesLogger(logger, true, 1).warn('from the first')
    sharedLinesLogger(logger, false, 2).error('from the second')
    expect(out.text()).toMatch(/^time="[^"]+" level=warning msg="from the first"\n$/)

    const debug = capture()
    const verbose = createLogger({ level: 'debug', format: 'text' }, debug.stream)
    sharedLinesLogger(verbose, false, 2).info('from the second')
    expect(debug.text()).toMatch(/ level=info msg="from the second" worker=2\n$/)
  })
})
