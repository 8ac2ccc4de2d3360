import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi, httpServerOptions, type Api } from '@meridian/api';
import type { Settings } from '@meridian/config';
import { createLogger } from '@meridian/observability';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startFaultProxy, type FaultMode, type FaultProxy } from '../support/fault-proxy.ts';
import { serve, type Served } from '../support/http.ts';
import { startWorker } from '../support/ingest.ts';
import { createPlatform, type Platform } from '../support/platform.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { csvPoints, send, uploadFile, type Answer } from '../support/uploads.ts';

/**
 * ClickHouse failing under the api (the cluster tier's kill -9 of a replica, without the cluster): every
 * route that reads ClickHouse answers 503 problem+json with Retry-After, never 500, and the api
 * serves again once ClickHouse answers. A second api on the same logs reaches the shared
 * ClickHouse through a TCP proxy that refuses, resets or hangs up on its connections, or cuts an
 * answer mid-stream; the shared server is not touched.
 */
let settings: Settings;
let healthy: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let proxy: FaultProxy;
let platform: Platform;
let api: Api;
let served: Served;
let key: string;

const METRIC = 'chu.big';
/** Rows of the metric: its CSV download (about 1.5 MB) is far longer than the cut below. */
const ROWS = 25_000;
/**
 * Answer bytes a cut_answer connection passes: more than a catalog or plan answer here (well under
 * 1 KiB), less than the download, gzipped (about 100 KiB) or not (about 1.7 MB).
 */
const CUT_AFTER_BYTES = 16 * 1024;

beforeAll(async () => {
  settings = isolatedSettings();
  healthy = await startApi(settings); // prepares topics and tables
  ingest = await startWorker(settings);
  key = await createUser(healthy.url, await bootstrapAdmin(settings), 'ada', [{ match: 'prefix', value: 'chu.', access: 'rw' }]);
  const upload = await uploadFile(healthy.url, key, csvPoints(ROWS), { metric_name: METRIC });
  expect(upload.status, upload.text).toBe(202);
  expect((await waitForTask(healthy.url, key, upload.json.task_id, 120_000)).status).toBe('succeeded');
  proxy = await startFaultProxy(settings.CLICKHOUSE_URL);
  // One server only: with CLICKHOUSE_URLS a refused connection would fail over past the proxy.
  const behindProxy: Settings = { ...settings, CLICKHOUSE_URL: proxy.url, CLICKHOUSE_URLS: '' };
  platform = createPlatform(behindProxy, createLogger({ name: 'api', level: 'silent' }), 'api');
  api = await buildApi(platform);
  await api.start();
  served = await serve(api.app, httpServerOptions(behindProxy));
}, 180_000);

afterAll(async () => {
  await served?.close();
  await api?.stop();
  await platform?.close();
  await proxy?.close();
  await ingest?.close();
  await healthy?.close();
});

const download = `/api/v1/metrics/download?${new URLSearchParams({ metrics: METRIC, max_rows: String(ROWS * 2) })}`;
const form = new URLSearchParams({ metrics: METRIC, max_rows: String(ROWS * 2) }).toString();

/** Every route here that reads ClickHouse (the metric catalog, the plan and rows, the files and tasks read models). */
const routes: ReadonlyArray<{ name: string; request: () => Promise<Answer> }> = [
  { name: 'GET download', request: () => send(`${served.url}${download}`, { method: 'GET', key }) },
  {
    name: 'POST download',
    request: () =>
      send(`${served.url}/api/v1/metrics/download`, { method: 'POST', key, body: form, headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }),
  },
  { name: 'HEAD download', request: () => send(`${served.url}${download}`, { method: 'HEAD', key }) },
  { name: 'GET catalog', request: () => send(`${served.url}/api/v1/metrics`, { method: 'GET', key }) },
  { name: 'GET catalog of a name', request: () => send(`${served.url}/api/v1/metrics?metrics=${METRIC}`, { method: 'GET', key }) },
  { name: 'GET files', request: () => send(`${served.url}/api/v1/files`, { method: 'GET', key }) },
  { name: 'GET tasks', request: () => send(`${served.url}/api/v1/tasks`, { method: 'GET', key }) },
];

function expectUnavailable(answer: Answer, route: string) {
  const what = `${route}: ${answer.status} ${answer.text}`;
  expect(answer.status, what).toBe(503);
  expect(answer.headers['content-type'], what).toMatch(/^application\/problem\+json/);
  expect(answer.headers['retry-after'], what).toBe('1');
  if (route.startsWith('HEAD')) return; // no body
  expect(answer.json?.type, what).toBe('/problems/unavailable');
}

/** The api answers from ClickHouse again: the whole download, every row. */
async function expectServing() {
  await proxy.set('forward');
  const res = await send(`${served.url}${download}`, { method: 'GET', key });
  expect(res.status, res.text.slice(0, 500)).toBe(200);
  expect(res.text.trimEnd().split('\n')).toHaveLength(ROWS + 1);
}

describe('ClickHouse failing under the api', () => {
  it('answers every route from ClickHouse through the proxy while it forwards', async () => {
    for (const route of routes) {
      const answer = await route.request();
      expect(answer.status, `${route.name}: ${answer.text.slice(0, 300)}`).toBe(200);
    }
  });

  for (const mode of ['refuse', 'reset', 'hang_up'] satisfies FaultMode[]) {
    it(`${mode}: every route answers 503 problem+json with Retry-After, and the api serves again after`, async () => {
      await proxy.set(mode);
      for (const route of routes) expectUnavailable(await route.request(), route.name);
      await expectServing();
    });
  }

  it('cut mid-stream: a download is never a whole 200 nor a 500; the api serves again after', async () => {
    await proxy.set('cut_answer', { cutAfterBytes: CUT_AFTER_BYTES });
    const post = { method: 'POST', url: '/api/v1/metrics/download', body: form, type: { 'Content-Type': 'application/x-www-form-urlencoded' } };
    const get = { method: 'GET', url: download, body: undefined, type: {} };
    for (const [name, how, encoding] of [
      ['GET download', get, 'identity'],
      ['GET download', get, 'gzip'],
      ['POST download', post, 'identity'],
    ] as const) {
      const res = await fetch(`${served.url}${how.url}`, {
        method: how.method,
        body: how.body,
        headers: { Authorization: `Bearer ${key}`, 'Accept-Encoding': encoding, ...how.type },
      });
      const what = `${name} (${encoding})`;
      if (res.status !== 200) {
        // Cut before the first row: the status is still the api's to choose.
        const text = await res.text();
        expectUnavailable({ status: res.status, headers: Object.fromEntries(res.headers), text, json: JSON.parse(text) }, what);
        continue;
      }
      // The rows had begun, so the status was sent: the cut can only end the body early,
      // which the client must see as a failed transfer, never as a shorter download.
      await expect(res.arrayBuffer(), what).rejects.toThrow();
    }
    await expectServing();
  });
});
