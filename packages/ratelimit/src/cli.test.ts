import { UsageError } from '@gatehouse/settings'
import { describe, expect, it } from 'vitest'
import { parseServiceArgs, serviceUsage } from './cli.js'

describe('gatehouse-ratelimit arguments', () => {
  it.each([
    [[], { name: 'serve', envFile: undefined }],
    [['--env-file', 'rl.env'], { name: 'serve', envFile: 'rl.env' }],
    [['--env-file=rl.env'], { name: 'serve', envFile: 'rl.env' }],
    [['-h'], { name: 'help' }],
    [['--help', '--bogus-after-help-is-still-parsed-first'], undefined],
    [['--version'], { name: 'version' }],
    [['check'], { name: 'check', path: undefined, envFile: undefined }],
    [['check', 'conf/', '--env-file', 'x'], { name: 'check', path: 'conf/', envFile: 'x' }],
    [['--', 'check', '-odd-dir'], { name: 'check', path: '-odd-dir', envFile: undefined }],
  ])('reads %j', (argv, command) => {
    if (command === undefined) expect(() => parseServiceArgs(argv)).toThrow(UsageError)
    else expect(parseServiceArgs(argv)).toEqual(command)
  })

  it.each([
    [['--bogus'], "unknown option '--bogus'"],
    [['-x'], "unknown option '-x'"],
    [['--env-file'], "option '--env-file' needs a value"],
    [['--help=1'], "option '--help' takes no value"],
    [['serve'], "unknown command 'serve'"],
    [['check', 'a', 'b'], "unexpected argument 'b'"],
  ])('refuses %j on one line', (argv, message) => {
    expect(() => parseServiceArgs(argv)).toThrow(new UsageError(message))
  })

  it('the usage gives each variable its meaning and its default on this host', () => {
    const usage = serviceUsage({ availableCores: 4 })
    // Descriptions wrap under themselves; the default on this host ends the last line.
    const workers =
      /\n {2}RATELIMIT_WORKERS +Gatehouse addition: processes serving the same ports[^]*?\((\d)\)\n {2}\S/
    expect(workers.exec(usage)?.[1]).toBe('2')
    expect(workers.exec(serviceUsage({ availableCores: 1 }))?.[1]).toBe('1')
    expect(usage).toMatch(
      /\n {2}LOG_LEVEL +trace, debug, info, warn, error, fatal \(panic = fatal\)\s+\(WARN\)\n/,
    )
    // Only a name longer than that stands alone on a line over 100 columns.
    const long = usage.split('\n').filter((line) => line.length > 100 && /\S {2,}\S/.test(line))
    expect(long).toEqual([])
  })
})
