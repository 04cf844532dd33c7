import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createTracing } from '../../packages/telemetry/src/tracing.js'
const sink = createServer((req, res) => { req.resume(); req.on('end', () => res.writeHead(200).end()) })
await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r))
const endpoint = `http://127.0.0.1:${String((sink.address() as AddressInfo).port)}`
const tracing = createTracing({ instrumentationName: 'x', serviceName: 's', samplingRate: 1, exporterProtocol: 'http', endpoint })
const ATTR = { 'rpc.system': 'grpc', 'rpc.service': 'envoy.service.ratelimit.v3.RateLimitService', 'rpc.method': 'ShouldRateLimit' }
const headers = { 'content-type': 'application/grpc' }
async function round(n: number): Promise<number> {
  const start = process.cpuUsage()
  for (let i = 0; i < n; i++) {
    const s = tracing.startServer('envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit', ATTR, headers)!
    const e = tracing.startChild(s, 'ShouldRateLimit Execution', { domain: 'bench', 'descriptors count': 1 })
    const r = tracing.startChild(e, 'Redis Pipeline Execution', { 'pipeline length': 2 })
    r.span.end(); e.span.end(); s.span.setAttribute('rpc.grpc.status_code', 0); s.span.end()
    if (i % 500 === 499) await new Promise((res) => setImmediate(res))
  }
  await tracing.forceFlush()
  const u = process.cpuUsage(start)
  return (u.user + u.system) / n
}
await round(5000)
const xs: number[] = []
for (let i = 0; i < 7; i++) xs.push(await round(1500))
xs.sort((a, b) => a - b)
console.log('µs per sampled call (3 spans): median', xs[3]!.toFixed(1), 'all', xs.map((x) => x.toFixed(1)).join(' '))
await tracing.shutdown(); sink.close()
