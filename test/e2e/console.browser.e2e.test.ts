import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { formatTimestamp } from '@meridian/domain';
import { openConsoleBrowser, type ConsoleBrowser } from '../support/console-browser.ts';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';

/**
 * The console (/console) in Debian's chromium driven by playwright-core, as /docs is tested:
 * the browser reaches nothing but the api under test (no DNS, a dead proxy, every other origin
 * aborted and recorded). Each test saves a screenshot under .var/test-output/console/.
 */
const settings = isolatedSettings();
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let browser: ConsoleBrowser;
let context: BrowserContext;
let analyst: string;
let page: Page;
let offOrigin: string[];
let problems: string[];

const T0 = Date.UTC(2024, 0, 1);
const WAVE_POINTS = 500;

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  analyst = await createUser(api.url, admin, 'analyst', [{ match: 'prefix', value: 'con.', access: 'rw' }]);
  const uploads = {
    'con.wave': Array.from({ length: WAVE_POINTS }, (_, i) => ({ timestamp: formatTimestamp(T0 + i * 60_000), value: Math.sin(i / 20) * 10 + i / 50 })),
    'con.flat': [{ timestamp: formatTimestamp(T0), value: 1 }],
    'secret.wave': [{ timestamp: formatTimestamp(T0), value: 1 }],
  };
  for (const [metric, values] of Object.entries(uploads)) {
    const res = await call(`${api.url}/api/v1/metrics/upload`, admin, { method: 'POST', body: { metric_name: metric, values } });
    expect(res.status, res.text).toBe(202);
    expect((await waitForTask(api.url, admin, res.json.task_id, 120_000)).status).toBe('succeeded');
  }

  browser = await openConsoleBrowser(api.url, { viewport: { width: 1200, height: 1000 } });
  ({ context, page, offOrigin, problems } = browser);
}, 240_000);
afterAll(async () => {
  await browser?.close();
  await ingest?.close();
  await api?.close();
});

const shot = (name: string) => browser.shot(name);

