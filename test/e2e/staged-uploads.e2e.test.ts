import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp, READS_STAGED_UPLOADS } from '@meridian/domain';
import { consumerGroupsFor } from '@meridian/kafka';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask, type TaskBody } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Staged uploads, with MERIDIAN_UPLOAD_STAGING=on and with the default, auto
 * (staged while every points projector advertises that it reads staged uploads, as this
 * release's does): a file larger than the decider's buffer (8 batches of 5k points) is staged:
 * its rows are written aside into stage tables while it is parsed and attached by the projector
 * at its seals. Every point once, the catalog exact, its seals recorded, no stage left; a
 * failed one leaves nothing visible and drops its stages. Small enough inserts (20k rows) that
 * each stage takes several.
 */
describe.each(['on', 'auto'] as const)('staged uploads, MERIDIAN_UPLOAD_STAGING=%s', (staging) => {
  const settings = isolatedSettings({
    ...(staging === 'on' ? { MERIDIAN_UPLOAD_STAGING: staging } : {}),
    MERIDIAN_STAGE_MIN_BYTES: '1',
    MERIDIAN_POINT_BATCH_SIZE: '5000',
    MERIDIAN_PROJECTOR_BATCH_ROWS: '20000',
    MERIDIAN_MAX_UPLOAD_BYTES: '20000000',
  });
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

  /** A download-layout file of `n` rows over ten metrics; `last` replaces the last row. */
  function file(n: number, last?: string, metrics: readonly string[] = METRICS): string {
    const rows = Array.from({ length: n }, (_, i) => `${metrics[i % metrics.length]},${iso(i)},${i},${iso(0)}`);
    if (last !== undefined) rows[n - 1] = last;
    return `metric_name,timestamp,metric_numeric_value,updated_at\n${rows.join('\n')}\n`;
  }

  /** Rows per metric in one download of every metric starting with `prefix` (one ClickHouse query). */
  async function downloadedPerMetric(prefix: string): Promise<Map<string, number>> {
    const res = await fetch(`${api.url}/api/v1/metrics/download?${new URLSearchParams({ metrics: prefix, pattern: 'starts_with', max_rows: '1000000' })}`, {
      headers: { Authorization: `Bearer ${writer}`, 'Accept-Encoding': 'identity' },
    });
    expect(res.status).toBe(200);
    const perMetric = new Map<string, number>();
    for (const line of (await res.text()).trimEnd().split('\n').slice(1)) {
      const name = line.slice(0, line.indexOf(','));
      perMetric.set(name, (perMetric.get(name) ?? 0) + 1);
    }
    return perMetric;
  }

  /** Downloads `prefix` over and over until the task has ended: what each download showed, and the task. */
  async function pollWhileRunning(taskId: string, prefix: string): Promise<{ seen: Array<Map<string, number>>; task: TaskBody }> {
    const seen: Array<Map<string, number>> = [];
    for (;;) {
      const task = (await call(`${api.url}/api/v1/tasks/${taskId}`, writer)).json as TaskBody;
      seen.push(await downloadedPerMetric(prefix));
      if (task.status === 'succeeded' || task.status === 'failed') return { seen, task };
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  beforeAll(async () => {
    api = await startApi(settings);
    ingest = await startWorker(settings);
    const root = await bootstrapAdmin(settings);
    await api.api.accounts.syncToEnd();
    writer = await createUser(api.url, root, 'writer', [{ match: 'prefix', value: 'up.', access: 'rw' }]);
    // auto asks the projector group, which answers once its first join is over.
    if (staging === 'auto')
      await waitFor(
        'the projector group to advertise that it reads staged uploads',
        async () =>
          (await ingest.platform.log.groupAdvertises(consumerGroupsFor(settings.MERIDIAN_TOPIC_PREFIX).projector, READS_STAGED_UPLOADS)) ? true : undefined,
        60_000,
        200,
      );
  });
  afterAll(async () => {
    await ingest?.close();
    await api?.close();
  });

  describe('uploads', () => {
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

    it('a download polled while a large staged upload runs and is sealed shows each metric with none or all of its points, never a part', async () => {
      const n = 200_000;
      const metrics = Array.from({ length: 10 }, (_, m) => `up.polled.${m}`);
      const { seen, task } = await pollWhileRunning((await uploadFile(file(n, undefined, metrics))).task_id, 'up.polled.');
      expect(task.status).toBe('succeeded');
      const final = await downloadedPerMetric('up.polled.');
      expect([...final.keys()].sort()).toEqual(metrics);
      expect([...final.values()].every((rows) => rows === n / metrics.length)).toBe(true);
      for (const [i, download] of seen.entries()) {
        for (const [metric, rows] of download) expect([0, n / metrics.length], `download ${i + 1} of ${seen.length}: ${metric}`).toContain(rows);
      }
      // The first download ran before any seal: nothing of the upload was visible yet.
      expect(seen[0]!.size).toBe(0);
      console.log(`staged upload polled: ${seen.length} downloads, metrics visible in each: ${seen.map((d) => d.size).join(' ')}`);
    });

    it('a bad last row of a large staged file: failed, none of it ever visible, its stages dropped', async () => {
      const n = 100_000;
      const { seen, task: failed } = await pollWhileRunning(
        (await uploadFile(file(n, `${METRICS[0]},${iso(n)},not-a-number,${iso(0)}`))).task_id,
        'up.staged.',
      );
      expect(failed).toMatchObject({ status: 'failed', reason: '1 invalid rows: nothing was stored' });
      // Only the first test's points of these metrics, in every download while it ran.
      for (const download of seen) expect([...download.values()].reduce((a, b) => a + b, 0)).toBe(100_000);
      expect(await scalar(`SELECT count() FROM points WHERE task_id = '${failed.task_id}'`)).toBe(0);
      expect(await scalar(`SELECT count() FROM points_seals WHERE task_id = '${failed.task_id}'`)).toBe(0);
      expect(await scalar("SELECT count() FROM system.tables WHERE database = currentDatabase() AND startsWith(name, 'points_stage_')")).toBe(0);
    });
  });
});
