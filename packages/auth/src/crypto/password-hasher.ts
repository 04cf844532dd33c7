import { TooManyRequestsError } from '../errors.js'
import { hashPassword, isBcryptHash, verifyPassword } from './password.js'

/**
 * Thrown by {@link PasswordHasher} when every slot is busy and the queue is full; the API answers
 * it with 429 `over_request_rate_limit` and `Retry-After: 1`.
 */
export class PasswordHashingBusyError extends TooManyRequestsError {
  constructor() {
    super(
      'over_request_rate_limit',
      'Too many password checks in progress, please retry in a moment',
    )
  }
}

/** The CPU-bound primitives a {@link PasswordHasher} runs: bcrypt by default. */
export interface PasswordHashing {
  /** Hashes a password (see {@link hashPassword}). */
  hash(password: string): Promise<string>
  /** Checks a password against a stored hash (see {@link verifyPassword}). */
  verify(password: string, hash: string): Promise<boolean>
}

/** Bounds of a {@link PasswordHasher}. */
export interface PasswordHasherOptions {
  /** Hashes or checks running at once (`PASSWORD_HASH_CONCURRENCY`); at least 1. */
  readonly concurrency: number
  /** Hashes or checks waiting for a slot (`PASSWORD_HASH_QUEUE_SIZE`); beyond it: busy. */
  readonly queueSize: number
}

interface Waiter {
  start(): void
}

/**
 * Runs password hashing and verification with bounded CPU: at most `concurrency` at once, at most
 * `queueSize` waiting (first come, first served); any more fail at once with
 * {@link PasswordHashingBusyError} instead of queueing without end. bcrypt at cost 10 takes tens
 * of milliseconds of CPU, so a flood of wrong passwords would otherwise delay every sign-in
 * without bound; with the bound, queued work waits at most `queueSize / concurrency` hashes.
 *
 * @example
 * ```ts
 * const hasher = new PasswordHasher({ concurrency: 2, queueSize: 100 })
 * const ok = await hasher.verify('correct-horse-1', storedHash)
 * ```
 */
export class PasswordHasher {
  readonly #concurrency: number
  readonly #queueSize: number
  readonly #hashing: PasswordHashing
  readonly #waiting: Waiter[] = []
  #running = 0

  /**
   * @param options The bounds.
   * @param hashing The primitives. @default bcrypt ({@link hashPassword}, {@link verifyPassword})
   * @throws {TypeError} `ERR_INVALID_ARG_VALUE` when `concurrency` is not a positive integer or
   *   `queueSize` not a non-negative one.
   */
  constructor(
    options: PasswordHasherOptions,
    hashing: PasswordHashing = { hash: (p) => hashPassword(p), verify: verifyPassword },
  ) {
    if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
      throw Object.assign(new TypeError('"concurrency" must be a positive integer'), {
        code: 'ERR_INVALID_ARG_VALUE',
      })
    }
    if (!Number.isInteger(options.queueSize) || options.queueSize < 0) {
      throw Object.assign(new TypeError('"queueSize" must be a non-negative integer'), {
        code: 'ERR_INVALID_ARG_VALUE',
      })
    }
    this.#concurrency = options.concurrency
    this.#queueSize = options.queueSize
    this.#hashing = hashing
  }

  /** Hashes or checks that may run at once. */
  get concurrency(): number {
    return this.#concurrency
  }

  /** Hashes or checks that may wait for a slot. */
  get queueSize(): number {
    return this.#queueSize
  }

  /** Hashes or checks running now. */
  get running(): number {
    return this.#running
  }

  /** Hashes or checks waiting for a slot. */
  get queued(): number {
    return this.#waiting.length
  }

  /**
   * Hashes a password once a slot is free.
   *
   * @param signal Gives up waiting (rejecting with its reason) when aborted, for example when the
   *   request timed out; a hash already running completes.
   * @throws {@link PasswordHashingBusyError} When every slot is busy and the queue is full.
   */
  hash(password: string, signal?: AbortSignal): Promise<string> {
    return this.#run(() => this.#hashing.hash(password), signal)
  }

  /**
   * Checks a password against a stored hash once a slot is free. A value that is no bcrypt hash
   * is a mismatch at once (nothing to compute).
   *
   * @param signal As for {@link hash}.
   * @throws {@link PasswordHashingBusyError} When every slot is busy and the queue is full.
   */
  async verify(password: string, hash: string, signal?: AbortSignal): Promise<boolean> {
    if (!isBcryptHash(hash)) return false
    return this.#run(() => this.#hashing.verify(password, hash), signal)
  }

  async #run<T>(task: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    signal?.throwIfAborted()
    if (this.#running < this.#concurrency) this.#running++
    else await this.#wait(signal)
    try {
      return await task()
    } finally {
      // The slot passes straight to the next waiter, or is freed.
      const next = this.#waiting.shift()
      if (next) next.start()
      else this.#running--
    }
  }

  #wait(signal: AbortSignal | undefined): Promise<void> {
    if (this.#waiting.length >= this.#queueSize) {
      return Promise.reject(new PasswordHashingBusyError())
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const index = this.#waiting.indexOf(waiter)
        if (index >= 0) this.#waiting.splice(index, 1)
        reject(signal?.reason as Error)
      }
      const waiter: Waiter = {
        start: () => {
          signal?.removeEventListener('abort', onAbort)
          resolve()
        },
      }
      this.#waiting.push(waiter)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }
}
