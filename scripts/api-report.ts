/**
 * The API reports: for each entry point of each published package (`exports` in its
 * `package.json`), `packages/<name>/api/<entry>.api.d.ts` holds the declarations it exports, as
 * their built `.d.ts` declares them (without comments), then the package's own declarations those
 * refer to without exporting them. `npm run api-report` rewrites the reports (after `tsc -b`);
 * `scripts/api-report.test.ts` fails while one differs from the build, so the public surface
 * changes only on purpose, with its report in the same commit.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs'
import { dirname, join, relative, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import * as prettier from 'prettier'
import ts from 'typescript'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** The published packages (as `scripts/packaging.test.ts` packs them). */
export const API_PACKAGES: readonly string[] = [
  'packages/oauth2',
  'packages/auth',
  'packages/ratelimit',
  'packages/settings',
  'packages/telemetry',
]

/** One entry point's report: where it goes and what it holds. */
export interface ApiReport {
  /** The report file, relative to the repository. */
  readonly path: string
  /** Its content. */
  readonly text: string
}

interface EntryPoint {
  /** The subpath as published: `@gatehouse/ratelimit/client`. */
  readonly specifier: string
  /** The report's file name: `client.api.d.ts`. */
  readonly file: string
  /** The built declarations of the entry point (absolute). */
  readonly types: string
}

/** The entry points of a package: every `exports` subpath with `types` (not `./package.json`). */
function entryPoints(dir: string): EntryPoint[] {
  const manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as {
    name: string
    exports: Record<string, { types?: string } | string>
  }
  return Object.entries(manifest.exports).flatMap(([subpath, target]) => {
    if (typeof target === 'string' || target.types === undefined) return []
    const name = subpath === '.' ? 'index' : subpath.slice(2).replaceAll('/', '-')
    return [
      {
        specifier: subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
        file: `${name}.api.d.ts`,
        types: join(root, dir, target.types),
      },
    ]
  })
}

/** The statement that declares `declaration` at the top of its file, if it is one. */
function topLevelStatement(declaration: ts.Declaration): ts.Statement | undefined {
  // A module's own symbol is declared by its file, which has no parent.
  if (ts.isSourceFile(declaration)) return undefined
  if (ts.isVariableDeclaration(declaration)) {
    const statement = declaration.parent.parent
    return ts.isVariableStatement(statement) && ts.isSourceFile(statement.parent)
      ? statement
      : undefined
  }
  return ts.isSourceFile(declaration.parent) && ts.isStatement(declaration)
    ? declaration
    : undefined
}

/** The name of the package a declaration file belongs to (a workspace's or a dependency's). */
function packageOf(file: string): string {
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1]
  if (dependency !== undefined) return dependency
  const workspace = /^((?:packages|tools)\/[^/]+)\//.exec(
    relative(root, file).replaceAll(sep, '/'),
  )?.[1]
  if (workspace === undefined) return relative(root, file)
  return (
    JSON.parse(readFileSync(join(root, workspace, 'package.json'), 'utf8')) as { name: string }
  ).name
}

