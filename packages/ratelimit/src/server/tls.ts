/**
 * TLS of the gRPC server (`GRPC_SERVER_USE_TLS`), shared by both implementations: the
 * certificate and key files (`GRPC_SERVER_TLS_CERT`, `GRPC_SERVER_TLS_KEY`), reloaded when they
 * change, and mutual TLS (`GRPC_CLIENT_TLS_CACERT`, with `GRPC_CLIENT_TLS_SAN`).
 *
 * - At start the files must be readable and make a valid key pair, else {@link ServerTls.load}
 *   throws a `SettingsError` naming the variable (the executable exits 2, as for any setting).
 * - The files' directories are watched (which also sees a Kubernetes secret's `..data` symlink
 *   swap); after a change the files are read again and, when they make a valid context, new
 *   connections get it (`setSecureContext`) while open ones keep theirs. A file that is missing
 *   or bad then is logged and the previous certificate stays.
 * - Upstream (envoyproxy/ratelimit `src/server/server_impl.go`) checks `GRPC_CLIENT_TLS_SAN` in
 *   the handshake; Node offers no hook there, so both servers refuse every call of a connection
 *   whose client certificate does not carry the name, with UNAUTHENTICATED and a message naming
 *   it (see {@link clientSanProblem}).
 *
 * @module
 */
import { readFileSync, watch, type FSWatcher } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { basename, dirname, resolve } from 'node:path'
import {
  checkServerIdentity,
  createSecureContext,
  type PeerCertificate,
  type SecureContextOptions,
} from 'node:tls'
import { SettingsError } from '@gatehouse/settings'
import type { Logger } from 'pino'

/** The files of the server's TLS, from the settings. */
export interface ServerTlsFiles {
  /** `GRPC_SERVER_TLS_CERT`: PEM certificate chain. */
  readonly certFile: string
  /** `GRPC_SERVER_TLS_KEY`: PEM private key. */
  readonly keyFile: string
  /** `GRPC_CLIENT_TLS_CACERT`: PEM CA bundle for client certificates; empty = no mutual TLS. */
  readonly clientCaFile: string
  /** `GRPC_CLIENT_TLS_SAN`: DNS name client certificates must carry; empty = any. */
  readonly clientSan: string
}

/** The PEM contents of {@link ServerTlsFiles}. */
export interface ServerTlsMaterial {
  readonly cert: Buffer
  readonly key: Buffer
  /** Undefined without mutual TLS. */
  readonly ca: Buffer | undefined
}

/** Options of {@link ServerTls.load}. */
export interface ServerTlsOptions {
  /** Where reloads and refused reloads are logged. */
  readonly logger: Logger
  /** Quiet time after a change before reading the files again, in milliseconds. @default 100 */
  readonly debounceMs?: number
}

/**
 * What a reload did: `updated` (new connections get the new files), `unchanged` (same contents),
 * or `kept` (the files could not be used; `error` says why, the previous ones stay).
 */
export type TlsReloadResult =
  | { readonly outcome: 'updated' | 'unchanged' }
  | { readonly outcome: 'kept'; readonly error: Error }

/** The variable each file comes from, for error texts. */
const VARIABLES = {
  cert: 'GRPC_SERVER_TLS_CERT',
  key: 'GRPC_SERVER_TLS_KEY',
  ca: 'GRPC_CLIENT_TLS_CACERT',
} as const

/**
 * Reads PEM files named by settings, all at once.
 *
 * @param files Path by variable name; an empty path is not read (its entry is undefined).
 * @returns The contents by variable name.
 * @throws {@link SettingsError} Listing `<VARIABLE>: cannot read <path>: <reason>` for every
 *   file that cannot be read (the executable exits 2, as for any invalid setting).
 */
