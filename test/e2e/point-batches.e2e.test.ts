import { randomBytes, randomUUID } from 'node:crypto';
import { ConfigResourceTypes } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp, type PointsFact } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { clickhouse } from '../support/clickhouse.ts';
import { startWorker } from '../support/ingest.ts';
import { remoteWriteBody } from '../support/protocol-bodies.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Point batches hold the metrics of one points partition, not a run of one metric: a file
 * written time-major (every metric at one timestamp, then the next) and a push of many metrics
 * make about as many batches as the same points written metric by metric (and a push of many
 * metrics, decided by the same batcher in the api, as few). A batch is also cut at its bytes, so
 * that long names cannot make a record batch the broker refuses: here the points topic takes
 * at most 80 KiB a record batch, and the batches at most 64 KiB.
 */
const BATCH = 1000;
const BATCH_BYTES = 65_536;
const TOPIC_MAX_MESSAGE_BYTES = 80 * 1024;
const settings = isolatedSettings({
  MERIDIAN_POINT_BATCH_SIZE: String(BATCH),
  MERIDIAN_UPLOAD_SEND_BYTES_PER_PARTITION: String(BATCH_BYTES),
  MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
});
const codec = createEventCodec<PointsFact>();
const T0 = Date.UTC(2024, 0, 1);
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let writer: string;

/** The PointBatch records of a task in the points topic (read from the start with a consumer of its own), once its seals are there. */
async function batchesOf(taskId: string, partitions: number): Promise<Array<{ partition: number; names: number; points: number }>> {
  const { kafka, topics } = api.platform;
  const consumer = kafka.consumer({ groupId: `${settings.MERIDIAN_TOPIC_PREFIX}batches-${randomUUID()}`, maxWaitTimeInMs: 100 });
  const batches: Array<{ partition: number; names: number; points: number }> = [];
  let seals = 0;
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: topics.points, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const fact = codec.decode(message.value!);
        if (fact.task_id !== taskId) return;
        if (fact.type === 'UploadSealed') seals++;
        else if (fact.type === 'PointBatch') batches.push({ partition, names: (fact.names ?? []).length || 1, points: fact.timestamps.length });
      },
    });
    await waitFor(`the seals of ${taskId}`, () => (seals >= partitions ? true : undefined), 30_000, 100);
    return batches;
  } finally {
    await consumer.disconnect();
  }
}

