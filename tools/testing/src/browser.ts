import { chromium, type Browser } from 'playwright-core'

/** Debian's Chromium (package `chromium`, installed by `scripts/test-setup.ts`). */
export const CHROMIUM_PATH = '/usr/bin/chromium'

/**
 * Launches Debian's Chromium, headless, through `playwright-core` (no browser download). Launch
 * one per test file in `beforeAll` and close it in `afterAll`.
 *
 * @throws {Error} When `/usr/bin/chromium` is missing (run `npm test`'s set-up) or fails to start.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  })
}
