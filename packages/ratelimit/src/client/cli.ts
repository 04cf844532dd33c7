/**
 * `gatehouse-ratelimit-client`: sends one `ShouldRateLimit` call and prints the response, with
 * upstream's flags (`src/client_cmd/main.go`, read as Go's `flag` package reads them, with its
 * error texts): `-dial_string` (default `localhost:8081`), `-domain`, `-descriptors` (once per
 * descriptor, `name=foo,age=14`), `-grpc-use-tls` with `-grpc-server-ca-file`, `-grpc-cert-file`
 * and `-grpc-key-file`; and `-version`. `-h` prints the usage (standard output, exit 0); a flag
 * Go refuses prints Go's text and the usage (standard error, exit 2); an argument after the flags
 * is refused on one line (exit 2); a TLS file that cannot be read, exit 2; a failed call, exit 1.
 * Runs when imported.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { rootCertificates } from 'node:tls'
import * as grpc from '@grpc/grpc-js'
import { USAGE_EXIT_STATUS, UsageError, usageErrorLine } from '@gatehouse/settings'
import {
  CLIENT_PROGRAM,
  CLIENT_USAGE,
  parseClientArgs,
  type ClientArgs,
  type ClientCommand,
  type ClientTlsArgs,
} from './args.js'
import { packageVersion } from '../version.js'
import { callShouldRateLimit } from './client.js'
import { GoFlagError } from './go-flag.js'
import { formatJsonRateLimitResponse } from '../protocol/json.js'

/**
 * The TLS credentials of `-grpc-use-tls` (upstream's `TlsConfigFromFiles` for a server CA): the
 * system's CAs plus `-grpc-server-ca-file`, and the client certificate when both its files are
 * given.
 *
 * @throws {UsageError} Naming the flag whose file cannot be read.
 */
function tlsCredentials(tls: ClientTlsArgs): grpc.ChannelCredentials {
  const read = (flag: string, path: string): Buffer => {
    try {
      return readFileSync(path)
    } catch (error) {
      throw new UsageError(`cannot read -${flag} ${path}: ${(error as Error).message}`)
    }
  }
  const ca =
    tls.caFile === ''
      ? null
      : Buffer.concat([
          Buffer.from(`${rootCertificates.join('\n')}\n`),
          read('grpc-server-ca-file', tls.caFile),
        ])
  const pair = tls.certFile !== '' && tls.keyFile !== ''
  return grpc.credentials.createSsl(
    ca,
    pair ? read('grpc-key-file', tls.keyFile) : null,
    pair ? read('grpc-cert-file', tls.certFile) : null,
  )
}

async function call(args: ClientArgs): Promise<number> {
  let credentials: grpc.ChannelCredentials | undefined
  try {
    credentials = args.tls === undefined ? undefined : tlsCredentials(args.tls)
  } catch (error) {
    if (!(error instanceof UsageError)) throw error
    process.stderr.write(`${CLIENT_PROGRAM}: ${error.message}\n`)
    return USAGE_EXIT_STATUS
  }
  const describe = args.descriptors.map((d) =>
    d.entries.map((e) => `${e.key}=${e.value}`).join(','),
  )
  process.stdout.write(`dial string: ${args.dialString}\n`)
  process.stdout.write(`domain: ${args.domain}\n`)
  process.stdout.write(`descriptors: [${describe.join(' ')}]\n`)
  try {
    const response = await callShouldRateLimit(
      args.dialString,
      { domain: args.domain, descriptors: args.descriptors, hitsAddend: 0 },
      { credentials },
    )
    process.stdout.write(`response: ${formatJsonRateLimitResponse(response)}\n`)
    return 0
  } catch (error) {
    process.stderr.write(`request error: ${(error as Error).message}\n`)
    return 1
  }
}

async function run(argv: readonly string[]): Promise<number> {
  let command: ClientCommand
  try {
    command = parseClientArgs(argv)
  } catch (error) {
    if (error instanceof GoFlagError) {
      // Go's flag package: its error, then the usage.
      process.stderr.write(`${error.message}\n${CLIENT_USAGE}`)
      return USAGE_EXIT_STATUS
    }
    if (!(error instanceof UsageError)) throw error
    process.stderr.write(`${usageErrorLine(CLIENT_PROGRAM, error, '-h')}\n`)
    return USAGE_EXIT_STATUS
  }
  switch (command.name) {
    case 'help':
      process.stdout.write(CLIENT_USAGE)
      return 0
    case 'version':
      process.stdout.write(`${CLIENT_PROGRAM} ${packageVersion()}\n`)
      return 0
    case 'call':
      return call(command.args)
  }
}

process.exitCode = await run(process.argv.slice(2))
