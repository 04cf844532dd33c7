/**
 * Reading a request body on the HTTP port (`/json`, `/counters`) with a bound on its size: the
 * bytes past the bound are read and dropped, never kept.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http'

/**
 * Reads the whole body of `req` and calls `done` with it once (no promise: `/json` reads one per
 * decision).
 *
 * @param maxBytes The most bytes kept.
 * @param done Called with the body, or undefined when it is larger than `maxBytes`.
 * @param failed Called instead with the request's stream error (a client that hung up).
 */
export function onBody(
  req: IncomingMessage,
  maxBytes: number,
  done: (body: Buffer | undefined) => void,
  failed: (error: Error) => void,
): void {
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
    done(tooLarge ? undefined : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size))
  })
  req.on('error', failed)
}

/**
 * Reads the whole body of `req` ({@link onBody} as a promise).
 *
 * @param maxBytes The most bytes kept.
 * @returns The body, or undefined when it is larger than `maxBytes`.
 * @throws The request's stream error (a client that hung up).
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    onBody(req, maxBytes, resolve, reject)
  })
}
