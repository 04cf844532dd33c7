import { describe, expect, it } from 'vitest'
import { UsageError } from '@gatehouse/settings'
import { CLIENT_USAGE, parseClientArgs } from './args.js'
import { GoFlagError } from './go-flag.js'

describe('gatehouse-ratelimit-client arguments', () => {
  it("uses upstream's defaults and flags", () => {
    expect(parseClientArgs([])).toEqual({
      name: 'call',
      args: { dialString: 'localhost:8081', domain: '', descriptors: [] },
    })
    expect(
      parseClientArgs([
        '-dial_string',
        '127.0.0.1:9',
        '--domain=rl',
        '-descriptors',
        'name=foo,age=14',
        '-descriptors=a=',
        '-grpc-use-tls',
        '-grpc-server-ca-file',
        'ca.pem',
      ]),
    ).toEqual({
      name: 'call',
      args: {
        dialString: '127.0.0.1:9',
        domain: 'rl',
        descriptors: [
          {
            entries: [
              { key: 'name', value: 'foo' },
              { key: 'age', value: '14' },
            ],
          },
          { entries: [{ key: 'a', value: '' }] },
        ],
        tls: { caFile: 'ca.pem', certFile: '', keyFile: '' },
      },
    })
  })

  it.each([
    [['-h'], { name: 'help' }],
    [['-domain', 'x', '--help'], { name: 'help' }],
    [['-version'], { name: 'version' }],
    [['--version'], { name: 'version' }],
  ])('reads %j', (argv, command) => {
    expect(parseClientArgs(argv)).toEqual(command)
  })

  it.each([
    [['-port', '1'], 'flag provided but not defined: -port'],
    [['-oltp-protocol', 'http'], 'flag provided but not defined: -oltp-protocol'],
    [['-domain'], 'flag needs an argument: -domain'],
    [
      ['-descriptors', 'novalue'],
      'invalid value "novalue" for flag -descriptors: invalid descriptor list',
    ],
    [
      ['-descriptors', 'a=b=c'],
      'invalid value "a=b=c" for flag -descriptors: invalid descriptor list',
    ],
    [['-grpc-use-tls=on'], 'invalid boolean value "on" for -grpc-use-tls: parse error'],
  ])('refuses %j with Go text', (argv, message) => {
    expect(() => parseClientArgs(argv)).toThrow(new GoFlagError(message))
  })

  it('refuses an argument after the flags, which upstream would ignore', () => {
    expect(() => parseClientArgs(['-domain', 'rl', 'stray'])).toThrow(
      new UsageError('unexpected argument "stray"'),
    )
  })

  it("lists the flags in Go's format", () => {
    expect(CLIENT_USAGE).toMatch(/^Usage of gatehouse-ratelimit-client:\n {2}-descriptors value\n/)
    expect(CLIENT_USAGE).toContain(
      '  -dial_string string\n    \tthe service\'s gRPC address, <host>:<port> (default "localhost:8081")\n',
    )
    expect(CLIENT_USAGE).toContain('  -grpc-use-tls\n    \tconnect to the service over TLS\n')
  })
})
