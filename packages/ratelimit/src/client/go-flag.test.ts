import { describe, expect, it } from 'vitest'
import { GoFlagError, goFlagUsage, goQuote, parseGoFlags, type GoFlag } from './go-flag.js'

const FLAGS: readonly GoFlag[] = [
  { kind: 'string', name: 'addr', usage: 'where to dial', default: 'localhost:1' },
  { kind: 'string', name: 'name', usage: 'a name' },
  { kind: 'bool', name: 'tls', usage: 'use TLS' },
  { kind: 'bool', name: 'v', usage: 'verbose' },
  {
    kind: 'value',
    name: 'pair',
    usage: 'a `key=value` pair\nrepeatable',
    check: (value) => (value.includes('=') ? undefined : 'expected key=value'),
  },
]

function refusal(argv: readonly string[]): string {
  try {
    parseGoFlags(argv, FLAGS)
  } catch (error) {
    expect(error).toBeInstanceOf(GoFlagError)
    expect(error).toHaveProperty('code', 'ERR_GO_FLAG')
    return (error as Error).message
  }
  throw new Error(`accepted ${JSON.stringify(argv)}`)
}

describe('parseGoFlags', () => {
  it('reads -flag value, -flag=value, --flag, booleans and repeated values as Go does', () => {
    const parsed = parseGoFlags(
      ['--addr', '-odd-but-a-value', '-name=x=y', '-tls', '-v=false', '-pair', 'a=1', '--pair=b=2'],
      FLAGS,
    )
    expect(parsed.strings).toEqual(
      new Map([
        ['addr', '-odd-but-a-value'],
        ['name', 'x=y'],
      ]),
    )
    expect(parsed.bools).toEqual(new Set(['tls']))
    expect(parsed.values).toEqual(new Map([['pair', ['a=1', 'b=2']]]))
    expect(parsed.help).toBe(false)
    expect(parsed.args).toEqual([])
  })

  it('keeps defaults, and stops at the first argument that is no flag, "-" or after "--"', () => {
    expect(parseGoFlags([], FLAGS).strings.get('addr')).toBe('localhost:1')
    expect(parseGoFlags(['-v', 'rest', '-tls'], FLAGS)).toMatchObject({
      bools: new Set(['v']),
      args: ['rest', '-tls'],
    })
    expect(parseGoFlags(['-', '-v'], FLAGS).args).toEqual(['-', '-v'])
    expect(parseGoFlags(['--', '-v'], FLAGS)).toMatchObject({ bools: new Set(), args: ['-v'] })
  })

  it.each([['-h'], ['-help'], ['--h'], ['--help', '-bogus']])('%s asks for help', (...argv) => {
    expect(parseGoFlags(argv, FLAGS).help).toBe(true)
  })

  it.each([
    [['-x'], 'flag provided but not defined: -x'],
    [['--nope=1'], 'flag provided but not defined: -nope'],
    [['---x'], 'bad flag syntax: ---x'],
    [['-=x'], 'bad flag syntax: -=x'],
    [['-name'], 'flag needs an argument: -name'],
    [['-tls=yes'], 'invalid boolean value "yes" for -tls: parse error'],
    [['-tls=tRuE'], 'invalid boolean value "tRuE" for -tls: parse error'],
    [['-pair', 'abc'], 'invalid value "abc" for flag -pair: expected key=value'],
    [['-pair', 'a"b\n\u0001'], 'invalid value "a\\"b\\n\\x01" for flag -pair: expected key=value'],
  ])('refuses %j with Go text', (argv, message) => {
    expect(refusal(argv)).toBe(message)
  })
})

describe('goFlagUsage', () => {
  it('prints the flags sorted as PrintDefaults does', () => {
    expect(goFlagUsage('prog', FLAGS)).toBe(
      [
        'Usage of prog:',
        '  -addr string',
        '    \twhere to dial (default "localhost:1")',
        '  -name string',
        '    \ta name',
        '  -pair key=value',
        '    \ta key=value pair',
        '    \trepeatable',
        '  -tls',
        '    \tuse TLS',
        '  -v\tverbose',
        '',
      ].join('\n'),
    )
  })

  it('quotes as strconv.Quote', () => {
    expect(goQuote('a\\b\t\u007f\u0085é')).toBe('"a\\\\b\\t\\x7f\\u0085é"')
  })
})
