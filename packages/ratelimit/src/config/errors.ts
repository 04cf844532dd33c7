import { RateLimitError } from '../errors.js'

/**
 * Thrown when a configuration file (or set of files) cannot be loaded. The message is upstream's
 * exact text, `<name>: <problem>`, e.g. `empty_domain.yaml: config file cannot have empty domain`.
 */
export class RateLimitConfigError extends RateLimitError {
  declare readonly code: 'ERR_RATELIMIT_CONFIG'
  /** The file (config key) the problem was found in. */
  readonly fileName: string
  /** The problem, without the file name. */
  readonly problem: string

  constructor(fileName: string, problem: string) {
    super('ERR_RATELIMIT_CONFIG', `${fileName}: ${problem}`)
    this.fileName = fileName
    this.problem = problem
  }
}
