import { describe, expect, it } from 'vitest'
import { parseEnvFile } from './env-file.js'

describe('parseEnvFile', () => {
  it('reads assignments, comments, quotes and export', () => {
    const text = [
      '# comment',
      'A=1',
      'export B = two # trailing',
      "C='literal # not a comment'",
      'D="line\\nbreak"',
      'not a line',
      'A=3',
    ].join('\n')
    expect(parseEnvFile(text)).toEqual({
      A: '3',
      B: 'two',
      C: 'literal # not a comment',
      D: 'line\nbreak',
    })
  })
})
