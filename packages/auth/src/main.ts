/**
 * The `gatehouse-auth` executable (`bin/gatehouse-auth.js` imports the compiled file): runs the
 * CLI as soon as it is imported.
 */
import { runCli } from './cli.js'

const code = await runCli(process.argv.slice(2), process.env, {
  out: (line) => {
    console.log(line)
  },
  err: (line) => {
    console.error(line)
  },
  onSignal: (handler) => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const)
      process.on(signal, () => {
        handler(signal)
      })
  },
})
process.exitCode = code
if (code !== 0) process.exit(code)
