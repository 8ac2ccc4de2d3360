import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp, type MetricsUploadRequested, type TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { pointsOfMetric } from '../support/clickhouse.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { taskMessages, waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';
import { incompleteUploads } from '../support/incomplete-uploads.ts';

/**
 * JSON upload bodies are staged in the bucket like files: the command on the tasks topic carries
 * only the reference, the worker reads the body from there and removes it once the task ends.
 * The api runs first on its own, so what waits in the bucket and in the log can be looked at
 * before any worker touches it.
 */
// JSON bodies of any size take the staged path here (the push path is tested in push.e2e.test.ts).
const settings = isolatedSettings({ MERIDIAN_PUSH_MAX_BYTES: '0' });
const codec = createEventCodec<TaskEvent>();
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>> | undefined;
let writer: string;

const T0 = Date.UTC(2024, 0, 1);
const points = (n: number) => Array.from({ length: n }, (_, i) => ({ timestamp: formatTimestamp(T0 + i * 1000), value: i / 4 }));

const commandMessages = (taskId: string, atLeast = 1) => taskMessages(api, settings.MERIDIAN_TOPIC_PREFIX, taskId, atLeast);

/** Keys under the staging prefix, with unfinished multipart uploads. */
async function staged(prefix = 'staging/'): Promise<string[]> {
  const { client, bucket } = api.platform.storage;
  const found: string[] = [];
  for await (const o of client.listObjectsV2(bucket, prefix, true)) found.push((o as { name: string }).name);
  for (const u of await incompleteUploads(client, bucket, prefix)) found.push(`incomplete:${u.key}`);
  return found.sort();
}

async function objectBytes(key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of await api.platform.storage.client.getObject(api.platform.storage.bucket, key)) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function uploadJson(text: string, idempotencyKey?: string) {
  return fetch(`${api.url}/api/v1/metrics/upload`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'application/json', ...(idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {}) },
    body: text,
  }).then(async (res) => ({ status: res.status, json: (await res.json()) as { task_id: string } }));
}

const rowsOf = (metric: string) => pointsOfMetric(settings, metric);

beforeAll(async () => {
  api = await startApi(settings);
  const root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  writer = await createUser(api.url, root, 'writer', [{ match: 'prefix', value: 'js.', access: 'rw' }]);
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('JSON upload bodies staged in the bucket', () => {
  let first: { taskId: string; key: string };

  it("the command on the tasks topic carries the staged reference and the body's hash, not the points", async () => {
    const text = JSON.stringify({ metric_name: 'js.staged', values: points(10_000) });
    const res = await uploadJson(text, 'staged-1');
    expect(res.status).toBe(202);
    const taskId = res.json.task_id;

    const [message, ...more] = await commandMessages(taskId);
    expect(more).toEqual([]);
    const command = codec.decode(message!) as MetricsUploadRequested;
    expect(command).toMatchObject({
      type: 'MetricsUploadRequested',
      task_id: taskId,
      source: 'json_body',
      metric_name: 'js.staged',
      payload: null,
      payload_bytes: Buffer.byteLength(text),
    });
    expect(command.payload_sha256.toString('hex')).toBe(createHash('sha256').update(text).digest('hex'));
    expect(command.staged_object).toMatch(new RegExp(`^staging/uploads/${taskId}/`));
    // The event is small and holds none of the body's text (548 KiB of it).
    expect(message!.length).toBeLessThan(1024);
    expect(message!.includes(formatTimestamp(T0))).toBe(false);
    // The staged object is the body, byte for byte, and the only one of the task.
    expect(await staged(`staging/uploads/${taskId}/`)).toEqual([command.staged_object]);
    expect((await objectBytes(command.staged_object!)).equals(Buffer.from(text))).toBe(true);
    first = { taskId, key: command.staged_object! };
  });

  it('a retry under the same Idempotency-Key answers the same task and leaves no second copy; another body under it is a conflict and leaves nothing', async () => {
    const before = await staged();
    const text = JSON.stringify({ metric_name: 'js.staged', values: points(10_000) });
    const again = await uploadJson(text, 'staged-1');
    expect(again).toEqual({ status: 202, json: { task_id: first.taskId } });
    const other = await uploadJson(JSON.stringify({ metric_name: 'js.staged', values: points(3) }), 'staged-1');
    expect(other.status).toBe(409);
    expect(await staged()).toEqual(before);
    expect(await commandMessages(first.taskId)).toHaveLength(1);
  });

  it('a command written with the body inline, as before staging, is still run (a replay of an old log)', async () => {
    const text = JSON.stringify({ metric_name: 'js.inline', values: points(3) });
    const taskId = randomUUID();
    const old: MetricsUploadRequested = {
      type: 'MetricsUploadRequested',
      task_id: taskId,
      user_name: 'writer',
      at: Date.now(),
      metric_name: 'js.inline',
      on_error: 'fail',
      source: 'json_body',
      payload: Buffer.from(text),
      staged_object: null,
      payload_bytes: Buffer.byteLength(text),
      payload_sha256: createHash('sha256').update(text).digest(),
      idempotency_key: null,
    };
    await appendEvents(await api.platform.producer(), codec, api.platform.topics.tasks, taskId, [old]);
    ingest = await startWorker(settings);
    const task = await waitForTask(api.url, writer, taskId, 120_000);
    expect(task).toMatchObject({ status: 'succeeded', result: { points_accepted: 3 } });
    expect(await rowsOf('js.inline')).toBe(3);
  });

  it('a staged body is removed once its task ends, succeeded or failed; what a crash leaves is under the prefix the expiry rule covers', async () => {
    const done = await waitForTask(api.url, writer, first.taskId, 120_000);
    expect(done).toMatchObject({ status: 'succeeded', result: { points_accepted: 10_000 } });
    expect(await rowsOf('js.staged')).toBe(10_000);
    const bad = await uploadJson(JSON.stringify({ metric_name: 'js.bad', values: [{ timestamp: '2024-01-01T00:00:00', value: 1 }] }));
    expect(bad.status).toBe(202);
    const [message] = await commandMessages(bad.json.task_id);
    const badKey = (codec.decode(message!) as MetricsUploadRequested).staged_object!;
    expect((await waitForTask(api.url, writer, bad.json.task_id, 120_000)).status).toBe('failed');
    await waitFor('the staged bodies to be removed', async () => ((await staged('staging/uploads/')).length === 0 ? true : undefined), 30_000, 100);
    for (const key of [first.key, badKey]) expect(key.startsWith('staging/')).toBe(true);
    const rule = (await api.platform.storage.client.getBucketLifecycle(api.platform.storage.bucket))?.Rule as unknown;
    expect(Array.isArray(rule) ? rule : [rule]).toEqual([
      expect.objectContaining({
        Filter: expect.objectContaining({ Prefix: 'staging/' }),
        Expiration: expect.objectContaining({ Days: settings.MERIDIAN_STAGING_EXPIRY_DAYS }),
      }),
    ]);
  });
});
