import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { clickhouse } from '../support/clickhouse.ts';
import { BLUE, openConsoleBrowser, ORANGE, paintedColumns, signInToConsole, type ConsoleBrowser } from '../support/console-browser.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * The console's PromQL box in Debian's chromium: an expression over two labelled series drawn
 * as two lines of one chart, each in its colour, the legend naming both canonically; the range
 * picker and the step it implies; the table of an instant query; Prometheus' error message for
 * a query that does not parse and for an unsupported function. A series the key may not read
 * never shows.
 */
const settings = isolatedSettings();
let api: RunningApi;
let browser: ConsoleBrowser;
let page: Page;
let analyst: string;

const STEP_MS = 60_000;
const POINTS = 180;
// The last point a minute before the test starts: inside every range the box offers.
const FIRST = Math.floor(Date.now() / STEP_MS) * STEP_MS - POINTS * STEP_MS;
const A = 'cq_req{job="a"}';
const B = 'cq_req{job="b"}';

/** Writes POINTS points of a test-made series name (no user text) into the run's points table. */
async function seed(name: string, perStep: number): Promise<void> {
  if (!/^[a-z_]+\{job="[a-z]"\}$/.test(name)) throw new Error(`a test series name, not ${name}`);
  await clickhouse(
    settings,
    `INSERT INTO points SELECT '${name}', ${FIRST} + number * ${STEP_MS}, toFloat64(number * ${perStep}), ${FIRST}, 'test-seed', 65535, 0, toUInt32(number) FROM numbers(${POINTS})`,
  );
}

beforeAll(async () => {
  api = await startApi(settings);
  const admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  analyst = await createUser(api.url, admin, 'analyst', [{ match: 'prefix', value: 'cq_', access: 'r' }]);
  await seed(A, 10);
  await seed(B, 20);
  // The same metric name, not readable by the analyst: it must not show.
  await seed('cx_req{job="c"}', 30);
  // The Prometheus API's 400 and 422 below are asked for; any other failed request is a bug of the page.
  browser = await openConsoleBrowser(api.url, { viewport: { width: 1200, height: 1000 }, asked: (url) => url.includes('/prometheus/api/v1/') });
  ({ page } = browser);
  await signInToConsole(page, api.url, analyst);
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await api?.close();
});

const status = () => page.textContent('#query-status');
const error = () => page.textContent('#query-error');

/** Types an expression and runs it; the form parameters the page sent. */
async function run(query: string): Promise<URLSearchParams> {
  await page.fill('#query-expr', query);
  const [request] = await Promise.all([
    page.waitForRequest((r) => r.url().includes('/prometheus/api/v1/query')),
    page.click('#query-form button[type=submit]'),
  ]);
  return new URLSearchParams(request.postData() ?? '');
}

/** Prometheus' own error message for a query, straight from the api. */
async function apiError(query: string): Promise<{ status: number; error: string }> {
  const res = await call(`${api.url}/prometheus/api/v1/query?${new URLSearchParams({ query })}`, analyst);
  return { status: res.status, error: res.json.error as string };
}