export function readTlsFiles<K extends string>(
  files: Readonly<Record<K, string>>,
): Record<K, Buffer | undefined> {
  const problems: string[] = []
  const contents = {} as Record<K, Buffer | undefined>
  for (const [variable, path] of Object.entries(files) as [K, string][]) {
    if (path === '') continue
    try {
      contents[variable] = readFileSync(path)
    } catch (error) {
      problems.push(`${variable}: cannot read ${path}: ${(error as Error).message}`)
    }
  }
  if (problems.length > 0) throw new SettingsError(problems)
  return contents
}

/**
 * The secure context options of the material, checked by building a context once.
 *
 * @throws {Error} When the PEM data is not a certificate, a key, a CA bundle, or the key does not
 *   match the certificate (Node's OpenSSL message).
 */
export function secureContextOptions(material: ServerTlsMaterial): SecureContextOptions {
  const options: SecureContextOptions = {
    cert: material.cert,
    key: material.key,
    ...(material.ca === undefined ? {} : { ca: material.ca }),
  }
  createSecureContext(options)
  return options
}

/**
 * Why a client certificate is refused under `GRPC_CLIENT_TLS_SAN`, or undefined when it carries
 * the name: a DNS subject alternative name equal to `san` (or a wildcard name covering it, as Go's
 * `x509.VerifyOptions.DNSName` allows). The common name is not considered, as in Go.
 *
 * @param cert The verified client certificate (`getPeerCertificate()`); undefined or empty when
 *   the client sent none.
 * @param san `GRPC_CLIENT_TLS_SAN`.
 */
export function clientSanProblem(
  cert: PeerCertificate | undefined,
  san: string,
): string | undefined {
  const names = cert?.subjectaltname
  if (
    names !== undefined &&
    names.split(', ').some((name) => name.startsWith('DNS:')) &&
    checkServerIdentity(san, cert as PeerCertificate) === undefined
  ) {
    return undefined
  }
  return `client certificate does not carry the subject alternative name DNS:${san} (GRPC_CLIENT_TLS_SAN)`
}

/**
 * The gRPC server's TLS: the current secure context options, reloaded when the files change.
 * Create with {@link ServerTls.load}; {@link ServerTls.close} stops watching.
 */
export class ServerTls {
  readonly #files: ServerTlsFiles
  readonly #logger: Logger
  readonly #debounceMs: number
  readonly #listeners = new Set<(options: SecureContextOptions) => void>()
  readonly #reloadListeners = new Set<(result: TlsReloadResult) => void>()
  readonly #watchers: FSWatcher[] = []
  #material: ServerTlsMaterial
  #options: SecureContextOptions
  #timer: NodeJS.Timeout | undefined
  #reloading: Promise<void> = Promise.resolve()
  #closed = false

  private constructor(
    files: ServerTlsFiles,
    material: ServerTlsMaterial,
    options: ServerTlsOptions,
  ) {
    this.#files = files
    this.#material = material
    this.#options = secureContextOptions(material)
    this.#logger = options.logger
    this.#debounceMs = options.debounceMs ?? 100
  }

  /**
   * Reads the files and checks that they make a valid context (nothing is watched yet; see
   * {@link ServerTls.watch}).
   *
   * @throws {@link SettingsError} Naming each unreadable file's variable, or the certificate
   *   variable when the files do not make a valid key pair.
   */
  static load(files: ServerTlsFiles, options: ServerTlsOptions): ServerTls {
    const read = readTlsFiles({
      [VARIABLES.cert]: files.certFile,
      [VARIABLES.key]: files.keyFile,
      [VARIABLES.ca]: files.clientCaFile,
    })
    const material: ServerTlsMaterial = {
      cert: read[VARIABLES.cert] ?? Buffer.alloc(0),
      key: read[VARIABLES.key] ?? Buffer.alloc(0),
      ca: read[VARIABLES.ca],
    }
    try {
      return new ServerTls(files, material, options)
    } catch (error) {
      throw new SettingsError([
        `${VARIABLES.cert}: ${files.certFile}, ${files.keyFile}${files.clientCaFile === '' ? '' : ` and ${files.clientCaFile}`} do not make a valid TLS configuration: ${(error as Error).message}`,
      ])
    }
  }

