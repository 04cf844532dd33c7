import { describe, expect, it } from 'vitest'
import { parseClientArgs } from './client.js'

describe('gatehouse-ratelimit-client arguments', () => {
  it('uses upstream defaults and Go flag syntax', () => {
    expect(parseClientArgs([])).toEqual({
      dialString: 'localhost:8081',
      domain: '',
      descriptors: [],
    })
    expect(
      parseClientArgs([
        '-dial_string',
        '127.0.0.1:9',
        '--domain=rl',
        '-descriptors',
        'name=foo,age=14',
        '-descriptors=a=b=c',
      ]),
    ).toEqual({
      dialString: '127.0.0.1:9',
      domain: 'rl',
      descriptors: [
        {
          entries: [
            { key: 'name', value: 'foo' },
            { key: 'age', value: '14' },
          ],
        },
        { entries: [{ key: 'a', value: 'b=c' }] },
      ],
    })
  })

  it.each([
    [['-port', '1'], 'flag provided but not defined: -port'],
    [['-domain'], 'flag needs an argument: -domain'],
    [['-descriptors', 'novalue'], 'invalid descriptor entry "novalue": expected key=value'],
    [['stray'], 'unexpected argument: stray'],
  ])('rejects %j', (argv, message) => {
    expect(() => parseClientArgs(argv)).toThrow(message)
  })
})