describe("the console's PromQL box", () => {
  it('draws two series on one chart, one colour each, the legend naming them canonically', async () => {
    await page.selectOption('#query-range', '6h');
    const sent = await run('cq_req');
    expect(Number(sent.get('end')) - Number(sent.get('start'))).toBe(6 * 3600);
    // The step from the range: 6 h over a chart about 1,100 pixels wide is 30 s.
    expect(sent.get('step')).toBe('30');
    await expect.poll(status, { timeout: 30_000 }).toMatch(/^2 series from .* step 30 s/);
    expect(await page.getAttribute('#query-chart', 'data-series')).toBe('2');
    const legend = page.locator('#query-chart .u-legend .u-series .u-label');
    expect(await legend.allTextContents()).toEqual(['Time (UTC)', A, B]);
    const blue = await paintedColumns(page, '#query-chart', BLUE);
    const orange = await paintedColumns(page, '#query-chart', ORANGE);
    // Three hours of points in a six-hour range: each line across the later half of the plot.
    for (const painted of [blue, orange]) {
      expect(painted.columns.length).toBeGreaterThan(painted.width * 0.4);
      expect(painted.columns.length).toBeLessThan(painted.width * 0.6);
      expect(painted.columns[0]).toBeGreaterThan(painted.width * 0.4);
    }
    await browser.shot('q1-two-series', false);
  });

  it('draws what a function answers, named by its labels', async () => {
    await page.selectOption('#query-range', '1h');
    const sent = await run('rate(cq_req[5m]) * 60');
    expect(Number(sent.get('end')) - Number(sent.get('start'))).toBe(3600);
    expect(sent.get('step')).toBe('5');
    await expect.poll(status, { timeout: 30_000 }).toMatch(/^2 series from/);
    expect(await page.locator('#query-chart .u-legend .u-series .u-label').allTextContents()).toEqual(['Time (UTC)', '{job="a"}', '{job="b"}']);
  });

  it('takes a custom range and step', async () => {
    await page.selectOption('#query-range', 'custom');
    await page.fill('#query-from', new Date(FIRST).toISOString());
    await page.fill('#query-to', String((FIRST + 60 * STEP_MS) / 1000));
    await page.fill('#query-step', '5m');
    const sent = await run('sum(cq_req)');
    expect(sent.get('start')).toBe(String(FIRST / 1000));
    expect(sent.get('end')).toBe(String((FIRST + 60 * STEP_MS) / 1000));
    expect(sent.get('step')).toBe('300');
    await expect.poll(status, { timeout: 30_000 }).toMatch(/^1 series .* step 300 s/);
    expect(await page.locator('#query-chart .u-legend .u-series .u-label').allTextContents()).toEqual(['Time (UTC)', '{}']);
    await page.fill('#query-step', '');
    await page.selectOption('#query-range', '1h');
  });

  it('shows an instant query as a table of series and values', async () => {
    // Choosing the view runs the box's expression again.
    await page.fill('#query-expr', 'cq_req');
    await page.check('#query-view-table');
    await expect.poll(status, { timeout: 30_000 }).toMatch(/^2 series at /);
    const rows = await page
      .locator('#query-rows tr')
      .evaluateAll((trs) => trs.map((tr) => [...(tr as unknown as { cells: Iterable<{ textContent: string }> }).cells].map((c) => c.textContent)));
    // Each series' last point: number 179 times 10 and 20.
    expect(rows).toEqual([
      [A, '1790'],
      [B, '3580'],
    ]);
    expect(await page.getAttribute('#query-chart', 'data-series')).toBe('0');
    await browser.shot('q2-table', false);
    await page.check('#query-view-graph');
    await expect.poll(status, { timeout: 30_000 }).toMatch(/^2 series from/);
    expect(await page.isHidden('#query-table')).toBe(true);
  });

  it("shows Prometheus' error message for a query that does not parse, and for an unsupported function", async () => {
    const bad = 'rate(cq_req[5m]';
    await run(bad);
    const parse = await apiError(bad);
    expect(parse.status).toBe(400);
    await expect.poll(error, { timeout: 30_000 }).toBe(parse.error);
    expect(await status()).toBe('');
    expect(await page.getAttribute('#query-chart', 'data-series')).toBe('0');
    await browser.shot('q3-error', false);

    const unsupported = 'max_over_time(cq_req[10m:1m])';
    await run(unsupported);
    const answered = await apiError(unsupported);
    expect(answered.status).toBe(422);
    expect(answered.error).toMatch(/subqueries/);
    await expect.poll(error, { timeout: 30_000 }).toBe(answered.error);

    // The next good query clears the error.
    await run('cq_req');
    await expect.poll(status, { timeout: 30_000 }).toMatch(/^2 series from/);
    expect(await error()).toBe('');
  });

  it('reached nothing but the api, broke no policy and logged no error', async () => {
    expect(await page.evaluate('window.cspViolations')).toEqual([]);
    expect(browser.offOrigin).toEqual([]);
    expect(browser.problems).toEqual([]);
  });
});
