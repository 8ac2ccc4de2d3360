import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { offlineChromium, ownOriginOnly, recordCspViolations } from './chromium.ts';

/** Where the console's browser tests save their screenshots. */
export const CONSOLE_SHOTS = fileURLToPath(new URL('../../.var/test-output/console/', import.meta.url));

/**
 * A page of Debian's chromium for the console's browser tests, which reaches nothing but the
 * api under test: every other origin is aborted and recorded in `offOrigin`; page errors,
 * console errors and CSP violations (window.cspViolations) are bugs of the page, collected in
 * `problems`.
 */
export type ConsoleBrowser = {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Where the browser saves downloads. */
  readonly downloads: string;
  readonly offOrigin: string[];
  readonly problems: string[];
  /** Saves a screenshot as CONSOLE_SHOTS/<name>.png. */
  shot(name: string, fullPage?: boolean): Promise<void>;
  close(): Promise<void>;
};

export type ConsoleBrowserOptions = {
  readonly viewport: { width: number; height: number };
  /**
   * The failed requests a test asks for. When given, every other answer of 400 or more is a
   * problem too, and a console error about an asked-for request is not.
   */
  readonly asked?: (url: string) => boolean;
};

export async function openConsoleBrowser(apiUrl: string, options: ConsoleBrowserOptions): Promise<ConsoleBrowser> {
  await mkdir(CONSOLE_SHOTS, { recursive: true });
  const profile = await mkdtemp(join(tmpdir(), 'meridian-chromium-'));
  const downloads = await mkdtemp(join(tmpdir(), 'meridian-console-downloads-'));
  const cleanUp = async () => {
    await rm(profile, { recursive: true, force: true });
    await rm(downloads, { recursive: true, force: true });
  };
  let context: BrowserContext;
  try {
    context = await offlineChromium(profile, { acceptDownloads: true, downloadsPath: downloads, viewport: options.viewport });
  } catch (error) {
    await cleanUp();
    throw error;
  }
  const offOrigin = await ownOriginOnly(context, new URL(apiUrl).origin);
  const problems: string[] = [];
  const page = await context.newPage();
  await recordCspViolations(page);
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  const { asked } = options;
  page.on('console', (m) => {
    if (m.type() === 'error' && !asked?.(m.location().url)) problems.push(`console: ${m.text()} (${m.location().url})`);
  });
  if (asked)
    page.on('response', (r) => {
      if (r.status() >= 400 && !asked(r.url())) problems.push(`${r.status()} ${r.url()}`);
    });
  return {
    context,
    page,
    downloads,
    offOrigin,
    problems,
    shot: async (name, fullPage = true) => {
      await page.screenshot({ path: join(CONSOLE_SHOTS, `${name}.png`), fullPage });
    },
    async close() {
      await context.close();
      await cleanUp();
    },
  };
}

/** Opens the console and signs in with `key`, up to the page's app showing. */
export async function signInToConsole(page: Page, apiUrl: string, key: string): Promise<void> {
  const response = await page.goto(`${apiUrl}/console`, { waitUntil: 'load' });
  if (response?.status() !== 200) throw new Error(`GET /console answered ${response?.status()}`);
  await page.fill('#api-key', key);
  await page.click('#sign-in-form button[type=submit]');
  await page.locator('#app').waitFor({ state: 'visible' });
}

export type Rgb = readonly [number, number, number];
export const BLUE: Rgb = [0x0b, 0x5c, 0xd5];
export const ORANGE: Rgb = [0xd5, 0x5e, 0x00];
export type Painted = { width: number; height: number; columns: number[] };

/**
 * Canvas columns (in CSS pixels from the plot's left edge) holding a series' stroke colour,
 * and the plot's width, in the uPlot chart inside `chart` (a selector). The plot area is
 * uPlot's .u-over element.
 */
export async function paintedColumns(page: Page, chart: string, rgb: Rgb): Promise<Painted> {
  return page.evaluate<Painted>(`(() => {
    const canvas = document.querySelector(${JSON.stringify(`${chart} canvas`)});
    const over = document.querySelector(${JSON.stringify(`${chart} .u-over`)}).getBoundingClientRect();
    const box = canvas.getBoundingClientRect();
    const ratio = canvas.width / box.width;
    const ctx = canvas.getContext('2d');
    const { data, width, height } = ctx.getImageData(0, 0, canvas.width, canvas.height);
    const [r, g, b] = ${JSON.stringify(rgb)};
    const columns = new Set();
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      if (data[i + 3] > 200 && Math.abs(data[i] - r) < 40 && Math.abs(data[i + 1] - g) < 40 && Math.abs(data[i + 2] - b) < 40) {
        columns.add(Math.round(x / ratio - (over.left - box.left)));
      }
    }
    return { width: over.width, height: over.height, columns: [...columns].sort((a, b) => a - b) };
  })()`);
}
