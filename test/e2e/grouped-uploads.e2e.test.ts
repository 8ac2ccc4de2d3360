import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp, type PointsFact } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { partitionFor } from '@meridian/kafka';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { pointsOfMetric } from '../support/clickhouse.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Small JSON uploads that wait together in a tasks partition run in one transaction:
 * the api accepts them all before the worker starts, so the worker finds them side by side.
 * What must hold whatever the grouping: each upload all or nothing, each point stored once, a
 * failing upload failing alone, and a group that meets trouble other than Kafka's run again one
 * upload at a time.
 */
// Every upload is accepted before any worker runs: the user's backlog must hold them all.
// Small JSON bodies are staged here, to be run in groups by the worker (the push path would take them).
const settings = isolatedSettings({ MERIDIAN_UPLOAD_BACKLOG_PER_USER: '64', MERIDIAN_PUSH_MAX_BYTES: '0' });
const pointsCodec = createEventCodec<PointsFact>();
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>> | undefined;
let writer: string;

const T0 = Date.UTC(2024, 0, 1);
const body = (metric: string, n: number, first = 0) =>
  JSON.stringify({ metric_name: metric, values: Array.from({ length: n }, (_, i) => ({ timestamp: formatTimestamp(T0 + (first + i) * 1000), value: i / 4 })) });
/** One row whose timestamp has no offset: the api's shape check passes it, the worker's parse refuses it. */
const badBody = (metric: string) =>
  JSON.stringify({
    metric_name: metric,
    values: [
      { timestamp: formatTimestamp(T0), value: 1 },
      { timestamp: '2024-01-01T00:00:01', value: 2 },
    ],
  });

async function uploadJson(text: string): Promise<string> {
  const res = await fetch(`${api.url}/api/v1/metrics/upload`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'application/json' },
    body: text,
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { task_id: string }).task_id;
}

const rowsOf = (metric: string) => pointsOfMetric(settings, metric);

/** The points topic's records of these tasks, in log order per partition: which task, batch or seal. */
async function pointsLog(taskIds: ReadonlySet<string>, seals: number): Promise<Map<number, Array<{ task: string; kind: 'batch' | 'seal' }>>> {
  const { kafka, topics } = api.platform;
  const consumer = kafka.consumer({ groupId: `${settings.MERIDIAN_TOPIC_PREFIX}check-${randomUUID()}`, maxWaitTimeInMs: 100, readUncommitted: false });
  const found = new Map<number, Array<{ task: string; kind: 'batch' | 'seal' }>>();
  let sealsSeen = 0;
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: topics.points, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const fact = pointsCodec.decode(message.value!);
        if (!taskIds.has(fact.task_id)) return;
        const list = found.get(partition) ?? [];
        list.push({ task: fact.task_id, kind: fact.type === 'UploadSealed' ? 'seal' : 'batch' });
        found.set(partition, list);
        if (fact.type === 'UploadSealed') sealsSeen += 1;
      },
    });
    await waitFor('every seal on the points topic', () => (sealsSeen >= seals ? true : undefined), 30_000, 100);
    return found;
  } finally {
    await consumer.disconnect();
  }
}

beforeAll(async () => {
  api = await startApi(settings);
  const root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  writer = await createUser(api.url, root, 'writer', [{ match: 'prefix', value: 'g.', access: 'rw' }]);
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('small uploads waiting together', () => {
  it('run in shared transactions; one with a bad row fails alone, the others are stored whole and once, and a body gone from storage sends its group one by one', async () => {
    // One upload whose body is then removed, 2 with a bad last row, and good uploads of one metric (one points
    // partition) until a tasks partition other than the removed one's holds at least 2 of them (their task ids are random).
    const gone = await uploadJson(body('g.gone', 50));
    const bad = [await uploadJson(badBody('g.bad')), await uploadJson(badBody('g.bad'))];
    const good: string[] = [];
    const partitionOf = (taskId: string) => partitionFor(taskId, settings.KAFKA_TASKS_PARTITIONS);
    const sideBySide = () => [...Map.groupBy(good, partitionOf)].some(([p, ids]) => p !== partitionOf(gone) && ids.length >= 2);
    while (good.length < 12 || !sideBySide()) good.push(await uploadJson(body('g.same', 300, good.length * 300)));
    const { client, bucket } = api.platform.storage;
    const staged: string[] = [];
    for await (const o of client.listObjectsV2(bucket, `staging/uploads/${gone}/`, true)) staged.push((o as { name: string }).name);
    expect(staged).toHaveLength(1);
    await client.removeObject(bucket, staged[0]!);

    ingest = await startWorker(settings);
    for (const id of good) expect(await waitForTask(api.url, writer, id, 120_000)).toMatchObject({ status: 'succeeded', result: { points_accepted: 300 } });
    for (const id of bad)
      expect(await waitForTask(api.url, writer, id, 120_000)).toMatchObject({ status: 'failed', errors: [{ row: 2, column: 'timestamp' }] });
    expect(await waitForTask(api.url, writer, gone, 120_000)).toMatchObject({
      status: 'failed',
      reason: expect.stringMatching(/^the upload could not be processed/),
    });

    // Exactly once, and nothing of a failed upload.
    expect(await rowsOf('g.same')).toBe(good.length * 300);
    expect(await rowsOf('g.bad')).toBe(0);
    expect(await rowsOf('g.gone')).toBe(0);

    // Grouped: in the points partition, an upload's seal comes after another upload's batch that
    // follows its own (one transaction per upload would leave each upload's batches then its seal).
    const log = await pointsLog(new Set(good), good.length);
    expect(log.size).toBe(1);
    const [records] = [...log.values()];
    expect(records!.filter((r) => r.kind === 'batch')).toHaveLength(good.length);
    const sharedTransactions = records!.filter((r, i) => r.kind === 'seal' && records![i - 1]?.task !== r.task).length;
    expect(sharedTransactions).toBeGreaterThan(0);
    // Each seal still follows its own upload's batch.
    for (const [i, r] of records!.entries())
      if (r.kind === 'seal') expect(records!.slice(0, i).some((b) => b.kind === 'batch' && b.task === r.task)).toBe(true);
  });
});
