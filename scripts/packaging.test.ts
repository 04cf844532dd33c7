/**
 * The published packages as npm would publish them: each public workspace is packed once
 * (`npm pack --json`, what `npm publish` uploads), its file list checked (built code and types
 * present, no tests, every source map and `sourceMappingURL` pointing at a packed file, README,
 * LICENSE and CHANGELOG included), then the tarball is linted with `publint --strict` and
 * `@arethetypeswrong/cli` (profile `esm-only`: Node 20.19 `require()`s ESM). All offline.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, posix } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'
import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The workspaces that are published: every `packages/*` one that is not private. */
const PUBLISHED = [
  'packages/oauth2',
  'packages/auth',
  'packages/ratelimit',
  'packages/settings',
  'packages/telemetry',
]

interface PackedFile {
  readonly path: string
  readonly size: number
}
interface Packed {
  readonly name: string
  readonly filename: string
  readonly files: readonly PackedFile[]
}
interface Manifest {
  readonly name: string
  readonly private?: boolean
  readonly main?: string
  readonly types?: string
  readonly bin?: Readonly<Record<string, string>>
  readonly exports?: Readonly<Record<string, unknown>>
  readonly publishConfig?: { readonly access?: string }
  readonly dependencies?: Readonly<Record<string, string>>
}

/** What `attw --format json` reports: problems by kind. */
interface AttwReport {
  readonly problems?: Record<
    string,
    readonly { kind: string; entrypoint?: string; resolutionKind?: string }[]
  >
}

/** The files of a `.tgz` (ustar), by path without the `package/` prefix. */
function untar(gzipped: Buffer): Map<string, Buffer> {
  const tar = gunzipSync(gzipped)
  const files = new Map<string, Buffer>()
  let offset = 0
  while (offset + 512 <= tar.length && tar[offset] !== 0) {
    const field = (start: number, length: number) =>
      tar
        .subarray(offset + start, offset + start + length)
        .toString('utf8')
        .replace(/\0.*$/s, '')
    const name = field(0, 100)
    const prefix = field(345, 155)
    const size = Number.parseInt(field(124, 12).trim() || '0', 8)
    const path = (prefix === '' ? name : `${prefix}/${name}`).replace(/^package\//, '')
    if (field(156, 1) === '0' || field(156, 1) === '') {
      files.set(path, tar.subarray(offset + 512, offset + 512 + size))
    }
    offset += 512 + Math.ceil(size / 512) * 512
  }
  return files
}

/** Every path a package.json points to (main, types, bin, each export target). */
function entryPoints(manifest: Manifest): string[] {
  const targets: string[] = []
  const walk = (value: unknown) => {
    if (typeof value === 'string') targets.push(value)
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk)
  }
  walk(manifest.exports)
  walk(manifest.bin)
  if (manifest.main !== undefined) targets.push(manifest.main)
  if (manifest.types !== undefined) targets.push(manifest.types)
  return [...new Set(targets.map((target) => posix.normalize(target)))]
}

let destination = ''
const packed = new Map<string, { manifest: Manifest; pack: Packed; files: Map<string, Buffer> }>()

beforeAll(async () => {
  destination = await mkdtemp(join(tmpdir(), 'gatehouse-pack-'))
  const { stdout } = await run(
    'npm',
    [
      'pack',
      '--json',
      '--ignore-scripts',
      '--pack-destination',
      destination,
      ...PUBLISHED.flatMap((workspace) => ['-w', workspace]),
    ],
    { cwd: root, maxBuffer: 64 * 1024 * 1024 },
  )
  const packs = JSON.parse(stdout) as Packed[]
  for (const [index, workspace] of PUBLISHED.entries()) {
    const pack = packs[index]
    if (pack === undefined) throw new Error(`npm pack gave nothing for ${workspace}`)
    const manifest = JSON.parse(
      await readFile(join(root, workspace, 'package.json'), 'utf8'),
    ) as Manifest
    const files = untar(await readFile(join(destination, pack.filename)))
    packed.set(workspace, { manifest, pack, files })
  }
}, 120_000)

afterAll(async () => {
  if (destination !== '') await rm(destination, { recursive: true, force: true })
})

function get(workspace: string) {
  const entry = packed.get(workspace)
  if (entry === undefined) throw new Error(`${workspace} was not packed`)
  return entry
}

