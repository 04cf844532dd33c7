/**
 * Prints, as JSON, the URL of every module that importing the specifier given as its argument
 * loads (a `load` hook registered before the import records them). Run as a process of its own
 * (`client-entry.test.ts`), so that nothing the test runner loaded counts.
 *
 * @module
 */
import { register } from 'node:module'
import { MessageChannel } from 'node:worker_threads'

/** The hooks: each loaded URL goes to the main thread; `flush` answers once all have been sent. */
const HOOKS = `
let port
export function initialize(data) {
  port = data.port
  port.on('message', () => port.postMessage({ flushed: true }))
}
export async function load(url, context, nextLoad) {
  port.postMessage({ url })
  return nextLoad(url, context)
}
`

const specifier = process.argv[2]
if (specifier === undefined) throw new Error('usage: loaded-modules.ts <specifier>')
const { port1, port2 } = new MessageChannel()
const loaded: string[] = []
const flushed = new Promise<void>((resolve) => {
  port1.on('message', (message: { url?: string; flushed?: boolean }) => {
    if (message.url !== undefined) loaded.push(message.url)
    if (message.flushed === true) resolve()
  })
})
register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, {
  data: { port: port2 },
  transferList: [port2],
})
await import(specifier)
// The URLs were posted on this port before the answer to the flush: all have arrived after it.
port1.postMessage('flush')
await flushed
port1.close()
process.stdout.write(JSON.stringify(loaded))
