import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { startApp, type AppProcess } from '../support/processes.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

const settings = isolatedSettings();
let api: RunningApi;
let ingest: AppProcess;
let writer: string;

/**
 * The bomb: `{"values":[`, 6 GiB of spaces, `]}` as one gzip file of 6.26 MB. Built as
 * gzip members (gunzip reads them as one stream): 96 copies of one 64 MiB member of spaces.
 */
function issueBomb(): Buffer {
  const spaces = gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20));
  return Buffer.concat([gzipSync('{"values":['), ...Array.from({ length: 96 }, () => spaces), gzipSync(']}')]);
}

async function uploadFile(body: Buffer | string, metric: string | null, to = { api: () => api, key: () => writer }) {
  const form = new FormData();
  form.set('file', new Blob([body]), 'points');
  const qs = metric === null ? '' : `?metric_name=${encodeURIComponent(metric)}`;
  const res = await fetch(`${to.api().url}/api/v1/metrics_file_upload${qs}`, { method: 'POST', headers: { Authorization: `Bearer ${to.key()}` }, body: form });
  expect(res.status).toBe(202);
  return ((await res.json()) as { task_id: string }).task_id;
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = startApp('ingest', settings);
  const root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  writer = await createUser(api.url, root, 'writer', [{ match: 'prefix', value: 'bounds.', access: 'rw' }]);
});
afterAll(async () => {
  await ingest?.stop();
  await api?.close();
});

describe('upload bounds in the real ingest process', () => {
  it('the gzip JSON bomb fails its task with the expansion reason, the worker lives on, and the next upload succeeds', async () => {
    const pid = ingest.child.pid;
    const bomb = issueBomb();
    expect(bomb.length).toBeLessThan(6_300_000);

    const bombTask = await waitForTask(api.url, writer, await uploadFile(bomb, null));
    expect(bombTask.status).toBe('failed');
    expect(bombTask.reason).toMatch(
      /^the upload expands to more than 200× its compressed size \(MERIDIAN_MAX_EXPANSION_RATIO; stopped at (\d+) bytes from \d+\); nothing was stored$/,
    );
    // Stopped just past the 16 MiB from which the ratio applies, not after decompressing 6 GiB.
    expect(Number(/stopped at (\d+) bytes/.exec(bombTask.reason!)![1])).toBeLessThan(32 * 1024 * 1024);
    expect(bombTask.errors).toEqual([{ row: 0, column: 'row', reason: bombTask.reason }]);

    const good = await waitForTask(api.url, writer, await uploadFile('2024-01-01T00:00:00Z,1\n2024-01-01T00:00:01Z,2\n', 'bounds.after'));
    expect(good).toMatchObject({ status: 'succeeded', result: { points_accepted: 2, rows_rejected: 0 } });
    expect(ingest.child.exitCode).toBeNull();
    expect(ingest.child.signalCode).toBeNull();
    expect(ingest.child.pid).toBe(pid);
    expect(ingest.output()).not.toMatch(/heap out of memory/);
  });
});

describe('the per-upload time budget', () => {
  // A budget of 1 s, and the expansion ratio out of the way: 10M rows cannot be parsed and sent in 1 s.
  const slowSettings = isolatedSettings({ MERIDIAN_UPLOAD_TIME_BUDGET_MS: '1000', MERIDIAN_MAX_EXPANSION_RATIO: '100000' });
  let slowApi: RunningApi;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let key: string;
  const to = { api: () => slowApi, key: () => key };

  beforeAll(async () => {
    slowApi = await startApi(slowSettings);
    worker = await startWorker(slowSettings);
    const root = await bootstrapAdmin(slowSettings);
    await slowApi.api.accounts.syncToEnd();
    key = await createUser(slowApi.url, root, 'writer', [{ match: 'prefix', value: 'bounds.', access: 'rw' }]);
  });
  afterAll(async () => {
    await worker?.close();
    await slowApi?.close();
  });

  it('an upload that runs past it is aborted and its task fails naming the budget; the next upload succeeds', async () => {
    const rows = gzipSync('2024-01-01T00:00:00Z,1\n'.repeat(10_000_000));
    const slow = await waitForTask(slowApi.url, key, await uploadFile(rows, 'bounds.slow', to));
    expect(slow).toMatchObject({
      status: 'failed',
      reason: 'the upload took longer than its time budget of 1000 ms (MERIDIAN_UPLOAD_TIME_BUDGET_MS); nothing was stored',
    });
    const good = await waitForTask(slowApi.url, key, await uploadFile('2024-01-01T00:00:00Z,1\n', 'bounds.quick', to));
    expect(good).toMatchObject({ status: 'succeeded', result: { points_accepted: 1 } });
    const download = (metric: string) =>
      fetch(`${slowApi.url}/api/v1/metrics/download?metrics=${metric}`, { headers: { Authorization: `Bearer ${key}`, 'Accept-Encoding': 'identity' } });
    await waitFor('the good upload to be queryable', async () => ((await download('bounds.quick')).status === 200 ? true : undefined), 30_000);
    // The aborted upload's batches never show: its metric is still unknown.
    const slowDownload = await download('bounds.slow');
    expect(slowDownload.status, await slowDownload.text()).toBe(404);
  });
});
