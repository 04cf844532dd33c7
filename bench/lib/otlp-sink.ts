/** A local OTLP/HTTP sink for the benchmarks: accepts every export, as a nearby collector. */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A running sink. */
export interface OtlpSink {
  /** The base URL for `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly url: string
  /** How many exports arrived (traces and metrics). */
  exports(): number
  close(): void
}

/** Starts a sink on a random loopback port that answers every POST with an empty 200. */
export async function startOtlpSink(): Promise<OtlpSink> {
  let exports = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      exports++
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${String(port)}`,
    exports: () => exports,
    close: () => server.close(),
  }
}