  /** True when clients must present a certificate (`GRPC_CLIENT_TLS_CACERT`). */
  get mutual(): boolean {
    return this.#files.clientCaFile !== ''
  }

  /** `GRPC_CLIENT_TLS_SAN` ('' = not checked). */
  get clientSan(): string {
    return this.#files.clientSan
  }

  /** The current PEM contents. */
  get material(): ServerTlsMaterial {
    return this.#material
  }

  /** The current secure context options (for `createSecureServer` / `setSecureContext`). */
  get contextOptions(): SecureContextOptions {
    return this.#options
  }

  /**
   * Calls `listener` with the new options after every successful reload.
   *
   * @returns A function that removes the listener.
   */
  onChange(listener: (options: SecureContextOptions) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /**
   * Calls `listener` after every reload attempt, successful or not (tests await it).
   *
   * @returns A function that removes the listener.
   */
  onReload(listener: (result: TlsReloadResult) => void): () => void {
    this.#reloadListeners.add(listener)
    return () => this.#reloadListeners.delete(listener)
  }

  /** Starts watching the files' directories; a change reloads after the debounce time. */
  watch(): void {
    if (this.#closed || this.#watchers.length > 0) return
    const paths = [this.#files.certFile, this.#files.keyFile, this.#files.clientCaFile].filter(
      (path) => path !== '',
    )
    for (const dir of new Set(paths.map((path) => dirname(resolve(path))))) {
      try {
        const watcher = watch(dir, () => {
          this.#schedule()
        })
        watcher.on('error', (error) => {
          this.#logger.warn(`gRPC TLS: cannot watch ${dir}: ${error.message}`)
        })
        this.#watchers.push(watcher)
      } catch (error) {
        this.#logger.warn(
          `gRPC TLS: cannot watch ${dir}, certificates will not reload: ${(error as Error).message}`,
        )
      }
    }
  }

  /**
   * Reads the files again now. A valid set replaces the current one (listeners are called); an
   * unreadable or invalid one is logged and the previous one stays.
   */
  reload(): Promise<TlsReloadResult> {
    const result = this.#reloading.then(() => this.#readAgain())
    this.#reloading = result.then(() => undefined)
    return result
  }

  async #readAgain(): Promise<TlsReloadResult> {
    const outcome = await this.#replace()
    for (const listener of this.#reloadListeners) listener(outcome)
    return outcome
  }

  /** Reads the files and takes them when they changed and make a valid context. */
  async #replace(): Promise<TlsReloadResult> {
    const files = this.#files
    try {
      const [cert, key, ca] = await Promise.all([
        readFile(files.certFile),
        readFile(files.keyFile),
        files.clientCaFile === '' ? undefined : readFile(files.clientCaFile),
      ])
      const current = this.#material
      if (
        this.#closed ||
        (cert.equals(current.cert) &&
          key.equals(current.key) &&
          (ca === undefined || (current.ca !== undefined && ca.equals(current.ca))))
      ) {
        return { outcome: 'unchanged' }
      }
      const material = { cert, key, ca }
      const options = secureContextOptions(material)
      this.#material = material
      this.#options = options
      this.#logger.info(
        `gRPC TLS: reloaded ${basename(files.certFile)} and ${basename(files.keyFile)}`,
      )
      for (const listener of this.#listeners) listener(options)
      return { outcome: 'updated' }
    } catch (error) {
      this.#logger.error(
        `gRPC TLS: cannot reload the certificate files, keeping the previous certificate: ${(error as Error).message}`,
      )
      return { outcome: 'kept', error: error as Error }
    }
  }

  #schedule(): void {
    if (this.#closed) return
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      void this.reload()
    }, this.#debounceMs)
    this.#timer.unref()
  }

  /** Stops watching. */
  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
    for (const watcher of this.#watchers.splice(0)) watcher.close()
  }
}
