import { describe, expect, it } from 'vitest'
import { DEFAULT_SUBJECTS } from './default-templates.js'
import { DEFAULT_TEMPLATES } from './default-templates.js'
import { parseTemplate, TemplateExecError, TemplateParseError } from './go-template.js'

/** The values a mail template sees (upstream's names), with `user_metadata` in `Data`. */
const values = (data: Record<string, unknown> = {}) => ({
  SiteURL: 'https://app.example.com',
  ConfirmationURL: 'https://auth.example.com/verify?token=abc&type=signup',
  Token: '123456',
  TokenHash: 'deadbeef',
  RedirectTo: 'https://app.example.com/welcome',
  Email: 'ann@example.com',
  NewEmail: '',
  Data: data,
})

const text = (source: string, data?: Record<string, unknown>) =>
  parseTemplate(source).render(values(data), { html: false })
const html = (source: string, data?: Record<string, unknown>) =>
  parseTemplate(source).render(values(data), { html: true })

/** @see issue 25, item 19: `{{ if }}…{{ else }}…{{ end }}` rendered both branches. */
describe('Go templates as upstream documents them', () => {
  // The shape of upstream's "customise by language" example, with our own words.
  const byLanguage = `<h2>{{ if eq .Data.locale "fr" }}Confirmez votre adresse{{ else if eq .Data.locale "es" }}Confirme su dirección{{ else }}Confirm your address{{ end }}</h2>
<p><a href="{{ .ConfirmationURL }}">{{ if eq .Data.locale "fr" }}Confirmer{{ else }}Confirm{{ end }}</a></p>`

  it('renders one branch of if / else if / else', () => {
    expect(html(byLanguage, { locale: 'fr' })).toBe(
      '<h2>Confirmez votre adresse</h2>\n<p><a href="https://auth.example.com/verify?token=abc&amp;type=signup">Confirmer</a></p>',
    )
    expect(html(byLanguage, { locale: 'es' })).toContain('<h2>Confirme su dirección</h2>')
    expect(html(byLanguage, {})).toContain('<h2>Confirm your address</h2>')
    expect(html(byLanguage, {})).not.toContain('Confirmez')
  })

  it('builds its own link from TokenHash, as the PKCE/server-side guide does', () => {
    expect(
      html(
        '<a href="{{ .SiteURL }}/auth/confirm?token_hash={{ .TokenHash }}&type=email&next={{ .RedirectTo }}">Log in</a>',
      ),
    ).toBe(
      '<a href="https://app.example.com/auth/confirm?token_hash=deadbeef&type=email&next=https://app.example.com/welcome">Log in</a>',
    )
  })

  it('tests user metadata for truth, with and, or, not, ne', () => {
    const greet = '{{ if .Data.name }}Hi {{ .Data.name }}{{ else }}Hi there{{ end }}'
    expect(text(greet, { name: 'Ann' })).toBe('Hi Ann')
    expect(text(greet, { name: '' })).toBe('Hi there')
    expect(text(greet)).toBe('Hi there')
    const plan =
      '{{ if and .Data.paid (not .Data.trial) }}pro{{ else if or .Data.trial .Data.beta }}try{{ else }}free{{ end }}'
    expect(text(plan, { paid: true })).toBe('pro')
    expect(text(plan, { paid: true, trial: true })).toBe('try')
    expect(text(plan, { beta: 1 })).toBe('try')
    expect(text(plan, { beta: 0 })).toBe('free')
    expect(text('{{ if ne .Data.role "admin" }}user{{ end }}', { role: 'dev' })).toBe('user')
    // Go's truth: empty lists and maps are false.
    expect(text('{{ if .Data.tags }}t{{ else }}f{{ end }}', { tags: [] })).toBe('f')
    expect(text('{{ if .Data.obj }}t{{ else }}f{{ end }}', { obj: {} })).toBe('f')
  })

  it('and / or stop at the deciding argument', () => {
    // The second operand would fail (a comparison of a string with a number).
    expect(
      text('{{ if and .Data.off (lt .Data.name 3) }}y{{ else }}n{{ end }}', {
        off: false,
        name: 'x',
      }),
    ).toBe('n')
    expect(text('{{ or .Data.a "fallback" }}', { a: '' })).toBe('fallback')
    expect(text('{{ and .Data.a .Data.b }}', { a: 'x', b: 'y' })).toBe('y')
  })

  it('compares numbers and strings with eq, lt, le, gt, ge', () => {
    const tier =
      '{{ if ge .Data.age 18 }}adult{{ else if gt .Data.age 12 }}teen{{ else }}child{{ end }}'
    expect([18, 13, 12].map((age) => text(tier, { age }))).toEqual(['adult', 'teen', 'child'])
    expect(
      text('{{ if lt .Data.a .Data.b }}<{{ end }}{{ if le 2 2 }}={{ end }}', {
        a: 'abc',
        b: 'abd',
      }),
    ).toBe('<=')
    expect(text('{{ if eq .Data.locale "de" "fr" "it" }}eu{{ end }}', { locale: 'fr' })).toBe('eu')
    expect(text('{{ eq .Data.missing nil }}')).toBe('true')
  })

  it('ranges over Data (keys sorted, as Go ranges over a map) and over lists, with else, break and continue', () => {
    expect(text('{{ range $k, $v := .Data }}{{ $k }}={{ $v }};{{ end }}', { b: 2, a: 1 })).toBe(
      'a=1;b=2;',
    )
    expect(
      text('{{ range .Data.items }}[{{ . }}]{{ else }}none{{ end }}', { items: ['x', 'y'] }),
    ).toBe('[x][y]')
    expect(text('{{ range .Data.items }}[{{ . }}]{{ else }}none{{ end }}', { items: [] })).toBe(
      'none',
    )
    expect(
      text(
        '{{ range $i, $e := .Data.items }}{{ if eq $i 1 }}{{ continue }}{{ end }}{{ if eq $e "stop" }}{{ break }}{{ end }}{{ $e }}{{ end }}',
        { items: ['a', 'b', 'c', 'stop', 'd'] },
      ),
    ).toBe('ac')
    expect(
      text('{{ range .Data.people }}{{ .name }} of {{ $.Email }};{{ end }}', {
        people: [{ name: 'Bo' }, { name: 'Cy' }],
      }),
    ).toBe('Bo of ann@example.com;Cy of ann@example.com;')
  })

  it('with sets the dot, with else and else with', () => {
    const at =
      '{{ with .Data.company }}at {{ . }}{{ else with .Data.school }}from {{ . }}{{ else }}alone{{ end }}'
    expect(text(at, { company: 'Acme' })).toBe('at Acme')
    expect(text(at, { school: 'MIT' })).toBe('from MIT')
    expect(text(at)).toBe('alone')
  })

  it('runs pipelines and the print functions, escaping their output in bodies once', () => {
    expect(html('{{ .Data.name | printf "<%s>" }}', { name: 'Ann' })).toBe('&lt;Ann&gt;')
    expect(text('{{ printf "%s has %d items (%q)" .Email 3 "x" }}')).toBe(
      'ann@example.com has 3 items ("x")',
    )
    expect(html('{{ .Data.name | html }}', { name: '<b>' })).toBe('&lt;b&gt;')
    expect(html('?q={{ .Data.q | urlquery }}', { q: 'a b&c' })).toBe('?q=a+b%26c')
    expect(text('{{ print 1 2 "a" "b" 3 }}')).toBe('1 2ab3')
    expect(
      text(
        '{{ len .Data.tags }} {{ len "été" }} {{ index .Data.tags 1 }} {{ index .Data.m "k" }}',
        { tags: ['x', 'y'], m: { k: 'v' } },
      ),
    ).toBe('2 5 y v')
    expect(text('{{ (index .Data.people 0).name }}', { people: [{ name: 'Bo' }] })).toBe('Bo')
  })

  it('declares and assigns variables in their scope', () => {
    expect(text('{{ $n := "a" }}{{ if true }}{{ $n = "b" }}{{ $m := 1 }}{{ end }}{{ $n }}')).toBe(
      'b',
    )
    expect(text('{{ $greeting := printf "Hi %s" .Email }}{{ $greeting }}!')).toBe(
      'Hi ann@example.com!',
    )
  })

  it('honours trim markers and drops comments', () => {
    expect(text('a  {{- .Token -}}  b {{/* a note */}}c {{- /* trimmed */ -}} d')).toBe(
      'a123456b cd',
    )
    expect(text('{{- if true }}\n  yes\n{{- end }}')).toBe('\n  yes')
  })

  it('HTML-escapes printed values in bodies, never the template text, and leaves subjects', () => {
    expect(html('<b>{{ .Data.x }}</b>', { x: `<script>"'&` })).toBe(
      '<b>&lt;script&gt;&#34;&#39;&amp;</b>',
    )
    expect(text('{{ .Data.x }}', { x: '<b>' })).toBe('<b>')
    // A value is data, never a template.
    expect(text('{{ .Data.x }}', { x: '{{ .Token }}' })).toBe('{{ .Token }}')
  })

  it('refuses a javascript: or data: URL that starts a URL attribute, as html/template does', () => {
    const link = '<a href="{{ .Data.site }}">site</a><img src={{ .Data.site }}>'
    expect(html(link, { site: 'javascript:alert(1)' })).toBe(
      '<a href="#ZgotmplZ">site</a><img src=#ZgotmplZ>',
    )
    expect(html(link, { site: ' JavaScript:alert(1)' })).toContain('href="#ZgotmplZ"')
    expect(html(link, { site: 'data:text/html,x' })).toContain('href="#ZgotmplZ"')
    for (const site of ['https://ann.example', '/profile?a=1', 'mailto:a@b.c', 'page#x:y']) {
      expect(html(link, { site })).toContain(`href="${site.replace('&', '&amp;')}"`)
    }
    // Not a URL attribute, or not its start: escaped only.
    expect(html('<p title="{{ .Data.site }}">{{ .Data.site }}</p>', { site: 'javascript:x' })).toBe(
      '<p title="javascript:x">javascript:x</p>',
    )
    expect(html('<a href="{{ .SiteURL }}/{{ .Data.site }}">', { site: 'javascript:x' })).toBe(
      '<a href="https://app.example.com/javascript:x">',
    )
    expect(text('<a href="{{ .Data.site }}">', { site: 'javascript:x' })).toBe(
      '<a href="javascript:x">',
    )
  })

  it('prints a missing key as nothing and never reaches inherited properties', () => {
    expect(
      text('[{{ .Unknown }}][{{ .Data.constructor }}][{{ .Data.__proto__ }}][{{ .constructor }}]'),
    ).toBe('[][][][]')
    expect(
      text('{{ .Data.n }} {{ .Data.ok }} {{ .Data.obj }}', { n: 4.5, ok: false, obj: { a: [1] } }),
    ).toBe('4.5 false {"a":[1]}')
  })

  it('parses every built-in template and subject', () => {
    for (const source of [
      ...Object.values(DEFAULT_TEMPLATES),
      ...Object.values(DEFAULT_SUBJECTS),
    ]) {
      expect(() => parseTemplate(source)).not.toThrow()
    }
  })
})

