import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext } from 'playwright-core';
import { offlineChromium, ownOriginOnly, recordCspViolations } from '../support/chromium.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * The documentation page in a real headless browser: Debian's chromium (installed by
 * deploy/local/install.sh test-tools), driven by playwright-core. The browser may reach
 * nothing but the api under test: no DNS (every name resolves to nothing), a dead proxy for
 * anything that is not loopback, and every request to another origin aborted and recorded.
 */
const settings = isolatedSettings();
let api: RunningApi;
let context: BrowserContext;
let profile: string;

beforeAll(async () => {
  api = await startApi(settings);
  profile = await mkdtemp(join(tmpdir(), 'meridian-chromium-'));
  context = await offlineChromium(profile);
});
afterAll(async () => {
  await context?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
  await api?.close();
});

describe('the documentation page in a headless browser', () => {
  it('loads /docs from our own origin only and lists the endpoints', async () => {
    const offOrigin = await ownOriginOnly(context, new URL(api.url).origin);
    const page = await context.newPage();
    await recordCspViolations(page);
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`));

    const response = await page.goto(`${api.url}/docs`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    expect(await page.title()).toBe('Meridian API');

    // Swagger UI has fetched /api/v1/openapi.json and rendered one block per operation.
    await page.locator('.opblock-summary-path').first().waitFor({ timeout: 30_000 });
    const paths = await page.locator('.opblock-summary-path').evaluateAll((els) => els.map((e) => e.getAttribute('data-path') ?? e.textContent ?? ''));
    expect(paths).toContain('/api/v1/metrics/download');
    expect(paths).toContain('/api/v1/metrics/upload');
    expect(paths).toContain('/api/v1/tasks/{task_id}');
    expect(await page.locator('.info .title').textContent()).toMatch(/Meridian/);

    if (process.env.MERIDIAN_DOCS_SCREENSHOT) await page.screenshot({ path: process.env.MERIDIAN_DOCS_SCREENSHOT, fullPage: false });
    expect(await page.evaluate('window.cspViolations')).toEqual([]);
    expect(offOrigin).toEqual([]);
    expect(problems).toEqual([]);
    await page.close();
  });
});
