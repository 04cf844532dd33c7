import { Writable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { createLogger } from './logger.js'

describe('createLogger', () => {
  it('redacts credentials and tokens', () => {
    const lines: string[] = []
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'))
        done()
      },
    })
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
})