/** The reports of one package's entry points, from its built declarations. */
async function packageReports(dir: string): Promise<ApiReport[]> {
  const entries = entryPoints(dir)
  const dist = join(root, dir, 'dist') + sep
  const program = ts.createProgram(
    entries.map((entry) => entry.types),
    {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2023,
      types: ['node'],
      noEmit: true,
      strict: true,
    },
  )
  const checker = program.getTypeChecker()
  const printer = ts.createPrinter({ removeComments: true })
  const options = await prettier.resolveConfig(join(root, dir, 'api', 'index.api.d.ts'))
  const reports: ApiReport[] = []
  for (const entry of entries) {
    const source = program.getSourceFile(entry.types)
    const moduleSymbol = source && checker.getSymbolAtLocation(source)
    if (moduleSymbol === undefined) throw new Error(`${entry.types}: not built (run tsc -b)`)
    const resolve = (symbol: ts.Symbol): ts.Symbol =>
      symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol
    const own = (statement: ts.Statement): boolean =>
      statement.getSourceFile().fileName.startsWith(dist)
    const printed = new Set<ts.Statement>()
    const print = (statements: readonly ts.Statement[]): string =>
      statements
        .map((statement) =>
          printer.printNode(ts.EmitHint.Unspecified, statement, statement.getSourceFile()),
        )
        .join('\n')
    const statementsOf = (symbol: ts.Symbol): ts.Statement[] =>
      (symbol.declarations ?? []).flatMap((declaration) => {
        const statement = topLevelStatement(declaration)
        return statement === undefined ? [] : [statement]
      })

    const exported: string[] = []
    const queue: ts.Statement[] = []
    const symbols = checker
      .getExportsOfModule(moduleSymbol)
      .sort((a, b) => a.name.localeCompare(b.name, 'en'))
    for (const symbol of symbols) {
      const target = resolve(symbol)
      const statements = statementsOf(target)
      const foreign = statements.length > 0 && !statements.some(own)
      const aliasNote = target.name === symbol.name ? '' : ` (declared as ${target.name})`
      if (foreign) {
        const from = statements[0]?.getSourceFile().fileName ?? ''
        const pkg = packageOf(from)
        exported.push(`// ${symbol.name}${aliasNote}: re-exported from ${pkg}`)
        continue
      }
      exported.push(`// ${symbol.name}${aliasNote}`, print(statements))
      for (const statement of statements) printed.add(statement)
      queue.push(...statements)
    }

    // The package's own declarations the exported ones name without exporting them.
    const referenced: ts.Statement[] = []
    while (queue.length > 0) {
      const statement = queue.shift() as ts.Statement
      const visit = (node: ts.Node): void => {
        if (ts.isIdentifier(node)) {
          const symbol = checker.getSymbolAtLocation(node)
          if (symbol !== undefined) {
            for (const found of statementsOf(resolve(symbol))) {
              if (own(found) && !printed.has(found)) {
                printed.add(found)
                referenced.push(found)
                queue.push(found)
              }
            }
          }
        }
        ts.forEachChild(node, visit)
      }
      ts.forEachChild(statement, visit)
    }
    const place = (statement: ts.Statement): string =>
      relative(dist, statement.getSourceFile().fileName).replaceAll(sep, '/')
    referenced.sort((a, b) => place(a).localeCompare(place(b), 'en') || a.getStart() - b.getStart())
    const text = [
      `// The public surface of ${entry.specifier}: generated by \`npm run api-report\`, do not edit.`,
      '',
      ...exported,
      '',
      '// Declarations of the package the exports refer to without exporting them.',
      '',
      ...referenced.map((statement) => `// (${place(statement)})\n${print([statement])}`),
    ].join('\n')
    const path = join(dir, 'api', entry.file)
    reports.push({
      path,
      text: await prettier.format(sortLiteralUnions(text), {
        ...options,
        filepath: join(root, path),
      }),
    })
  }
  return reports
}

/**
 * Unions of string literals with their members sorted: TypeScript prints a union in the order it
 * created its members, which differs between a clean and an incremental build, so the report
 * would change without the surface changing.
 */
export function sortLiteralUnions(text: string): string {
  return text.replaceAll(/(?:"[^"\n]*"|'[^'\n]*')(?:\s*\|\s*(?:"[^"\n]*"|'[^'\n]*'))+/g, (union) =>
    union
      .split('|')
      .map((member) => member.trim())
      .sort()
      .join(' | '),
  )
}

/** Every report, from the built declarations (`tsc -b` first). */
export async function apiReports(): Promise<ApiReport[]> {
  const reports: ApiReport[] = []
  for (const dir of API_PACKAGES) reports.push(...(await packageReports(dir)))
  return reports
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const report of await apiReports()) {
    mkdirSync(dirname(join(root, report.path)), { recursive: true })
    writeFileSync(join(root, report.path), report.text)
    process.stdout.write(`${report.path}\n`)
  }
}
