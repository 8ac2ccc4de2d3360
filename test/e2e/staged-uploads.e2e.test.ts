import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';

/**
 * Uploads with MERIDIAN_UPLOAD_STAGING=on (issue 15, design D): a file larger than the
 * decider's buffer (8 batches of 5k points) is staged: its rows are written aside into stage
 * tables while it is parsed and attached by the projector at its seals. Every point once, the
 * catalog exact, its seals recorded, no stage left; a failed one leaves nothing visible and
 * drops its stages. Small enough inserts (20k rows) that each stage takes several.
 */
const settings = isolatedSettings({ MERIDIAN_UPLOAD_STAGING: 'on', MERIDIAN_POINT_BATCH_SIZE: '5000', MERIDIAN_PROJECTOR_BATCH_ROWS: '20000', MERIDIAN_MAX_UPLOAD_BYTES: '20000000' });
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let writer: string;

const T0 = Date.UTC(2024, 0, 1);
const iso = (i: number) => formatTimestamp(T0 + i * 1000);
const METRICS = Array.from({ length: 10 }, (_, m) => `up.staged.${m}`);

async function scalar(query: string): Promise<number> {
  const rows = await (await ingest.platform.clickhouse.query({ query, format: 'JSONEachRow' })).json<Record<string, string>>();
  return Number(Object.values(rows[0]!)[0]);
}

async function uploadFile(body: string) {
  const form = new FormData();
  form.set('file', new Blob([body]), 'points.csv');
  const res = await fetch(`${api.url}/api/v1/metrics_file_upload`, { method: 'POST', headers: { Authorization: `Bearer ${writer}` }, body: form });
  return (await res.json()) as { task_id: string };
}

/** A download-layout file of `n` rows over the ten metrics; `last` replaces the last row. */
function file(n: number, last?: string): string {
  const rows = Array.from({ length: n }, (_, i) => `${METRICS[i % METRICS.length]},${iso(i)},${i},${iso(0)}`);
  if (last !== undefined) rows[n - 1] = last;
  return `metric_name,timestamp,metric_numeric_value,updated_at\n${rows.join('\n')}\n`;
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  const root = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  writer = await createUser(api.url, root, 'writer', [{ match: 'prefix', value: 'up.', access: 'rw' }]);
});
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('staged uploads', () => {
  it('a large file is staged and sealed: every point once, the catalog exact, its seals recorded, no stage left', async () => {
    const n = 100_000;
    const task = await waitForTask(api.url, writer, (await uploadFile(file(n))).task_id, 120_000);
    expect(task).toMatchObject({ status: 'succeeded', result: { points_accepted: n, rows_rejected: 0 } });
    expect(await scalar(`SELECT count() FROM points WHERE task_id = '${task.task_id}'`)).toBe(n);
    expect(await scalar(`SELECT uniqExact(kafka_partition, kafka_offset, row_in_batch) FROM points WHERE task_id = '${task.task_id}'`)).toBe(n);
    const partitions = await scalar(`SELECT uniqExact(kafka_partition) FROM points WHERE task_id = '${task.task_id}'`);
    expect(partitions, 'ten metrics over the points partitions').toBeGreaterThan(1);
    expect(await scalar(`SELECT count() FROM points_seals WHERE task_id = '${task.task_id}'`)).toBe(partitions);
    expect(await scalar(`SELECT countMerge(points) FROM metric_catalog WHERE startsWith(metric_name, 'up.staged.')`)).toBe(n);
    expect(await scalar("SELECT count() FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'points_stage_')")).toBe(0);
  });

  it('a bad last row of a large staged file: failed, none of it ever visible, its stages dropped', async () => {
    const n = 100_000;
    const failed = await waitForTask(api.url, writer, (await uploadFile(file(n, `${METRICS[0]},${iso(n)},not-a-number,${iso(0)}`))).task_id, 120_000);
    expect(failed).toMatchObject({ status: 'failed', reason: '1 invalid rows: nothing was stored' });
    expect(await scalar(`SELECT count() FROM points WHERE task_id = '${failed.task_id}'`)).toBe(0);
    expect(await scalar(`SELECT count() FROM points_seals WHERE task_id = '${failed.task_id}'`)).toBe(0);
    expect(await scalar("SELECT count() FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'points_stage_')")).toBe(0);
  });
});
