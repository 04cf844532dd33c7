/**
 * Drives `wrk` (from Debian's `wrk` package) with a generated Lua script and reads its summary.
 */
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startCpu, type CpuProbes } from '../lib/cpu.js'
import type { LoadResult } from './load.js'

/** One request template: method, path, headers and body. */
export interface WrkRequest {
  method: string
  path: string
  headers: Record<string, string>
  body?: string
}

function lua(value: string): string {
  return JSON.stringify(value)
}

function format(host: string, r: WrkRequest): string {
  const headers = Object.entries({ Host: host, ...r.headers })
    .map(([name, value]) => `[${lua(name)}] = ${lua(value)}`)
    .join(', ')
  const body = r.body === undefined ? 'nil' : lua(r.body)
  return `wrk.format(${lua(r.method)}, ${lua(r.path)}, {${headers}}, ${body})`
}

const SUMMARY = [
  'local reported = false',
  'local function report_bad(status, body)',
  '  if not reported then reported = true; io.write("BAD " .. status .. " " .. body .. "\\n") end',
  'end',
  'done = function(summary, latency, requests)',
  '  local e = summary.errors',
  '  io.write(string.format("WRK %d %d %d %f %f\\n", summary.requests,',
  '    e.status + e.connect + e.read + e.write + e.timeout, summary.duration,',
  '    latency:percentile(50) / 1000, latency:percentile(99) / 1000))',
  'end',
]

/** A script whose `request()` returns the request `pick` (Lua) chooses from `reqs`. */
function requestsScript(host: string, requests: readonly WrkRequest[], pick: string[]): string {
  return [
    ...SUMMARY,
    'local reqs = {}',
    ...requests.map((r) => `reqs[#reqs + 1] = ${format(host, r)}`),
    ...pick,
    'response = function(status, headers, body) if status >= 300 then report_bad(status, body) end end',
  ].join('\n')
}

/** A script whose `request()` sends a random one of `requests`. */
export function randomRequestsScript(host: string, requests: readonly WrkRequest[]): string {
  return requestsScript(host, requests, [
    'request = function() return reqs[math.random(#reqs)] end',
  ])
}

/**
 * A script whose `request()` sends `requests` in order, starting over after the last (for one wrk
 * thread): with more requests than a cache holds, none is ever answered from it.
 */
export function sequentialRequestsScript(host: string, requests: readonly WrkRequest[]): string {
  return requestsScript(host, requests, [
    'local next = 0',
    'request = function() next = next % #reqs + 1; return reqs[next] end',
  ])
}

/**
 * A script for refresh-token chains: a queue starts with `tokens` (give more than connections:
 * wrk may ask for a request before a response came back); each request takes the oldest and each
 * response puts the new `refresh_token` back. An empty queue sends a token that fails (counted).
 */
export function refreshChainScript(host: string, path: string, tokens: readonly string[]): string {
  return [
    ...SUMMARY,
    'local queue = {}',
    ...tokens.map((t) => `queue[#queue + 1] = ${lua(t)}`),
    'request = function()',
    '  local token = table.remove(queue, 1) or "emptyqueue00"',
    `  return wrk.format("POST", ${lua(path)}, {["Host"] = ${lua(host)}, ["Content-Type"] = "application/json"},`,
    '    \'{"refresh_token":"\' .. token .. \'"}\')',
    'end',
    'response = function(status, headers, body)',
    '  if status >= 300 then report_bad(status, body) end',
    '  local next = string.match(body, \'"refresh_token":"(%w+)"\')',
    '  if next then queue[#queue + 1] = next end',
    'end',
  ].join('\n')
}

/**
 * Runs `wrk -t1 -c<connections> -d<seconds>` with `script` against `host`. With `cpu`, each
 * probe's CPU time over the run is reported too (wrk's own is the bench's `children` time).
 *
 * @throws {Error} When wrk is missing or prints no summary.
 */
export function runWrk(
  host: string,
  connections: number,
  durationMs: number,
  script: string,
  cpu?: CpuProbes,
): LoadResult {
  const file = join(tmpdir(), `gatehouse-bench-auth-${String(process.pid)}.lua`)
  writeFileSync(file, script)
  const stop = cpu && startCpu(cpu)
  const out = execFileSync('wrk', [
    '-t1',
    `-c${String(connections)}`,
    `-d${String(Math.max(1, Math.round(durationMs / 1000)))}s`,
    '--timeout',
    '30s',
    '-s',
    file,
    `http://${host}`,
  ]).toString()
  const cpuMs = stop?.()
  const m = /WRK (\d+) (\d+) (\d+) (\S+) (\S+)/.exec(out)
  if (!m) throw new Error(`unexpected wrk output: ${out}`)
  const total = Number(m[1])
  const failed = Number(m[2])
  const bad = /BAD (.*)/.exec(out)?.[1]
  return {
    rate: (total - failed) / (Number(m[3]) / 1e6),
    ok: total - failed,
    failed,
    p50: Number(m[4]),
    p99: Number(m[5]),
    ...(bad === undefined ? {} : { firstError: bad }),
    ...(cpuMs === undefined ? {} : { cpuMs }),
  }
}
