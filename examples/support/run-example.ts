/**
 * Runs an example file as its README says (`node --conditions=dev-source --import tsx <file>`
 * from the repository root), with the environment it is given, answering its prompts.
 */
import { spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/** What an example printed, and how it ended. */
export interface ExampleRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Options of {@link runExample}. */
export interface RunExampleOptions {
  /** Variables added to this process's environment. */
  readonly env?: Readonly<Record<string, string>>
  /**
   * Called with each line the example prints (a prompt too, before its newline); a string is
   * written back to its standard input as a line.
   */
  readonly answer?: (line: string) => Promise<string | undefined> | string | undefined
  /** Killed after this long. @default 60000 */
  readonly timeoutMs?: number
}

/** Runs `file` (relative to the repository root) to its end. */
export async function runExample(
  file: string,
  options: RunExampleOptions = {},
): Promise<ExampleRun> {
  const child = spawn(
    process.execPath,
    ['--conditions=dev-source', '--import', 'tsx', join(ROOT, file)],
    { cwd: ROOT, env: { ...process.env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let stderr = ''
  let pending = ''
  let answering = Promise.resolve()
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
    pending += chunk
    // Whole lines, and a prompt (text without a newline yet, ending in ": ").
    const parts = pending.split('\n')
    pending = parts.pop() ?? ''
    if (pending.endsWith(': ')) {
      parts.push(pending)
      pending = ''
    }
    for (const line of parts) {
      answering = answering.then(async () => {
        const reply = await options.answer?.(line)
        if (reply !== undefined) child.stdin.write(`${reply}\n`)
      })
    }
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
  clearTimeout(timer)
  await answering
  return { code, stdout, stderr }
}
