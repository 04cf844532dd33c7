/**
 * Checks, before anything starts, that every port of the stack is free, so that a busy one is
 * reported with the variable that moves it instead of as a server's crash.
 *
 * @module
 */
import { createServer } from 'node:net'
import type { PortUse } from './plan.js'

/** Why a port cannot be listened on: `EADDRINUSE`, `EACCES`, … or `undefined` when it can. */
function tryListen(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', (error: NodeJS.ErrnoException) => {
      resolve(error.code ?? error.message)
    })
    server.listen({ host, port, exclusive: true }, () => {
      server.close(() => {
        resolve(undefined)
      })
    })
  })
}

/**
 * The problems with the stack's ports, one line each naming the variable to change; empty when
 * every port is free.
 */
export async function portProblems(uses: readonly PortUse[]): Promise<string[]> {
  const problems: string[] = []
  for (const use of uses) {
    const code = await tryListen(use.host === '' ? '0.0.0.0' : use.host, use.port)
    if (code === undefined) continue
    const where = `port ${String(use.port)} on ${use.host || 'every address'} (${use.what})`
    problems.push(
      code === 'EADDRINUSE'
        ? `${where} is in use: stop what listens there, or set ${use.variable} to a free port`
        : `${where} cannot be listened on (${code}): set ${use.variable} to another port`,
    )
  }
  return problems
}
