/**
 * The command line of `gatehouse-ratelimit-client`: upstream's flags (`src/client_cmd/main.go`),
 * read by Go's `flag` rules with Go's error texts (`go-flag.ts`), and `-version`.
 *
 * @see https://github.com/envoyproxy/ratelimit/blob/main/src/client_cmd/main.go
 * @module
 */
import { UsageError } from '@gatehouse/settings'
import { goFlagUsage, parseGoFlags, type GoFlag } from './go-flag.js'
import type { Descriptor } from '../protocol/types.js'

/** The executable's name, as its usage and messages start. */
export const CLIENT_PROGRAM = 'gatehouse-ratelimit-client'

/** TLS of the connection to the service (`-grpc-use-tls` and the files). */
export interface ClientTlsArgs {
  /** `-grpc-server-ca-file`: a PEM CA added to the system's, or '' for the system's alone. */
  readonly caFile: string
  /** `-grpc-cert-file`: a PEM client certificate (used with the key), or ''. */
  readonly certFile: string
  /** `-grpc-key-file`: a PEM client key (used with the certificate), or ''. */
  readonly keyFile: string
}

/** A parsed command line that sends one request. */
export interface ClientArgs {
  /** `-dial_string`. @default 'localhost:8081' */
  readonly dialString: string
  /** `-domain`. @default '' */
  readonly domain: string
  /** `-descriptors`, once per descriptor. */
  readonly descriptors: readonly Descriptor[]
  /** With `-grpc-use-tls`; plaintext when undefined. */
  readonly tls?: ClientTlsArgs
}

/** What a command line asks for: see {@link parseClientArgs}. */
export type ClientCommand =
  { readonly name: 'help' | 'version' } | { readonly name: 'call'; readonly args: ClientArgs }

/**
 * One `-descriptors` value, as upstream's `descriptorsValue.Set`: `key=value` pairs separated by
 * commas, each split on `=` into exactly two parts.
 *
 * @returns The descriptor, or undefined for a value upstream refuses.
 */
function parseDescriptor(value: string): Descriptor | undefined {
  const entries: { key: string; value: string }[] = []
  for (const pair of value.split(',')) {
    const parts = pair.split('=')
    if (parts.length !== 2) return undefined
    entries.push({ key: parts[0] ?? '', value: parts[1] ?? '' })
  }
  return { entries }
}

/** The flags, upstream's (but `-oltp-protocol`) and `-version`. */
export const CLIENT_FLAGS: readonly GoFlag[] = [
  {
    kind: 'string',
    name: 'dial_string',
    usage: "the service's gRPC address, <host>:<port>",
    default: 'localhost:8081',
  },
  { kind: 'string', name: 'domain', usage: 'the rate limit configuration domain to ask about' },
  {
    kind: 'value',
    name: 'descriptors',
    usage: 'a descriptor, <key>=<value>,<key>=<value>,… (give the flag once per descriptor)',
    check: (value) =>
      parseDescriptor(value) === undefined ? 'invalid descriptor list' : undefined,
  },
  { kind: 'bool', name: 'grpc-use-tls', usage: 'connect to the service over TLS' },
  {
    kind: 'string',
    name: 'grpc-server-ca-file',
    usage: "a CA file (PEM) to trust besides the system's, for the service's certificate",
  },
  {
    kind: 'string',
    name: 'grpc-cert-file',
    usage: 'a client certificate file (PEM), sent with -grpc-key-file',
  },
  { kind: 'string', name: 'grpc-key-file', usage: "the client certificate's key file (PEM)" },
  { kind: 'bool', name: 'version', usage: 'print the version and exit' },
]

/** `-h`: Go's usage of the flags. */
export const CLIENT_USAGE = goFlagUsage(CLIENT_PROGRAM, CLIENT_FLAGS)

/**
 * Parses the command line (without `node` and the script) with Go's `flag` rules.
 *
 * @throws {GoFlagError} For what Go's `flag` refuses, with its text (the executable prints it and
 *   the usage, exit 2).
 * @throws {UsageError} For an argument after the flags, which upstream ignores silently (exit 2).
 */
export function parseClientArgs(argv: readonly string[]): ClientCommand {
  const flags = parseGoFlags(argv, CLIENT_FLAGS)
  if (flags.help) return { name: 'help' }
  const [extra] = flags.args
  if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`)
  if (flags.bools.has('version')) return { name: 'version' }
  const text = (name: string): string => flags.strings.get(name) ?? ''
  const descriptors = (flags.values.get('descriptors') ?? []).flatMap(
    (value) => parseDescriptor(value) ?? [],
  )
  return {
    name: 'call',
    args: {
      dialString: text('dial_string'),
      domain: text('domain'),
      descriptors,
      ...(flags.bools.has('grpc-use-tls')
        ? {
            tls: {
              caFile: text('grpc-server-ca-file'),
              certFile: text('grpc-cert-file'),
              keyFile: text('grpc-key-file'),
            },
          }
        : {}),
    },
  }
}