// The tests run in order on one page, as a user would: sign in, search, chart, download, upload.
describe('the console in a headless browser', () => {
  it('signs in with an API key held in sessionStorage only', async () => {
    const response = await page.goto(`${api.url}/console`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toMatch(/default-src 'none'/);
    expect(await page.title()).toBe('Meridian console');
    await page.fill('#api-key', 'not-a-key');
    await page.click('#sign-in-form button[type=submit]');
    await expect.poll(() => page.textContent('#sign-in-error')).toMatch(/not accepted/);
    problems.length = 0; // the refused key's 401 is logged by the browser, as it should be

    await page.fill('#api-key', analyst);
    await page.click('#sign-in-form button[type=submit]');
    await page.locator('#app').waitFor({ state: 'visible' });
    await page.locator('#metric-rows tr').first().waitFor();
    expect(await page.evaluate('sessionStorage.getItem("meridian.apiKey")')).toBe(analyst);
    expect(await page.evaluate('localStorage.length')).toBe(0);
    expect(await context.cookies()).toEqual([]);
    expect(await page.textContent('#who')).toBe('Signed in as analyst');
    // Only the metrics the key may read.
    expect(
      await page.locator('#metric-rows tr').evaluateAll((rows) => rows.map((r) => (r as unknown as { dataset: { metric: string } }).dataset.metric)),
    ).toEqual(['con.flat', 'con.wave']);
    await shot('1-signed-in');
  });

  it('finds a metric by pattern, with its count and first and last timestamps', async () => {
    await page.selectOption('#search-pattern', 'ends_with');
    await page.fill('#search-text', '.wave');
    await page.click('#search-form button[type=submit]');
    await expect.poll(() => page.locator('#metric-rows tr').count()).toBe(1);
    const cells = await page.locator('#metric-rows tr td').allTextContents();
    expect(cells).toEqual(['con.wave', WAVE_POINTS.toLocaleString('en'), formatTimestamp(T0), formatTimestamp(T0 + (WAVE_POINTS - 1) * 60_000)]);
    await shot('2-search');
  });

  it('draws the chosen metric over its range', async () => {
    await page.click('#metric-rows tr button');
    await expect
      .poll(() => page.textContent('#chart-status'))
      .toMatch(
        new RegExp(
          `^1 series from ${formatTimestamp(T0).replace('+', '\\+')} to ${formatTimestamp(T0 + (WAVE_POINTS - 1) * 60_000).replace('+', '\\+')}: ${WAVE_POINTS} points in steps of `,
        ),
      );
    // uPlot draws on a canvas: the series' blue stroke is there in pixels.
    const painted = await page.evaluate<{ width: number; height: number; blue: number }>(`(() => {
      const canvas = document.querySelector('#chart canvas');
      const { data } = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height);
      let blue = 0;
      for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0 && data[i + 2] > 150 && data[i] < 80) blue++;
      return { width: canvas.width, height: canvas.height, blue };
    })()`);
    expect(painted.width).toBeGreaterThan(0);
    expect(painted.blue).toBeGreaterThan(500);
    await shot('3-chart');
  });

  it("downloads a CSV equal to the API's bytes, and shows the equivalent curl and CLI commands", async () => {
    await page.fill('#dl-max-rows', '1000');
    await page.selectOption('#dl-format', 'csv');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#builder-form button[type=submit]')]);
    expect(download.suggestedFilename()).toBe('con.wave.csv');
    const saved = await readFile(await download.path());
    const direct = await fetch(`${api.url}/api/v1/metrics/download?metrics=con.wave&max_rows=1000`, { headers: { Authorization: `Bearer ${analyst}` } });
    const expected = Buffer.from(await direct.arrayBuffer());
    expect(saved.toString().split('\n')).toHaveLength(WAVE_POINTS + 2); // header, rows, the final newline
    expect(saved.equals(expected)).toBe(true);
    const curl = await page.textContent('#dl-curl');
    expect(curl).toContain(
      `curl -fG '${api.url}/api/v1/metrics/download' -H "Authorization: Bearer $MERIDIAN_API_KEY" --data-urlencode 'metrics=con.wave' --data-urlencode 'pattern=single'`,
    );
    expect(curl).not.toContain(analyst);
    expect(await page.textContent('#dl-cli')).toContain(`meridian download --metrics 'con.wave' --pattern single --from '${formatTimestamp(T0)}'`);
    await shot('4-download');
  });

  it('uploads a dropped file with progress and follows its task to success', async () => {
    const bytes = 'a,b\n1,2\n'.repeat(20_000);
    // A drop as the browser makes it: a DataTransfer holding a File.
    const transfer = await page.evaluateHandle(`(() => {
      const t = new DataTransfer();
      t.items.add(new File([${JSON.stringify(bytes)}], 'dropped été.csv', { type: 'text/csv' }));
      return t;
    })()`);
    await page.locator('#drop-zone').dispatchEvent('drop', { dataTransfer: transfer });
    const item = page.locator('#uploads li').first();
    await expect.poll(() => item.textContent(), { timeout: 30_000 }).toMatch(/accepted, task/);
    const progress = await item.locator('progress').evaluate((p) => [(p as unknown as { value: number }).value, (p as unknown as { max: number }).max]);
    expect(progress[0]).toBe(progress[1]);
    expect(progress[1]).toBeGreaterThan(bytes.length); // the whole multipart body was sent
    const taskId = await item.getAttribute('data-task-id');
    const row = page.locator(`#task-rows tr[data-task-id="${taskId}"]`);
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 120_000 }).toBe('succeeded');
    const fileRow = page.locator('#file-rows tr', { hasText: 'dropped été.csv' });
    await fileRow.waitFor({ timeout: 30_000 });
    const [download] = await Promise.all([page.waitForEvent('download'), fileRow.getByRole('button', { name: 'Download' }).click()]);
    expect(download.suggestedFilename()).toBe('dropped été.csv');
    expect(await readFile(await download.path(), 'utf8')).toBe(bytes);
    await shot('5-upload');
  });

  it("shows full task ids with a copy button, a file task's size, and the file's size, share and delete", async () => {
    const item = page.locator('#uploads li').first();
    const taskId = (await item.getAttribute('data-task-id'))!;
    const row = page.locator(`#task-rows tr[data-task-id="${taskId}"]`);
    expect(await row.locator('code.task-id').textContent()).toBe(taskId);
    expect(taskId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(api.url).origin });
    await row.locator('button.copy').click();
    await expect.poll(() => page.evaluate('navigator.clipboard.readText()')).toBe(taskId);
    // A stored file is no count of rows: the bar is full once it succeeded, beside its size.
    const bytes = 'a,b\n1,2\n'.repeat(20_000).length;
    const progress = row.locator('td').nth(3);
    expect(await progress.locator('progress').evaluate((p) => [(p as unknown as { value: number }).value, (p as unknown as { max: number }).max])).toEqual([
      1, 1,
    ]);
    expect((await progress.textContent())!.trim()).toBe(`${(bytes / 1024).toFixed(0)} KiB`);

    const fileRow = page.locator('#file-rows tr', { hasText: 'dropped été.csv' });
    await expect.poll(() => fileRow.locator('td.size').getAttribute('data-bytes')).toBe(String(bytes));
    const fileId = (await fileRow.getAttribute('data-file-id'))!;
    await fileRow.locator('button.share').click();
    await fileRow.locator('.share-form input').fill('friend');
    await fileRow.locator('.share-form select').selectOption('r');
    await fileRow.locator('.share-form button[type=submit]').click();
    await expect.poll(() => page.textContent('#files-status')).toBe('dropped été.csv is shared with friend (r).');
    const detail = await fetch(`${api.url}/api/v1/files/${fileId}`, { headers: { Authorization: `Bearer ${analyst}` } });
    expect(((await detail.json()) as { shared_with: unknown[] }).shared_with).toEqual([{ user_name: 'friend', access: 'r' }]);
    await shot('5b-files');

    page.once('dialog', (d) => void d.accept());
    await fileRow.locator('button.delete').click();
    await expect.poll(() => page.textContent('#files-status')).toBe('dropped été.csv was deleted.');
    await expect.poll(() => page.locator(`#file-rows tr[data-file-id="${fileId}"]`).count()).toBe(0);
    expect((await fetch(`${api.url}/api/v1/files/${fileId}`, { headers: { Authorization: `Bearer ${analyst}` } })).status).toBe(404);
  });

  it('uploads a points file chosen with the file picker, and the new metric joins the list', async () => {
    await page.selectOption('#upload-kind', 'points');
    await page.fill('#upload-metric', 'con.new');
    const csv = [0, 1, 2].map((i) => `${formatTimestamp(T0 + i * 1000)},${i * 1.5}`).join('\n');
    await page.setInputFiles('#file-input', { name: 'points.csv', mimeType: 'text/csv', buffer: Buffer.from(`timestamp,value\n${csv}\n`) });
    const item = page.locator('#uploads li', { hasText: 'points.csv' });
    await expect.poll(() => item.textContent(), { timeout: 30_000 }).toMatch(/accepted, task/);
    const row = page.locator(`#task-rows tr[data-task-id="${await item.getAttribute('data-task-id')}"]`);
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 120_000 }).toBe('succeeded');
    expect(await row.locator('td').nth(5).textContent()).toBe('3 points, 0 rows rejected');
    await page.selectOption('#search-pattern', 'contains');
    await page.fill('#search-text', 'new');
    await page.click('#search-form button[type=submit]');
    await expect.poll(() => page.locator('#metric-rows tr td').allTextContents()).toEqual(['con.new', '3', formatTimestamp(T0), formatTimestamp(T0 + 2000)]);
    await shot('6-points-upload');
  });

  it('serves its files from a fixed list, under the same self-only policy as /docs', async () => {
    for (const [asset, type] of [
      ['console.js', /javascript/],
      ['console.css', /css/],
      ['uPlot.esm.js', /javascript/],
      ['uPlot.min.css', /css/],
    ] as const) {
      const res = await fetch(`${api.url}/console/${asset}`);
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('content-type')).toMatch(type);
    }
    for (const probe of ['/console/..%2Fpackage.json', '/console/index.html', '/console/uPlot.cjs.js', '/console/%2E%2E%2F%2E%2E%2Fpackage.json']) {
      expect((await fetch(`${api.url}${probe}`)).status, probe).toBe(404);
    }
    const policy = (await fetch(`${api.url}/console`)).headers.get('content-security-policy');
    const docs = (await fetch(`${api.url}/docs`)).headers.get('content-security-policy');
    expect(policy).toBe(docs);
  });

  it('fetched nothing from elsewhere and broke no rule of its policy', async () => {
    expect(await page.evaluate('window.cspViolations')).toEqual([]);
    expect(offOrigin).toEqual([]);
    expect(problems).toEqual([]);
  });
});
