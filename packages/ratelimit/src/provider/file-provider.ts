/**
 * The FILE configuration provider (upstream's goruntime loader): loads every file under
 * `RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY` (recursively, any extension, dotfiles
 * unless `RUNTIME_IGNOREDOTFILES`) and reloads them all when something changes:
 *
 * - `RUNTIME_WATCH_ROOT=true`: when the root itself is replaced (the symlink swap of a runtime
 *   deployment); config keys are relative to root/subdirectory, e.g. `config.basic.yaml`.
 * - `RUNTIME_WATCH_ROOT=false`: on any write, create, chmod or remove inside the app directory;
 *   keys are relative to it, e.g. `basic.yaml`. Watched with chokidar, which follows a file
 *   replaced by rename (an editor's atomic save), so later edits of it are still seen (Node 20's
 *   recursive `fs.watch` keeps watching the replaced file's old inode and misses them).
 *
 * A missing app directory at start gives an empty configuration (with a warning); once a
 * configuration was delivered, a reload that finds no app directory is an error, so the service
 * keeps the last good configuration (and counts `config_load_error`) instead of dropping every
 * limit.
 *
 * @module
 */
import { watch, type FSWatcher } from 'node:fs'
import { readdir, readFile, stat } from 'node:fs/promises'
import { basename, dirname, join, relative, sep } from 'node:path'
import { watch as watchTree, type FSWatcher as TreeWatcher } from 'chokidar'
import type { Logger } from 'pino'
import type { ConfigFile } from '../config/config.js'
import type { ConfigProvider, ConfigUpdateListener } from './provider.js'

/** Options of {@link FileConfigProvider}. */
export interface FileProviderOptions {
  /** `RUNTIME_ROOT`. */
  readonly root: string
  /** `RUNTIME_SUBDIRECTORY`. */
  readonly subdirectory: string
  /** `RUNTIME_APPDIRECTORY`. */
  readonly appDirectory: string
  /** `RUNTIME_IGNOREDOTFILES`. */
  readonly ignoreDotFiles: boolean
  /** `RUNTIME_WATCH_ROOT`. */
  readonly watchRoot: boolean
  readonly logger: Logger
  /** Quiet time after a change before reloading, in milliseconds. @default 50 */
  readonly debounceMs?: number
}

async function walk(dir: string, ignoreDotFiles: boolean, out: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true })
  for (const entry of entries) {
    if (ignoreDotFiles && entry.name.startsWith('.')) continue
    const path = join(dir, entry.name)
    let isDir = entry.isDirectory()
    if (entry.isSymbolicLink()) {
      try {
        isDir = (await stat(path)).isDirectory()
      } catch {
        continue // a dangling link
      }
    }
    if (isDir) await walk(path, ignoreDotFiles, out)
    else out.push(path)
  }
}

/** Loads and watches configuration files. */
export class FileConfigProvider implements ConfigProvider {
  readonly #options: FileProviderOptions
  readonly #watchers: FSWatcher[] = []
  #tree: TreeWatcher | undefined
  #timer: NodeJS.Timeout | undefined
  #listener: ConfigUpdateListener | undefined
  #stopped = false
  #delivered = false
  #loading: Promise<void> = Promise.resolve()

  constructor(options: FileProviderOptions) {
    this.#options = options
  }

  /** The directory the files are read from. */
  get appDirectoryPath(): string {
    const o = this.#options
    return join(o.root, o.subdirectory, o.appDirectory)
  }

  /**
   * Reads every file now.
   *
   * @returns The files sorted by config key, or the error that prevented reading them. A
   *   missing app directory gives no files before the first delivery to the listener, and an
   *   error after it (a reload must not drop every limit).
   */
  async readAll(): Promise<{ files: ConfigFile[] } | { error: Error }> {
    const o = this.#options
    const base = o.watchRoot ? join(o.root, o.subdirectory) : this.appDirectoryPath
    const paths: string[] = []
    try {
      await walk(this.appDirectoryPath, o.ignoreDotFiles, paths)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        if (this.#delivered) {
          return {
            error: new Error(
              `runtime directory ${this.appDirectoryPath} does not exist; keeping the last configuration`,
            ),
          }
        }
        o.logger.warn(
          `runtime directory ${this.appDirectoryPath} does not exist; no configuration loaded`,
        )
        return { files: [] }
      }
      return { error: error as Error }
    }
    try {
      const files = await Promise.all(
        paths.map(async (path) => ({
          name: relative(base, path).split(sep).join('.'),
          content: await readFile(path, 'utf8'),
        })),
      )
      files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      return { files }
    } catch (error) {
      return { error: error as Error }
    }
  }

  /**
   * {@inheritDoc ConfigProvider.start}
   *
   * The app directory is watched before the first read, so that no edit falls between the two.
   */
  async start(listener: ConfigUpdateListener): Promise<void> {
    this.#listener = listener
    if (this.#options.watchRoot) {
      await this.#reload()
      this.#watchRoot()
    } else {
      await this.#watchTree()
      await this.#reload()
    }
  }

  #reload(): Promise<void> {
    this.#loading = this.#loading.then(async () => {
      if (this.#stopped) return
      const update = await this.readAll()
      if (!this.#isRunning()) return
      if ('files' in update) this.#delivered = true
      this.#listener?.(update)
    })
    return this.#loading
  }

  #isRunning(): boolean {
    return !this.#stopped
  }

  #schedule(): void {
    if (this.#stopped) return
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => {
      void this.#reload()
    }, this.#options.debounceMs ?? 50)
  }

  /** `RUNTIME_WATCH_ROOT=true`: the root's entry in its parent directory (a symlink swap). */
  #watchRoot(): void {
    const o = this.#options
    const name = basename(o.root)
    let watcher: FSWatcher
    try {
      watcher = watch(dirname(o.root), (_event, filename) => {
        if (filename === name) this.#schedule()
      })
    } catch (error) {
      o.logger.warn(
        `cannot watch the runtime directory, configuration will not reload: ${(error as Error).message}`,
      )
      return
    }
    this.#watchers.push(watcher)
    watcher.on('error', (error) => {
      o.logger.warn(`configuration watcher failed: ${error.message}`)
    })
  }

  /**
   * `RUNTIME_WATCH_ROOT=false`: every change under the app directory (following symlinks, as a
   * Kubernetes ConfigMap's `..data` swap needs). Resolves once the watcher has scanned it.
   */
  async #watchTree(): Promise<void> {
    const { logger } = this.#options
    const tree = watchTree(this.appDirectoryPath, { ignoreInitial: true, followSymlinks: true })
    this.#tree = tree
    // 'all': chokidar's events (it follows renamed-over files); 'raw': every event of the
    // underlying watches, so that a chmod reloads too (chokidar reports changed contents only), as
    // upstream's fsnotify loader does.
    const schedule = (): void => {
      this.#schedule()
    }
    tree.on('all', schedule)
    tree.on('raw', schedule)
    tree.on('error', (error) => {
      logger.warn(`configuration watcher failed: ${(error as Error).message}`)
    })
    await new Promise<void>((resolve) => tree.once('ready', resolve))
  }

  /** {@inheritDoc ConfigProvider.stop} */
  async stop(): Promise<void> {
    this.#stopped = true
    clearTimeout(this.#timer)
    for (const w of this.#watchers.splice(0)) w.close()
    await this.#tree?.close()
    await this.#loading
  }
}