describe('templates that do not parse are refused with the place and the reason', () => {
  it.each([
    [
      '{{ if .Data.a }}never closed',
      'line 1, column 1: unexpected end of template: {{ if }} without {{ end }}',
    ],
    ['ok\n  {{ end }}', 'line 2, column 3: unexpected {{ end }}'],
    [
      '{{ if .X }}a{{ else }}b{{ else }}c{{ end }}',
      'line 1, column 24: {{ else }} after {{ else }}',
    ],
    ['{{ .Token', 'line 1, column 1: unclosed action'],
    ['{{ shout .Email }}', 'line 1, column 1: function "shout" not defined'],
    [
      '{{ if eq .Email }}x{{ end }}',
      'line 1, column 1: wrong number of args for eq: want at least 2 got 1',
    ],
    ['{{ not 1 2 }}', 'line 1, column 1: wrong number of args for not: want 1 got 2'],
    [
      '{{ define "x" }}{{ end }}',
      'line 1, column 1: {{ define }} is not supported in mail templates',
    ],
    ['{{ template "x" }}', 'line 1, column 1: {{ template }} is not supported in mail templates'],
    ['\n{{ $nope }}', 'line 2, column 1: undefined variable "$nope"'],
    ['{{ if true }}{{ $x := 1 }}{{ end }}{{ $x }}', 'line 1, column 36: undefined variable "$x"'],
    ['{{ break }}', 'line 1, column 1: {{ break }} outside {{ range }}'],
    ['{{ "unterminated }}', 'line 1, column 1: unterminated quoted string'],
    ['{{ .Email .Token }}', "line 1, column 1: can't give an argument to a non-function"],
    ['{{ (eq 1 1 }}', 'line 1, column 1: unclosed left paren'],
    ['{{/* open', 'line 1, column 1: unclosed action'],
  ])('%j', (source, message) => {
    const thrown = (() => {
      try {
        parseTemplate(source)
        return undefined
      } catch (error) {
        return error
      }
    })()
    expect(thrown).toBeInstanceOf(TemplateParseError)
    expect((thrown as Error).message).toBe(message)
  })
})

describe('actions that fail while rendering', () => {
  it.each([
    ['{{ lt .Data.name 3 }}', 'incompatible types for comparison'],
    ['{{ eq .Data.obj .Data.obj }}', 'non-comparable type'],
    ['{{ index .Data.tags 5 }}', 'index out of range: 5'],
    ['{{ .Email.Domain }}', "can't evaluate field Domain in type string"],
    ['{{ range .Email }}{{ end }}', "range can't iterate over ann@example.com"],
    [
      '{{ range .Data.tags }}{{ range .Data.tags }}{{ end }}{{ end }}',
      "can't evaluate field Data in type string",
    ],
  ])('%s: %s', (source, message) => {
    expect(() => text(source, { name: 'Ann', obj: {}, tags: ['a'] })).toThrow(
      new TemplateExecError(message),
    )
  })

  it('stops an output past 1 MiB', () => {
    const many = Array.from({ length: 1100 }, (_, i) => i)
    expect(() =>
      text('{{ range .Data.n }}{{ range $.Data.n }}xx{{ end }}{{ end }}', { n: many }),
    ).toThrow('output larger than 1 MiB')
  })
})
