import { createServer, Packet } from 'dns2'

/** One SRV target. */
export interface SrvTarget {
  /** Target host name (or an IP address, which resolvers pass through as a name). */
  readonly target: string
  readonly port: number
  /** @default 10 */
  readonly priority?: number
  /** @default 10 */
  readonly weight?: number
}

/** A DNS server of a test's own, answering the SRV records the test sets. */
export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for `Resolver.setServers([address])`. */
  readonly address: string
  /** Answers `name` (no trailing dot) with `targets`; `undefined` removes it (NXDOMAIN). */
  setSrv(name: string, targets: readonly SrvTarget[] | undefined): void
  /** SRV questions asked so far, by name (answered or not). */
  queries(name: string): number
  /** Stops listening. */
  close(): Promise<void>
}

const NXDOMAIN = 3

/**
 * Starts a DNS server (dns2, UDP) on a random loopback port that answers SRV questions from a
 * table the test changes with {@link TestDnsServer.setSrv}; any other name is NXDOMAIN. Point a
 * `node:dns` `Resolver` at it with `setServers([server.address])`.
 */
export async function startDnsServer(): Promise<TestDnsServer> {
  const records = new Map<string, readonly SrvTarget[]>()
  const asked = new Map<string, number>()
  const server = createServer({
    udp: true,
    handle(request, send) {
      const response = Packet.createResponseFromRequest(request)
      const [question] = request.questions
      const name = question?.name.toLowerCase().replace(/\.$/, '') ?? ''
      const targets = question?.type === Packet.TYPE.SRV ? records.get(name) : undefined
      if (question?.type === Packet.TYPE.SRV) asked.set(name, (asked.get(name) ?? 0) + 1)
      if (question === undefined || targets === undefined) response.header.rcode = NXDOMAIN
      else {
        for (const t of targets) {
          response.answers.push(
            Packet.createResourceFromQuestion(question, {
              type: Packet.TYPE.SRV,
              class: Packet.CLASS.IN,
              ttl: 1,
              priority: t.priority ?? 10,
              weight: t.weight ?? 10,
              port: t.port,
              target: t.target,
            }),
          )
        }
      }
      void send(response)
    },
  })
  const addresses = await server.listen({ udp: { port: 0, address: '127.0.0.1' } })
  const port = addresses.udp?.port
  if (port === undefined) throw new Error('the DNS server did not listen on UDP')
  return {
    address: `127.0.0.1:${String(port)}`,
    setSrv(name, targets) {
      if (targets === undefined) records.delete(name.toLowerCase())
      else records.set(name.toLowerCase(), targets)
    },
    queries: (name) => asked.get(name.toLowerCase()) ?? 0,
    close: () => server.close(),
  }
}