describe('published packages', () => {
  it('are every public package of packages/, each public on the registry', async () => {
    const { stdout } = await run('npm', ['query', '.workspace', '--json'], { cwd: root })
    const workspaces = JSON.parse(stdout) as (Manifest & { location: string })[]
    const publicOnes = workspaces
      .filter((workspace) => workspace.private !== true)
      .map((workspace) => workspace.location)
    expect(publicOnes.sort()).toEqual([...PUBLISHED].sort())
    for (const workspace of PUBLISHED) {
      expect(get(workspace).manifest.publishConfig?.access, workspace).toBe('public')
    }
  })

  it.each(PUBLISHED)(
    '%s ships its built code, types, README, LICENSE and CHANGELOG',
    (workspace) => {
      const { manifest, pack, files } = get(workspace)
      const paths = pack.files.map((file) => file.path)
      expect([...files.keys()].sort()).toEqual([...paths].sort())
      for (const required of ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md']) {
        expect(paths, `${workspace}: ${required}`).toContain(required)
      }
      for (const target of entryPoints(manifest)) {
        expect(paths, `${workspace}: entry point ${target}`).toContain(target)
      }
      expect(paths).toContain('dist/index.js')
      expect(paths).toContain('dist/index.d.ts')
      // Every module of dist has its declaration file.
      for (const path of paths.filter((p) => p.startsWith('dist/') && p.endsWith('.js'))) {
        expect(paths, `${workspace}: types of ${path}`).toContain(path.replace(/\.js$/, '.d.ts'))
      }
      // Each bin launcher imports a packed module.
      for (const bin of Object.values(manifest.bin ?? {})) {
        const launcher = files.get(posix.normalize(bin))?.toString('utf8') ?? ''
        expect(launcher.startsWith('#!/usr/bin/env node'), `${workspace}: ${bin}`).toBe(true)
        for (const [, target = ''] of launcher.matchAll(/import '([^']+)'/g)) {
          expect(paths, `${workspace}: ${bin} imports ${target}`).toContain(
            posix.join(posix.dirname(posix.normalize(bin)), target),
          )
        }
      }
    },
  )

  it.each(PUBLISHED)('%s ships no tests, fixtures, build info or local files', (workspace) => {
    const paths = get(workspace).pack.files.map((file) => file.path)
    const unwanted = paths.filter(
      (path) =>
        /(^|\/)(test|tests|__tests__|fixtures)\//.test(path) ||
        /\.(test|spec)\.[cm]?[jt]s(\.map)?$/.test(path) ||
        /\.test\.d\.ts(\.map)?$/.test(path) ||
        /(^|\/)(\.tsbuildinfo|tsconfig[^/]*\.json|\.env[^/]*|node_modules\/.*)$/.test(path),
    )
    expect(unwanted).toEqual([])
  })

  it.each(PUBLISHED)('%s has no source map pointing at a file it does not ship', (workspace) => {
    const { files } = get(workspace)
    const dangling: string[] = []
    for (const [path, content] of files) {
      if (path.endsWith('.map')) {
        const map = JSON.parse(content.toString('utf8')) as {
          sources: string[]
          sourceRoot?: string
        }
        for (const source of map.sources) {
          const resolved = posix.normalize(
            posix.join(posix.dirname(path), map.sourceRoot ?? '', source),
          )
          if (!files.has(resolved)) dangling.push(`${path} -> ${source}`)
        }
      } else if (/\.(js|d\.ts)$/.test(path)) {
        const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(content.toString('utf8'))?.[1]
        if (url !== undefined && !files.has(posix.join(posix.dirname(path), url))) {
          dangling.push(`${path} -> ${url}`)
        }
      }
    }
    expect(dangling).toEqual([])
  })

  it.each(PUBLISHED)(
    '%s depends on the published versions of its sibling packages',
    (workspace) => {
      const { manifest } = get(workspace)
      for (const [name, range] of Object.entries(manifest.dependencies ?? {})) {
        if (!name.startsWith('@gatehouse/')) continue
        const sibling = [...packed.values()].find((entry) => entry.manifest.name === name)
        expect(sibling, `${workspace}: ${name} is not published`).toBeDefined()
        expect(range, `${workspace}: ${name}`).toBe(
          (
            JSON.parse(sibling?.files.get('package.json')?.toString('utf8') ?? '{}') as {
              version?: string
            }
          ).version,
        )
      }
    },
  )

  it.each(PUBLISHED)('%s passes publint --strict', async (workspace) => {
    const { files, manifest } = get(workspace)
    // The packed files, as publint reads them from a tarball: under `package/`.
    const { messages } = await publint({
      pkgDir: 'package',
      strict: true,
      pack: { files: [...files].map(([path, data]) => ({ name: `package/${path}`, data })) },
    })
    expect(messages.map((message) => formatMessage(message, manifest, { color: false }))).toEqual(
      [],
    )
  })

  it('passes @arethetypeswrong/cli (esm-only: Node 20.19 require()s ESM)', async () => {
    const attw = join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js')
    // --no-definitely-typed: never ask the registry for @types packages (offline).
    const args = ['--profile', 'esm-only', '--format', 'json', '--no-definitely-typed']
    const reports = await Promise.all(
      PUBLISHED.map(async (workspace) => {
        const tarball = join(destination, get(workspace).pack.filename)
        const stdout = await run(process.execPath, [attw, tarball, ...args], {
          cwd: root,
          maxBuffer: 64 * 1024 * 1024,
        }).then(
          (result) => result.stdout,
          // A problem makes attw exit 1 with the same JSON report.
          (error: unknown) => (error as { stdout?: string }).stdout ?? '',
        )
        return { workspace, report: JSON.parse(stdout) as AttwReport }
      }),
    )
    const problems = reports.flatMap(({ workspace, report }) =>
      Object.values(report.problems ?? {})
        .flat()
        // esm-only: the CommonJS resolution modes are not checked (as `attw --profile esm-only`).
        .filter((p) => p.resolutionKind !== 'node10' && p.resolutionKind !== 'node16-cjs')
        .map((p) => `${workspace}: ${p.kind} ${p.entrypoint ?? ''} ${p.resolutionKind ?? ''}`),
    )
    expect(problems).toEqual([])
  }, 60_000)
})
