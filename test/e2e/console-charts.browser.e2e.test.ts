import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { BLUE, openConsoleBrowser, ORANGE, paintedColumns as paintedAt, signInToConsole, type ConsoleBrowser, type Rgb } from '../support/console-browser.ts';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { clickhouse } from '../support/clickhouse.ts';
import { seedPoints } from '../support/seed-points.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * The console's charts in Debian's chromium (as console.browser.e2e.test.ts runs the rest of
 * the page): a million points over four months drawn across the whole range, two series on one
 * chart with a legend, zoom and presets kept in the address bar, y-axis labels above 10,000
 * intact, errors in red and cleared. Screenshots go to .var/test-output/console/.
 */
// Fewer points per series than the chart is wide: the page falls back to the api's own default.
const MAX_POINTS = 600;
const settings = isolatedSettings({ MERIDIAN_MAX_SERIES_POINTS: String(MAX_POINTS) });
let api: RunningApi;
let browser: ConsoleBrowser;
let analyst: string;
let page: Page;
let offOrigin: string[];
let problems: string[];

const T0 = Date.UTC(2024, 0, 1);
const BIG = 1_000_000;
const BIG_STEP = Math.floor((Date.UTC(2024, 4, 1) - T0) / BIG); // the last point on 2024-04-30
const LAST = T0 + (BIG - 1) * BIG_STEP;
const FILLERS = 80; // a long metric list above the chart
const ERROR_RED = 'rgb(176, 0, 32)';

beforeAll(async () => {
  api = await startApi(settings);
  const admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  analyst = await createUser(api.url, admin, 'analyst', [{ match: 'prefix', value: 'ch.', access: 'r' }]);
  // Values from 0 to about 1.2 million: a rising wave, so every label of the y-axis is above 10,000 but the lowest.
  await seedPoints(settings, { metric: 'ch.big', count: BIG, fromMs: T0, stepMs: BIG_STEP, value: 'number + 200000 * sin(number / 40000)' });
  await seedPoints(settings, { metric: 'ch.two.a', count: 2000, fromMs: T0, stepMs: 3_600_000, value: '50000 + 20000 * sin(number / 50)' });
  await seedPoints(settings, { metric: 'ch.two.b', count: 2000, fromMs: T0, stepMs: 3_600_000, value: '20000 + 10000 * cos(number / 30)' });
  await clickhouse(
    settings,
    `INSERT INTO points SELECT concat('ch.aa.filler.', toString(100 + number)), ${T0} + number * 1000, toFloat64(number), ${T0}, 'test-seed', 65535, 0, toUInt32(number) FROM numbers(${FILLERS})`,
  );

  // The series route's 400 and 404 below are asked for; any other failed request is a bug of the page.
  browser = await openConsoleBrowser(api.url, { viewport: { width: 1200, height: 900 }, asked: (url) => url.includes('/api/v1/metrics/series?') });
  ({ page, offOrigin, problems } = browser);
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await api?.close();
});

const shot = (name: string) => browser.shot(name, false);

const paintedColumns = (rgb: Rgb) => paintedAt(page, '#chart', rgb);

const status = () => page.textContent('#chart-status');
const hashParams = async () => new URLSearchParams((await page.evaluate<string>('location.hash')).slice(1));

