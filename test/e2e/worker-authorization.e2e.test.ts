import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';

/**
 * The worker decides authorization again when it reaches an upload, on the accounts log read
 * to its end: a name the caller may not write fails the whole upload (whatever on_error), and
 * what a user queued before being disabled is not stored. The worker lives on after both.
 */
const settings = isolatedSettings();
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>> | undefined;
let root: string;

const iso = (i: number) => formatTimestamp(Date.UTC(2024, 0, 1) + i * 1000);

async function uploadFile(key: string, body: string, query: Record<string, string> = {}): Promise<string> {
  const form = new FormData();
  form.set('file', new Blob([body]), 'points.csv');
  const res = await fetch(`${api.url}/api/v1/metrics_file_upload?${new URLSearchParams(query)}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}` },
    body: form,
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { task_id: string }).task_id;
}

/** The CSV lines of a download of every metric under `prefix`, as an admin sees it (header left out). */
async function downloaded(prefix: string): Promise<string[]> {
  const res = await fetch(`${api.url}/api/v1/metrics/download?${new URLSearchParams({ metrics: prefix, pattern: 'starts_with', max_rows: '1000' })}`, {
    headers: { Authorization: `Bearer ${root}` },
  });
  expect(res.status).toBe(200);
  return (await res.text())
    .split('\n')
    .slice(1)
    .filter((l) => l !== '');
}

/** A good upload by another user is stored: the worker is alive and its partitions move. */
async function expectWorkerAlive(key: string, metric: string): Promise<void> {
  const task = await waitForTask(api.url, key, await uploadFile(key, `${iso(1)},1\n${iso(2)},2\n`, { metric_name: metric }));
  expect(task.status).toBe('succeeded');
  expect(await downloaded(metric)).toHaveLength(2);
}

beforeAll(async () => {
  api = await startApi(settings);
  root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('authorization in the worker', () => {
  it('an upload queued by a user who is disabled before the worker reaches it fails, and nothing is stored', async () => {
    const gone = await createUser(api.url, root, 'gone', [{ match: 'prefix', value: 'wa.gone.', access: 'rw' }]);
    const other = await createUser(api.url, root, 'other', [{ match: 'prefix', value: 'wa.other.', access: 'rw' }]);
    // No worker yet: the upload waits in the queue while its user is disabled.
    const taskId = await uploadFile(gone, `${iso(1)},1\n${iso(2)},2\n`, { metric_name: 'wa.gone.a' });
    expect((await call(`${api.url}/api/v1/users/gone`, root, { method: 'DELETE' })).status).toBe(204);
    ingest = await startWorker(settings);

    const task = await waitForTask(api.url, root, taskId);
    expect(task).toMatchObject({ status: 'failed', reason: 'the account that sent it is disabled; the upload was not stored', result: null });
    expect(await downloaded('wa.gone.')).toEqual([]);
    await expectWorkerAlive(other, 'wa.other.after-disabled');
  });

  it('a per-row upload fails at the first name the caller may not write, even with on_error=skip, and stores nothing', async () => {
    const writer = await createUser(api.url, root, 'writer', [
      { match: 'prefix', value: 'wa.w.', access: 'rw' },
      { match: 'prefix', value: 'wa.ro.', access: 'r' },
    ]);
    ingest ??= await startWorker(settings);
    const rows = [
      `wa.w.a,${iso(1)},1,${iso(1)}`,
      `wa.w.b,${iso(2)},2,${iso(2)}`,
      `wa.ro.c,${iso(3)},3,${iso(3)}`, // row 4 of the file: read access only
      `elsewhere,${iso(4)},4,${iso(4)}`,
      `wa.w.a,${iso(5)},5,${iso(5)}`,
    ];
    const body = `metric_name,timestamp,metric_numeric_value,updated_at\n${rows.join('\n')}\n`;
    for (const on_error of ['skip', 'fail']) {
      const task = await waitForTask(api.url, writer, await uploadFile(writer, body, { on_error }));
      expect(task, on_error).toMatchObject({
        status: 'failed',
        reason: 'row 4: no write access to the metric "wa.ro.c"; the upload was not stored',
        errors: [{ row: 4, column: 'metric_name', reason: 'no write access to this metric' }],
      });
    }
    expect(await downloaded('wa.w.')).toEqual([]);
    await expectWorkerAlive(writer, 'wa.w.after-refusal');
  });
});
