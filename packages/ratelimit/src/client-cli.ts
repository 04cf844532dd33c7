/**
 * `gatehouse-ratelimit-client`: sends one `ShouldRateLimit` call and prints the response, with
 * upstream's flags (`cmd/client`): `-dial_string` (default `localhost:8081`), `-domain`,
 * `-descriptors` (repeatable, `name=foo,age=14`). Flags take `-flag value` or `-flag=value`
 * (one or two dashes). Exit 0 on a response, 1 on a call error, 2 on bad usage. Runs when
 * imported.
 *
 * @module
 */
import { callShouldRateLimit, parseClientArgs, type ClientArgs } from './client.js'
import { formatJsonRateLimitResponse } from './protocol/json.js'

const USAGE = `Usage of gatehouse-ratelimit-client:
  -descriptors value
    \tdescriptor list to query in <key>=<value>,<key>=<value>,... form (repeatable)
  -dial_string string
    \turl of ratelimit server in <host>:<port> form (default "localhost:8081")
  -domain string
    \tdomain to use
`

async function run(argv: readonly string[]): Promise<number> {
  let args: ClientArgs
  try {
    args = parseClientArgs(argv)
  } catch (error) {
    const message = (error as Error).message
    process.stderr.write(message === 'help requested' ? USAGE : `${message}\n${USAGE}`)
    return 2
  }
  const describe = args.descriptors.map((d) =>
    d.entries.map((e) => `${e.key}=${e.value}`).join(','),
  )
  process.stdout.write(`dial string: ${args.dialString}\n`)
  process.stdout.write(`domain: ${args.domain}\n`)
  process.stdout.write(`descriptors: [${describe.join(' ')}]\n`)
  try {
    const response = await callShouldRateLimit(args.dialString, {
      domain: args.domain,
      descriptors: args.descriptors,
      hitsAddend: 0,
    })
    process.stdout.write(`response: ${formatJsonRateLimitResponse(response)}\n`)
    return 0
  } catch (error) {
    process.stderr.write(`request error: ${(error as Error).message}\n`)
    return 1
  }
}

process.exitCode = await run(process.argv.slice(2))
