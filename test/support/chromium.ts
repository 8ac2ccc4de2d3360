import { existsSync } from 'node:fs';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium, installed by `deploy/local/install.sh chromium` (make test does). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * Chromium, headless, on a fresh profile, that can reach loopback only: every other host
 * resolves to nothing and goes through a dead proxy, so a page that fetched anything from
 * elsewhere would fail visibly. `options` adds to the launch (downloads, viewport).
 */
export async function offlineChromium(
  profileDir: string,
  options: { acceptDownloads?: boolean; downloadsPath?: string; viewport?: { width: number; height: number } } = {},
): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run deploy/local/install.sh chromium (make test does)`);
  return chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-default-apps',
      '--disable-domain-reliability',
      '--no-pings',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
      '--proxy-server=http://127.0.0.1:9', // loopback (the api) bypasses a proxy by default
    ],
    timeout: 60_000,
    ...options,
  });
}

/** Lets the context reach `origin` (and data: and blob: URLs) only: any other request is aborted, its URL in the list returned. */
export async function ownOriginOnly(context: BrowserContext, origin: string): Promise<string[]> {
  const offOrigin: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('data:') || url.startsWith('blob:') || new URL(url).origin === origin) return route.continue();
    offOrigin.push(url);
    return route.abort();
  });
  return offOrigin;
}

/**
 * Collects the page's CSP violations (an inline style or script the policy refused: bugs of
 * the page too) in window.cspViolations. Plain script text: this project type-checks without
 * the DOM library.
 */
export async function recordCspViolations(page: Page): Promise<void> {
  await page.addInitScript({
    content: `window.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (e) => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI));`,
  });
}
