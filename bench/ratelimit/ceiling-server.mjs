/**
 * The ceiling of `run.ts --ceiling`: a server that does what the rate limit service's transport
 * does per decision and nothing else. Same process shape as the service's defaults (a cluster
 * primary and `<workers>` workers sharing the ports, V8's single-threaded GC when the workers
 * fill the cores, as `packages/ratelimit/src/main.ts` runs them); per call:
 *
 * - HTTP `/json`: reads the request body, answers 200 with the fixed JSON body (`content-type`,
 *   `content-length`), as `src/server/http.ts` answers;
 * - gRPC: reads the request's data, then `respond()` with trailers to follow, `end()` with the
 *   fixed framed message, and `grpc-status: 0` on `wantTrailers`, the wire steps of
 *   `src/server/grpc-wire.ts`'s `sendFramed`.
 *
 * No parsing, no decision, no Redis: its decisions/s bound what any service on Node's `http` and
 * `http2` servers can reach on the machine, which the bench reports next to the service's.
 *
 * Usage: node bench/ratelimit/ceiling-server.mjs <http-port> <grpc-port> <workers> <answers-file>
 * where the answers file is JSON `{ "json": "<body>", "grpc": "<framed message, base64>" }`.
 * Prints `listening` once every worker listens. Plain JavaScript, so that it runs without a
 * loader, as the service runs from `dist/`.
 */
import cluster from 'node:cluster'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { createServer as createHttp2Server } from 'node:http2'
import { availableParallelism } from 'node:os'

const [httpPort = '0', grpcPort = '0', workersText = '2', answersFile = ''] = process.argv.slice(2)
const workers = Number(workersText)

if (cluster.isPrimary) {
  if (workers >= availableParallelism()) {
    cluster.setupPrimary({ execArgv: [...process.execArgv, '--single-threaded-gc'] })
  }
  let listening = 0
  cluster.on('message', () => {
    if (++listening === workers) process.stdout.write('listening\n')
  })
  for (let i = 0; i < workers; i++) cluster.fork()
  const stop = () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.kill()
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
} else {
  const answers = JSON.parse(readFileSync(answersFile, 'utf8'))
  const json = String(answers.json)
  const jsonLength = String(Buffer.byteLength(json))
  const framed = Buffer.from(String(answers.grpc), 'base64')
  const responseHeaders = { ':status': 200, 'content-type': 'application/grpc' }
  const trailers = { 'grpc-status': '0' }

  const http = createServer((req, res) => {
    req.on('data', () => {})
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': jsonLength })
      res.end(json)
    })
  })
  http.keepAliveTimeout = 65_000

  const grpc = createHttp2Server()
  grpc.on('stream', (stream) => {
    stream.on('error', () => {})
    stream.on('data', () => {})
    stream.on('end', () => {
      stream.respond(responseHeaders, { waitForTrailers: true })
      stream.on('wantTrailers', () => stream.sendTrailers(trailers))
      stream.end(framed)
    })
  })

  let bound = 0
  const ready = () => {
    if (++bound === 2) process.send?.('listening')
  }
  http.listen(Number(httpPort), '127.0.0.1', ready)
  grpc.listen(Number(grpcPort), '127.0.0.1', ready)
}