describe('the console charts any range from the series route', () => {
  it('signs in and says who is signed in', async () => {
    await signInToConsole(page, api.url, analyst);
    await expect.poll(() => page.textContent('#who')).toBe('Signed in as analyst');
    await page.locator('#metric-rows tr').nth(FILLERS).waitFor();
  });

  it('draws a million points over four months across the whole range, scrolled into view', async () => {
    await page.locator('#metric-rows tr[data-metric="ch.big"] button').click();
    await expect.poll(status, { timeout: 30_000 }).toMatch(/^1 series from 2024-01-01T00:00:00\+0000 to 2024-04-30T/);
    expect(await status()).toContain(`${BIG.toLocaleString('en')} points`);
    // Four months in steps of whole hours: the chart's buckets come from the 1h rollups.
    expect(await status()).toContain('read from the 1h rollups');
    const drawn = Number(/\(([\d,]+) drawn per series\)/.exec((await status())!)![1]!.replaceAll(',', ''));
    expect(drawn).toBeLessThanOrEqual(MAX_POINTS);
    expect(drawn).toBeGreaterThan(MAX_POINTS / 3);
    // The chart is on screen, not below the list.
    const top = await page
      .locator('#chart-section')
      .evaluate((el) => (el as unknown as { getBoundingClientRect(): { top: number } }).getBoundingClientRect().top);
    expect(Math.abs(top)).toBeLessThan(5);
    // The stroke runs from the plot's left edge to its right edge: the whole range, not its first day.
    const blue = await paintedColumns(BLUE);
    expect(blue.columns.length).toBeGreaterThan(blue.width * 0.9);
    expect(blue.columns[0]).toBeLessThan(blue.width * 0.02);
    expect(blue.columns.at(-1)).toBeGreaterThan(blue.width * 0.98);
    // Time labels: ISO dates, January to April, no AM/PM.
    const xTicks = JSON.parse((await page.getAttribute('#chart', 'data-x-ticks'))!) as string[];
    expect(xTicks.length).toBeGreaterThan(3);
    for (const label of xTicks) expect(label).toMatch(/^(\d{4}-\d{2}-\d{2}|\d{2}:\d{2}(:\d{2})?(\n\d{4}-\d{2}-\d{2})?)$/);
    expect(xTicks.join(' ')).not.toMatch(/AM|PM/);
    const days = xTicks.map((l) => l.slice(-10)).sort();
    expect(days[0]! < '2024-01-15').toBe(true);
    expect(days.at(-1)! > '2024-04-15').toBe(true);
    expect((await hashParams()).get('metrics')).toBe('ch.big');
    await shot('c1-million-points-four-months');
  });

  it('gives the y-axis room for values above 10,000, shown compactly', async () => {
    const yTicks = JSON.parse((await page.getAttribute('#chart', 'data-y-ticks'))!) as string[];
    const axisWidth = Number(await page.getAttribute('#chart', 'data-y-axis-width'));
    expect(yTicks.some((l) => /^\d+(\.\d+)?[KM]$/.test(l))).toBe(true);
    for (const l of yTicks) expect(l).not.toMatch(/^0,000$/);
    // Each label, measured in the axis font, fits the axis beside its tick.
    const widths = await page.evaluate<number[]>(`(() => {
      const ctx = document.createElement('canvas').getContext('2d');
      ctx.font = '12px system-ui, sans-serif';
      return ${JSON.stringify(yTicks)}.map((l) => ctx.measureText(l).width);
    })()`);
    for (const w of widths) expect(w + 10).toBeLessThanOrEqual(axisWidth);
    // The plot starts right of the labels: nothing of them lies under it.
    const plotLeft = await page.locator('#chart .u-over').evaluate((el) => (el as unknown as { offsetLeft: number }).offsetLeft);
    expect(plotLeft).toBeGreaterThanOrEqual(Math.max(...widths));
  });

  it('lists the charted points in a table, with a download of the same view', async () => {
    await page.click('#chart-table-box summary');
    const drawn = Number(/\(([\d,]+) drawn per series\)/.exec((await status())!)![1]!.replaceAll(',', ''));
    expect(await page.locator('#chart-rows tr').count()).toBe(drawn);
    const first = await page.locator('#chart-rows tr').first().locator('td').allTextContents();
    expect(first.slice(0, 2)).toEqual(['2024-01-01T00:00:00Z', 'ch.big']);
    const href = new URL((await page.getAttribute('#chart-download', 'href'))!, api.url);
    expect(href.pathname).toBe('/api/v1/metrics/download');
    expect(Object.fromEntries(href.searchParams)).toEqual({
      metrics: 'ch.big',
      pattern: 'single',
      start_date: '2024-01-01T00:00:00+0000',
      end_date: new Date(LAST)
        .toISOString()
        .replace('.000Z', '+0000')
        .replace(/\.(\d{3})Z$/, '.$1+0000'),
      file_format: 'csv',
      max_rows: String(BIG),
    });
  });

  it('zooms into a dragged stretch, keeps it in the address bar, and Back returns', async () => {
    const over = (await page.locator('#chart .u-over').boundingBox())!;
    const before = await status();
    await page.mouse.move(over.x + over.width * 0.4, over.y + over.height / 2);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.45, over.y + over.height / 2, { steps: 5 });
    await page.mouse.up();
    await expect.poll(status).not.toBe(before);
    await expect.poll(status).toMatch(/^1 series from 2024-02-1\dT/);
    const zoomed = await hashParams();
    const from = Date.parse(zoomed.get('from')!);
    const to = Date.parse(zoomed.get('to')!);
    // A twentieth of four months is about six days.
    expect((to - from) / 86_400_000).toBeGreaterThan(4);
    expect((to - from) / 86_400_000).toBeLessThan(8);
    expect(await page.inputValue('#chart-from')).toBe(zoomed.get('from'));
    // Drawn at full width again, from the api, in finer steps.
    const blue = await paintedColumns(BLUE);
    expect(blue.columns.at(-1)! - blue.columns[0]!).toBeGreaterThan(blue.width * 0.95);
    await shot('c2-zoomed');
    await page.goBack();
    await expect.poll(status).toBe(before);
    expect((await hashParams()).get('from')).toBeNull();
  });

  it('picks relative ranges ending at the last point, and opens a shared view', async () => {
    await page.click('#chart-presets button[data-last="7d"]');
    await expect.poll(status).toMatch(new RegExp(`^1 series from ${new Date(LAST - 7 * 86_400_000 + 1).toISOString().slice(0, 16)}`));
    expect((await hashParams()).get('last')).toBe('7d');
    const shared = await page.evaluate<string>('location.href');
    await page.goto('about:blank');
    await page.goto(shared);
    await expect.poll(status, { timeout: 30_000 }).toMatch(new RegExp(`^1 series from ${new Date(LAST - 7 * 86_400_000 + 1).toISOString().slice(0, 16)}`));
    expect(await page.locator('#chart-presets button.active').getAttribute('data-last')).toBe('7d');
  });

  it('draws two series of a pattern on one chart, each toggled from the legend', async () => {
    await page.fill('#chart-metrics', 'ch.two.');
    await page.selectOption('#chart-pattern', 'starts_with');
    await page.fill('#chart-from', '');
    await page.fill('#chart-to', '');
    await page.click('#chart-form button[type=submit]');
    await expect.poll(status).toMatch(/^2 series from/);
    const legend = page.locator('#chart .u-legend .u-series');
    expect(await legend.allTextContents()).toEqual([
      expect.stringContaining('Time (UTC)'),
      expect.stringContaining('ch.two.a'),
      expect.stringContaining('ch.two.b'),
    ]);
    expect((await paintedColumns(BLUE)).columns.length).toBeGreaterThan(300);
    expect((await paintedColumns(ORANGE)).columns.length).toBeGreaterThan(300);
    await shot('c3-two-series');
    await legend.nth(2).locator('.u-label').click();
    await expect.poll(async () => (await paintedColumns(ORANGE)).columns.length).toBe(0);
    expect((await paintedColumns(BLUE)).columns.length).toBeGreaterThan(300);
    await legend.nth(2).locator('.u-label').click();
    await expect.poll(async () => (await paintedColumns(ORANGE)).columns.length).toBeGreaterThan(300);
    if (!(await page.locator('#chart-table-box').evaluate((d) => (d as unknown as { open: boolean }).open))) await page.click('#chart-table-box summary');
    expect(await page.locator('#chart-rows tr').count()).toBeGreaterThan(2 * 100); // both series' steps
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#chart-download')]);
    const saved = await readFile(await download.path(), 'utf8');
    expect(saved.trimEnd().split('\n')).toHaveLength(1 + 4000);
    const direct = await fetch(new URL((await page.getAttribute('#chart-download', 'href'))!, api.url), { headers: { Authorization: `Bearer ${analyst}` } });
    expect(saved).toBe(await direct.text());
  });

  it("follows the window's width", async () => {
    const wide = (await page.locator('#chart canvas').boundingBox())!.width;
    await page.setViewportSize({ width: 800, height: 900 });
    await expect.poll(async () => (await page.locator('#chart canvas').boundingBox())!.width).toBeLessThan(wide - 300);
    await page.setViewportSize({ width: 1200, height: 900 });
    await expect.poll(async () => (await page.locator('#chart canvas').boundingBox())!.width).toBeGreaterThan(wide - 5);
  });

  it('shows errors in the error colour and clears them at the next action', async () => {
    await page.fill('#chart-from', 'not a date');
    await page.click('#chart-form button[type=submit]');
    const error = page.locator('#chart-error');
    await expect.poll(() => error.textContent()).toMatch(/start_date/);
    expect(await page.evaluate<string>("getComputedStyle(document.getElementById('chart-error')).color")).toBe(ERROR_RED);
    expect(await status()).toBe('');
    await shot('c4-error');
    await page.click('#chart-presets button[data-last="all"]');
    await expect.poll(() => error.textContent()).toBe('');
    await expect.poll(status).toMatch(/^2 series from/);
    // A metric the caller may not read: the same words as one that does not exist.
    await page.fill('#chart-metrics', 'secret.x');
    await page.selectOption('#chart-pattern', 'single');
    await page.click('#chart-form button[type=submit]');
    await expect.poll(() => error.textContent()).toBe('No such metric, or not one you may read.');
  });

  it('serves its icon, and fetched nothing from elsewhere', async () => {
    const icon = await fetch(`${api.url}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/x-icon');
    const bytes = Buffer.from(await icon.arrayBuffer());
    expect([...bytes.subarray(0, 4)]).toEqual([0, 0, 1, 0]); // an ICO header
    expect(await page.evaluate('window.cspViolations')).toEqual([]);
    expect(offOrigin).toEqual([]);
    expect(problems).toEqual([]);
  });
});
