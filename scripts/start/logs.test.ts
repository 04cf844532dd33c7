import { Writable } from 'node:stream'
import { createLogger } from '#internal/auth/logger.js'
import { describe, expect, it } from 'vitest'
import { clockTime, jsonLine, prettyLine, type ServerLine } from './logs.js'

const at = new Date(2026, 0, 2, 3, 4, 5, 6)
const line = (text: string, stream: ServerLine['stream'] = 'stdout'): ServerLine => ({
  service: 'auth',
  stream,
  text,
  at,
})

/** A JSON log record in the pretty format, without colors. */
const pretty = (record: object, stream: ServerLine['stream'] = 'stdout'): string =>
  prettyLine(line(JSON.stringify(record), stream), false)

describe('prettyLine', () => {
  it('shows pino lines (numeric levels) and Fastify request fields in one line', () => {
    const time = at.getTime() + 1000
    expect(
      pretty({
        level: 30,
        time,
        component: 'api',
        reqId: 'req-1',
        req: { method: 'GET', url: '/health' },
        msg: 'incoming request',
      }),
    ).toBe(
      `${clockTime(new Date(time))} INFO  incoming request GET /health component=api reqId=req-1`,
    )
    expect(
      pretty({
        level: 30,
        time,
        res: { statusCode: 204 },
        responseTime: 1.234,
        msg: 'request completed',
      }),
    ).toBe(`${clockTime(new Date(time))} INFO  request completed 204 in 1.2 ms`)
  })

  /** @see issue 25, item 13: the auth server writes logrus's level words. */
  it("shows the auth server's own lines (level words) with their level", () => {
    const written: string[] = []
    const logger = createLogger(
      { level: 'info', file: '' },
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          written.push(chunk.toString('utf8').trim())
          done()
        },
      }),
    )
    logger.info({ component: 'db' }, 'ready')
    logger.warn('SMTP_HOST is not set')
    logger.error('boom')
    expect(written.map((text) => prettyLine(line(text), false).replace(/^\S+ /, 'HH:MM '))).toEqual(
      [
        'HH:MM INFO  ready component=db',
        'HH:MM WARN  SMTP_HOST is not set component=api',
        'HH:MM ERROR boom component=api',
      ],
    )
  })

  it("shows word levels and the rate limit service's @timestamp/@message the same way", () => {
    expect(
      pretty(
        {
          level: 'warning',
          '@timestamp': at.toISOString(),
          '@message': 'config reload failed',
          file: 'a b.yaml',
        },
        'stderr',
      ),
    ).toBe('03:04:05.006 WARN  config reload failed file="a b.yaml"')
    expect(pretty({ level: 'info', msg: 'x' })).toBe('03:04:05.006 INFO  x')
  })

  it("puts an error's stack on indented lines and colors the level when asked", () => {
    const text = JSON.stringify({
      level: 50,
      time: at.getTime(),
      err: { type: 'Error', message: 'boom', stack: 'Error: boom\n    at f (a.js:1:1)' },
      msg: 'failed',
    })
    expect(prettyLine(line(text), false)).toBe(
      `03:04:05.006 ERROR failed err=boom\n${' '.repeat(19)}    at f (a.js:1:1)`,
    )
    expect(prettyLine(line(text), true)).toContain('\u001b[31mERROR\u001b[0m')
  })

  it('gives plain lines the same head, and keeps stack frames under the line before', () => {
    expect(prettyLine(line('gatehouse-auth: listening on http://127.0.0.1:9999'), false)).toBe(
      '03:04:05.006 INFO  gatehouse-auth: listening on http://127.0.0.1:9999',
    )
    expect(prettyLine(line('(node) a warning', 'stderr'), false)).toBe(
      '03:04:05.006 WARN  (node) a warning',
    )
    expect(prettyLine(line('    at main (x.js:2:3)', 'stderr'), false)).toBe(
      `${' '.repeat(19)}    at main (x.js:2:3)`,
    )
    expect(prettyLine(line('{not json'), false)).toBe('03:04:05.006 INFO  {not json')
  })
})

describe('jsonLine', () => {
  it('adds the server to JSON lines and wraps plain ones', () => {
    expect(JSON.parse(jsonLine(line('{"level":30,"msg":"hi"}')))).toEqual({
      service: 'auth',
      level: 30,
      msg: 'hi',
    })
    expect(JSON.parse(jsonLine(line('plain', 'stderr')))).toEqual({
      service: 'auth',
      time: at.toISOString(),
      level: 'warn',
      msg: 'plain',
    })
  })
})
