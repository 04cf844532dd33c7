/**
 * Reading a request body on the HTTP port (`/json`, `/counters`) with a bound on its size: the
 * bytes past the bound are read and dropped, never kept.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http'

/**
 * Reads the whole body of `req`.
 *
 * @param maxBytes The most bytes kept.
 * @returns The body, or undefined when it is larger than `maxBytes`.
 * @throws The request's stream error (a client that hung up).
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    let tooLarge = false
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) tooLarge = true
      else chunks.push(chunk)
    })
    req.on('end', () => {
      // A small body arrives in one chunk: no copy then.
      resolve(tooLarge ? undefined : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size))
    })
    req.on('error', reject)
  })
}
