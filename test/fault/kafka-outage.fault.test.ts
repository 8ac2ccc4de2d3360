import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { onLocalStack, startService, stopService } from '../support/stack.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

const settings = isolatedSettings({ MERIDIAN_KAFKA_ACK_TIMEOUT_MS: '3000', MERIDIAN_READY_TIMEOUT_MS: '1500' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let writer: string;

const upload = (metric: string, i: number, headers: Record<string, string> = {}) =>
  call(`${api.url}/api/v1/metrics/upload`, writer, {
    method: 'POST',
    headers,
    body: { metric_name: metric, values: [{ timestamp: formatTimestamp(Date.UTC(2024, 0, 1) + i), value: i }] },
  });

async function uploadFile(metric: string, key: string) {
  const form = new FormData();
  form.set('file', new Blob([`${formatTimestamp(Date.UTC(2024, 0, 2))},11\n${formatTimestamp(Date.UTC(2024, 0, 3))},12\n`]), 'points.csv');
  const res = await fetch(`${api.url}/api/v1/metrics_file_upload?metric_name=${metric}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${writer}`, 'Idempotency-Key': key },
    body: form,
  });
  return { status: res.status, json: (await res.json()) as { task_id: string } };
}

async function defineFile() {
  const form = new FormData();
  form.set('file', new Blob(['a,b\n1,2\n']), 'outage.csv');
  return fetch(`${api.url}/api/v1/file/new`, { method: 'POST', headers: { Authorization: `Bearer ${writer}` }, body: form });
}

async function stagedObjects(prefix: string): Promise<string[]> {
  const names: string[] = [];
  for await (const o of api.platform.storage.client.listObjectsV2(api.platform.storage.bucket, prefix, true)) if (o.name) names.push(o.name);
  return names;
}

describe.runIf(onLocalStack())('Kafka outage', () => {
  beforeAll(async () => {
    api = await startApi(settings);
    ingest = await startWorker(settings);
    const root = await bootstrapAdmin(settings);
    await api.api.accounts.syncToEnd();
    writer = await createUser(api.url, root, 'writer', [{ match: 'prefix', value: 'ko.', access: 'rw' }]);
  });
  afterAll(async () => {
    await startService('kafka');
    await ingest?.close();
    await api?.close();
  });

  it('uploads and file definitions get 503 problem+json while Kafka is down, /readyz names it, and everything works again after', async () => {
    const before = await upload('ko.before', 1);
    expect(before.status).toBe(202);
    expect((await waitForTask(api.url, writer, before.json.task_id)).status).toBe('succeeded');

    await stopService('kafka');
    try {
      const during = await upload('ko.during', 2, { 'Idempotency-Key': 'during-1' });
      expect(during.status).toBe(503);
      expect(during.headers.get('content-type')).toMatch(/problem\+json/);
      expect(during.json).toMatchObject({ type: '/problems/unavailable', status: 503 });
      expect(during.text).not.toMatch(/KafkaJS|at .*\.ts/);
      const ready = await call(`${api.url}/readyz`, null);
      expect(ready.status).toBe(503);
      expect(ready.json.checks.kafka.status).toBe('down');
      expect((await call(`${api.url}/healthz`, null)).status).toBe(200);
      // What was accepted before stays readable while the log is away.
      expect((await call(`${api.url}/api/v1/tasks/${before.json.task_id}`, writer)).json.status).toBe('succeeded');
      // A metrics file and a file definition are refused alike: 503, nothing accepted.
      const staged = await uploadFile('ko.file', 'file-1');
      expect(staged.status).toBe(503);
      const defined = await defineFile();
      expect(defined.status).toBe(503);
      expect(await stagedObjects('staging/files/')).toEqual([]);
    } finally {
      await startService('kafka');
    }

    await waitFor('the api to be ready again', async () => ((await call(`${api.url}/readyz`, null)).status === 200 ? true : undefined), 90_000, 500);
    // The client retries its refused upload with the same key: it is stored exactly once.
    const retried = await waitFor(
      'the retried upload to be accepted',
      async () => {
        const r = await upload('ko.during', 2, { 'Idempotency-Key': 'during-1' });
        return r.status === 202 ? r : undefined;
      },
      60_000,
      500,
    );
    const again = await upload('ko.during', 2, { 'Idempotency-Key': 'during-1' });
    expect(again.json.task_id).toBe(retried.json.task_id);
    expect((await waitForTask(api.url, writer, retried.json.task_id, 120_000)).status).toBe('succeeded');
    // The refused file upload retried with its key: stored once, from the bytes of the retry.
    const file = await waitFor(
      'the retried file upload',
      async () => {
        const r = await uploadFile('ko.file', 'file-1');
        return r.status === 202 ? r : undefined;
      },
      60_000,
      500,
    );
    expect(await waitForTask(api.url, writer, file.json.task_id, 120_000)).toMatchObject({ status: 'succeeded', result: { points_accepted: 2 } });
    expect((await defineFile()).status).toBe(202);
    const after = await upload('ko.after', 3);
    expect(after.status).toBe(202);
    expect((await waitForTask(api.url, writer, after.json.task_id, 120_000)).status).toBe('succeeded');
    const tasks = (await call(`${api.url}/api/v1/tasks?limit=1000`, writer)).json.tasks as Array<{ result: { metrics?: string[] } | null }>;
    const during = tasks.filter((t) => t.result?.metrics?.includes('ko.during'));
    expect(during).toHaveLength(1);
    const stored = await fetch(
      `${settings.CLICKHOUSE_URL}/?database=${settings.CLICKHOUSE_DATABASE}&query=${encodeURIComponent('SELECT count() FROM points WHERE task_id IN (SELECT task_id FROM points WHERE value = 2)')}`,
    );
    expect((await stored.text()).trim()).toBe('1'); // the refused-then-retried point, once
  });
});
