import { describe, expect, it } from 'vitest'
import { markdownTable, markedSections, replaceMarkedRegion } from './markdown.js'

const README = [
  '# Server',
  '',
  '<!-- settings:servers:start -->',
  '',
  '| old |',
  '',
  '<!-- settings:servers:end -->',
  '',
  'Text after.',
  '<!-- settings:redis:start -->',
  '<!-- settings:redis:end -->',
  '',
].join('\n')

describe('markdownTable', () => {
  it('aligns the columns as Prettier does and escapes pipes and line breaks', () => {
    expect(
      markdownTable([
        { names: ['A'], default: '`1`', meaning: 'x | y\nz' },
        { names: ['LONGER_NAME', 'ALIAS'], default: '(empty)', meaning: '' },
      ]),
    ).toBe(
      [
        '| Variable                | Default | Meaning  |',
        '| ----------------------- | ------- | -------- |',
        '| `A`                     | `1`     | x \\| y z |',
        '| `LONGER_NAME` / `ALIAS` | (empty) |          |',
      ].join('\n'),
    )
  })
})

describe('replaceMarkedRegion', () => {
  it('replaces only the region between the markers, keeping the rest', () => {
    const out = replaceMarkedRegion(README, 'servers', '| new |\n')
    expect(out).toBe(README.replace('| old |', '| new |'))
    expect(replaceMarkedRegion(out, 'servers', '| new |')).toBe(out)
    expect(replaceMarkedRegion(README, 'redis', 'T')).toContain(
      '<!-- settings:redis:start -->\n\nT\n\n<!-- settings:redis:end -->',
    )
  })

  it('refuses a missing, doubled or reversed region', () => {
    const message =
      'the Markdown text needs one region <!-- settings:x:start --> … <!-- settings:x:end -->, in this order'
    expect(() => replaceMarkedRegion(README, 'x', '')).toThrow(message)
    const doubled = `${README}<!-- settings:x:start --><!-- settings:x:end --><!-- settings:x:start -->`
    expect(() => replaceMarkedRegion(doubled, 'x', '')).toThrow(message)
    expect(() =>
      replaceMarkedRegion('<!-- settings:x:end --><!-- settings:x:start -->', 'x', ''),
    ).toThrow(message)
  })

  it('lists the sections of a text', () => {
    expect(markedSections(README)).toEqual(['servers', 'redis'])
  })
})
