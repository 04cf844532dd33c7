/**
 * The counting algorithms a rule can name (`algorithm:` in the YAML, `RATE_LIMIT_ALGORITHM` for
 * the rules that name none): the vocabulary the configuration, the settings and the caches share.
 *
 * @module
 */

/**
 * How a rule counts (a Gatehouse addition, issue 15): upstream's `fixed_window`, the
 * `sliding_window` counter, or a `token_bucket`. See the package README for the arithmetic.
 */
export type Algorithm = 'fixed_window' | 'sliding_window' | 'token_bucket'

/** Every {@link Algorithm}, in the order the README lists them. */
export const ALGORITHMS: readonly Algorithm[] = ['fixed_window', 'sliding_window', 'token_bucket']

/** Whether `name` is an {@link Algorithm}. */
export function isAlgorithm(name: string): name is Algorithm {
  return (ALGORITHMS as readonly string[]).includes(name)
}