/** Uploads a CSV file of one point for each name (the name's index as its value), and waits for its task to succeed. */
async function uploadOnePointEach(names: readonly string[]): Promise<string> {
  const body = [
    'metric_name,timestamp,metric_numeric_value,updated_at',
    ...names.map((n, m) => `${n},${formatTimestamp(T0)},${m},${formatTimestamp(T0)}`),
  ].join('\n');
  const res = await fetch(`${api.url}/api/v1/metrics_file_upload`, { method: 'POST', headers: { Authorization: `Bearer ${writer}` }, body });
  expect(res.status).toBe(202);
  const taskId = ((await res.json()) as { task_id: string }).task_id;
  expect((await waitForTask(api.url, writer, taskId)).status).toBe('succeeded');
  return taskId;
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  writer = await createUser(api.url, root, 'batcher', [
    { match: 'prefix', value: 'pb.', access: 'rw' },
    { match: 'prefix', value: 'pb_', access: 'rw' },
  ]);
  const admin = api.platform.kafka.admin();
  await admin.connect();
  try {
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: api.platform.topics.points,
          configEntries: [{ name: 'max.message.bytes', value: String(TOPIC_MAX_MESSAGE_BYTES) }],
        },
      ],
    });
  } finally {
    await admin.disconnect();
  }
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('point batches', () => {
  it('a time-major file of 300 metrics makes batches per partition, as many as its points need, and stores every point once', async () => {
    const METRICS = 300;
    const STEPS = 20;
    const lines = ['metric_name,timestamp,metric_numeric_value,updated_at'];
    for (let t = 0; t < STEPS; t++)
      for (let m = 0; m < METRICS; m++) lines.push(`pb.tm.${m},${formatTimestamp(T0 + t * 1000)},${m * STEPS + t},${formatTimestamp(T0)}`);
    const res = await fetch(`${api.url}/api/v1/metrics_file_upload`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${writer}` },
      body: `${lines.join('\n')}\n`,
    });
    expect(res.status).toBe(202);
    const taskId = ((await res.json()) as { task_id: string }).task_id;
    expect((await waitForTask(api.url, writer, taskId)).status).toBe('succeeded');
    const partitions = Number(settings.KAFKA_POINTS_PARTITIONS);
    const batches = await batchesOf(taskId, partitions);
    // 6000 points over 3 partitions: about 2000 a partition, 1000 a batch; per metric it was 300 batches or more.
    expect(batches.reduce((n, b) => n + b.points, 0)).toBe(METRICS * STEPS);
    expect(batches.length).toBeLessThanOrEqual(Math.ceil((METRICS * STEPS) / BATCH) + partitions);
    expect(batches.every((b) => b.names > 1)).toBe(true);
    const stored = (
      await clickhouse(
        settings,
        "SELECT count(), uniqExact(metric_name), uniqExact(value) FROM points WHERE startsWith(metric_name, 'pb.tm.') FORMAT TabSeparated",
      )
    )
      .trim()
      .split('\t')
      .map(Number);
    expect(stored).toEqual([METRICS * STEPS, METRICS, METRICS * STEPS]);
    // Every metric's points, in time order, are its own.
    const wrong = await clickhouse(
      settings,
      "SELECT metric_name FROM points WHERE startsWith(metric_name, 'pb.tm.') AND toInt64(value) != toInt64(substring(metric_name, 7)) * 20 + intDiv(ts - 1704067200000, 1000) LIMIT 1 FORMAT TabSeparated",
    );
    expect(wrong.trim()).toBe('');
  });

  it('a small file of 50 metrics, one point each, makes at most one batch per partition', async () => {
    const taskId = await uploadOnePointEach(Array.from({ length: 50 }, (_, m) => `pb.few.${m}`));
    const batches = await batchesOf(taskId, Number(settings.KAFKA_POINTS_PARTITIONS));
    expect(batches.length).toBeLessThanOrEqual(Number(settings.KAFKA_POINTS_PARTITIONS));
    expect(new Set(batches.map((b) => b.partition)).size).toBe(batches.length);
    expect(batches.reduce((n, b) => n + b.points, 0)).toBe(50);
  });

  it('a remote write of 3,000 long-labelled series is cut into batches the broker takes, and every sample is stored', async () => {
    // 213-character names of random hex: about 210 KB of names a partition, which zstd leaves above the topic's 80 KiB.
    const series = Array.from({ length: 3000 }, (_, s) => ({
      labels: [
        ['__name__', 'pb_long'],
        ['id', randomBytes(100).toString('hex')],
      ] as const,
      samples: [[T0 + s, s] as const],
    }));
    const res = await fetch(`${api.url}/api/v1/write`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${writer}`,
        'Content-Encoding': 'snappy',
        'Content-Type': 'application/x-protobuf',
        'X-Prometheus-Remote-Write-Version': '0.1.0',
      },
      body: remoteWriteBody(series),
    });
    expect(res.status, await res.text()).toBe(204);
    await waitFor(
      'the 3,000 samples in points',
      async () => {
        const [count, sum] = (
          await clickhouse(settings, "SELECT count(), sum(value) FROM points WHERE startsWith(metric_name, 'pb_long{') FORMAT TabSeparated")
        )
          .trim()
          .split('\t')
          .map(Number);
        return count === 3000 ? sum : undefined;
      },
      60_000,
      200,
    ).then((sum) => expect(sum).toBe((2999 * 3000) / 2));
  });

  it('a file of 3,000 long-named metrics is cut into batches the broker takes, each within the bytes, and every point is stored', async () => {
    const names = Array.from({ length: 3000 }, () => `pb.wide.${randomBytes(120).toString('hex')}`);
    const taskId = await uploadOnePointEach(names);
    const batches = await batchesOf(taskId, Number(settings.KAFKA_POINTS_PARTITIONS));
    expect(batches.reduce((n, b) => n + b.points, 0)).toBe(3000);
    // By points alone it would be one batch a partition (1,000 points each).
    expect(batches.length).toBeGreaterThan(Number(settings.KAFKA_POINTS_PARTITIONS) * 3);
    const stored = (
      await clickhouse(settings, "SELECT count(), uniqExact(metric_name) FROM points WHERE startsWith(metric_name, 'pb.wide.') FORMAT TabSeparated")
    )
      .trim()
      .split('\t')
      .map(Number);
    expect(stored).toEqual([3000, 3000]);
  });
});
