import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { meridian, userCli } from '../support/cli.ts';
import { startWorker } from '../support/ingest.ts';
import { rollupDumpSql } from '../support/rollup-reference.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { waitFor } from '../support/wait.ts';

/**
 * POST /api/v1/metrics/delete against the real stack: who may delete, the bound, and what a
 * deletion leaves: downloads, the catalog and the Prometheus API without the range, points
 * uploaded into it afterwards kept, a rebuild from the log equal to the live table.
 */
// Every whole-hour PromQL window reads the 1h rollup, however few the points, and the api logs
// which it read at info (promCount's 'rollup').
const settings = isolatedSettings({
  MERIDIAN_DELETE_MAX_POINTS: '50',
  MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
  MERIDIAN_PROMQL_ROLLUP_MIN_POINTS_PER_BUCKET: '0',
  LOG_LEVEL: 'info',
});
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let admin: string;
let writer: string; // rw on del_w
let reader: string; // r on del_

const T = (s: number) => Date.UTC(2024, 0, 1) + s * 1000;
const iso = (s: number) => formatTimestamp(T(s));

async function upload(key: string, metric: string, seconds: readonly number[], value = (s: number) => s): Promise<void> {
  const res = await call(`${api.url}/api/v1/metrics/upload`, key, {
    method: 'POST',
    body: { metric_name: metric, values: seconds.map((s) => ({ timestamp: iso(s), value: value(s) })) },
  });
  expect(res.status, res.text).toBe(202);
  expect((await waitForTask(api.url, key, res.json.task_id, 120_000)).status).toBe('succeeded');
}

const del = (key: string, body: Record<string, unknown>) => call(`${api.url}/api/v1/metrics/delete`, key, { method: 'POST', body });

/** The (second, value) pairs a download of one metric returns. */
async function downloaded(metric: string, key = writer): Promise<Array<[number, number]>> {
  const res = await call(`${api.url}/api/v1/metrics/download?${new URLSearchParams({ metrics: metric, file_format: 'json', max_rows: '1000' })}`, key);
  expect(res.status, res.text).toBe(200);
  return (res.json as Array<{ timestamp: string; metric_numeric_value: number }>).map((r) => [
    (Date.parse(r.timestamp.replace('+0000', 'Z')) - T(0)) / 1000,
    r.metric_numeric_value,
  ]);
}

async function catalogEntry(metric: string) {
  const res = await call(`${api.url}/api/v1/metrics?${new URLSearchParams({ metrics: metric })}`, writer);
  expect(res.status, res.text).toBe(200);
  return (res.json as { metrics: Array<{ metric_name: string; points: number; first_timestamp: string; last_timestamp: string }> }).metrics.find(
    (m) => m.metric_name === metric,
  );
}

/**
 * count_over_time of the metric over its first hour, as the Prometheus API answers it: evaluated at
 * T(3599) from the raw points, or at T(3600), a whole hour, from the 1h rollup (the api's log says which).
 */
async function promCount(metric: string, from: 'raw' | 'rollup' = 'raw'): Promise<number> {
  const time = from === 'raw' ? T(3599) : T(3600);
  const res = await call(
    `${api.url}/prometheus/api/v1/query?${new URLSearchParams({ query: `count_over_time(${metric}[1h])`, time: String(time / 1000) })}`,
    writer,
  );
  expect(res.status, res.text).toBe(200);
  expect(api.logs().findLast((l) => l.msg === 'promql query')!.rollups).toEqual(from === 'raw' ? [] : [3_600_000]);
  const [sample] = (res.json as { data: { result: Array<{ value: [number, string] }> } }).data.result;
  return sample === undefined ? 0 : Number(sample.value[1]);
}

async function deleted(key: string, body: Record<string, unknown>) {
  const res = await del(key, body);
  expect(res.status, res.text).toBe(202);
  expect(res.headers.get('location')).toBe(`/api/v1/tasks/${res.json.task_id}`);
  const task = await waitForTask(api.url, key, res.json.task_id, 120_000);
  expect(task).toMatchObject({ kind: 'points_deletion', status: 'succeeded' });
  return { accepted: res.json as { task_id: string; metrics: string[]; points_selected: number }, task };
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  writer = await createUser(api.url, admin, 'deleter', [{ match: 'prefix', value: 'del_w', access: 'rw' }]);
  reader = await createUser(api.url, admin, 'onlooker', [{ match: 'prefix', value: 'del_', access: 'r' }]);
  const ten = Array.from({ length: 10 }, (_, s) => s);
  await upload(admin, 'del_w_a', ten);
  await upload(admin, 'del_w_b', ten);
  await upload(admin, 'del_r_c', [0, 1, 2]);
}, 300_000);
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('POST /api/v1/metrics/delete', () => {
  it('refuses a deletion without a reason or a bound, names the fields, and deletes nothing', async () => {
    const res = await del(writer, { metrics: 'del_w_a', start_date: iso(0), end_date: iso(9) });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const noEnd = await del(writer, { metrics: 'del_w_a', start_date: iso(0), reason: 'x' });
    expect(noEnd.status).toBe(400);
    expect(JSON.stringify(noEnd.json)).toContain('end_date');
    expect((await del(writer, { metrics: ['del_w_a'], pattern: 'contains', start_date: iso(0), end_date: iso(9), reason: 'x' })).status).toBe(400);
    expect(await downloaded('del_w_a')).toHaveLength(10);
  });

  it("is for the metric's writers: 403 to a reader, 404 for what the caller may not see or what does not exist", async () => {
    const body = { start_date: iso(0), end_date: iso(9), reason: 'not theirs' };
    expect((await del(reader, { ...body, metrics: 'del_w_a' })).status).toBe(403);
    const hidden = await del(writer, { ...body, metrics: 'del_r_c' });
    const missing = await del(writer, { ...body, metrics: 'del_w_nothing' });
    expect([hidden.status, missing.status]).toEqual([404, 404]);
    expect(hidden.json.detail).toBe(missing.json.detail);
    // A substring pattern reaches only what the caller may write: here nothing, and nothing goes.
    const none = await deleted(reader, { ...body, metrics: 'del_', pattern: 'starts_with' });
    expect(none.accepted).toMatchObject({ metrics: [], points_selected: 0 });
    expect(await downloaded('del_w_a')).toHaveLength(10);
  });

  it('refuses a selection of more than MERIDIAN_DELETE_MAX_POINTS points with 400', async () => {
    await upload(
      admin,
      'del_w_big',
      Array.from({ length: 60 }, (_, s) => s),
    );
    const res = await del(writer, { metrics: 'del_w_big', start_date: iso(0), end_date: iso(59), reason: 'too much' });
    expect(res.status).toBe(400);
    expect(res.json.detail).toContain('MERIDIAN_DELETE_MAX_POINTS');
    expect(await downloaded('del_w_big')).toHaveLength(60);
  });

  it('deletes the range from downloads, the catalog and the Prometheus API; points uploaded into it afterwards are kept', async () => {
    expect([await promCount('del_w_a'), await promCount('del_w_a', 'rollup')]).toEqual([10, 10]);
    const { accepted, task } = await deleted(writer, { metrics: 'del_w_a', start_date: iso(2), end_date: iso(5), reason: 'a device sent garbage' });
    expect(accepted).toMatchObject({ metrics: ['del_w_a'], points_selected: 4 });
    expect(task.result).toEqual({ metrics: ['del_w_a'], points_selected: 4 });
    expect((await downloaded('del_w_a')).map(([s]) => s)).toEqual([0, 1, 6, 7, 8, 9]);
    expect(await catalogEntry('del_w_a')).toEqual({ metric_name: 'del_w_a', points: 6, first_timestamp: iso(0), last_timestamp: iso(9) });
    expect([await promCount('del_w_a'), await promCount('del_w_a', 'rollup')]).toEqual([6, 6]);
    // The other metric is untouched.
    expect(await downloaded('del_w_b')).toHaveLength(10);

    // The catalog's first and last follow a deletion at either end.
    await deleted(writer, { metrics: ['del_w_a'], start_date: iso(8), end_date: iso(9), reason: 'the tail too' });
    expect(await catalogEntry('del_w_a')).toEqual({ metric_name: 'del_w_a', points: 4, first_timestamp: iso(0), last_timestamp: iso(7) });
    expect([await promCount('del_w_a'), await promCount('del_w_a', 'rollup')]).toEqual([4, 4]);

    // Uploaded after the deletion, into its range: kept.
    await upload(writer, 'del_w_a', [3], () => 33);
    expect(await downloaded('del_w_a')).toEqual([
      [0, 0],
      [1, 1],
      [3, 33],
      [6, 6],
      [7, 7],
    ]);
    expect(await catalogEntry('del_w_a')).toMatchObject({ points: 5 });
    expect([await promCount('del_w_a'), await promCount('del_w_a', 'rollup')]).toEqual([5, 5]);
  });

  it('a pattern deletes every metric it reaches that the caller may write; admins may delete anything', async () => {
    const { accepted } = await deleted(writer, { metrics: '_b', pattern: 'ends_with', start_date: iso(0), end_date: iso(4), reason: 'pattern' });
    expect(accepted).toMatchObject({ metrics: ['del_w_b'], points_selected: 5 });
    expect((await downloaded('del_w_b')).map(([s]) => s)).toEqual([5, 6, 7, 8, 9]);
    await deleted(admin, { metrics: 'del_r_c', start_date: iso(0), end_date: iso(0), reason: 'admin' });
    expect((await downloaded('del_r_c', admin)).map(([s]) => s)).toEqual([1, 2]);
  });

  it('ingest goes on while a deletion is held in ClickHouse: pushes and file uploads are accepted, and each is stored once it ends', async () => {
    const ch = api.platform.clickhouse;
    const undoneMutations = async () =>
      Number(
        (
          await (
            await ch.query({
              query: "SELECT count() AS n FROM system.mutations WHERE database = currentDatabase() AND table = 'points' AND is_done = 0",
              format: 'JSONEachRow',
            })
          ).json<{ n: string }>()
        )[0]!.n,
      );
    const status = async (taskId: string) => (await call(`${api.url}/api/v1/tasks/${taskId}`, writer)).json.status as string;
    const push = (metric: string, points: Array<[number, number]>) =>
      call(`${api.url}/api/v1/metrics/upload`, writer, {
        method: 'POST',
        body: { metric_name: metric, values: points.map(([s, value]) => ({ timestamp: iso(s), value })) },
      });
    const uploadFile = async (metric: string, points: Array<[number, number]>) => {
      const form = new FormData();
      form.set('file', new Blob([points.map(([s, v]) => `${iso(s)},${v}\n`).join('')]), 'points.csv');
      const res = await fetch(`${api.url}/api/v1/metrics_file_upload?${new URLSearchParams({ metric_name: metric })}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${writer}` },
        body: form,
      });
      return { status: res.status, text: await res.text() };
    };
    const held = 'del_w_held';
    const beside = 'del_w_beside';
    await upload(
      writer,
      held,
      Array.from({ length: 20 }, (_, s) => s),
    );
    expect(await downloaded(held)).toHaveLength(20);
    expect(await undoneMutations()).toBe(0);

    const pushedBeside: Array<[number, number]> = Array.from({ length: 10 }, (_, s) => [s, 100 + s]);
    const filedBeside: Array<[number, number]> = Array.from({ length: 10 }, (_, s) => [10 + s, 100 + 10 + s]);
    const heldOutside: Array<[number, number]> = [20, 21, 22].map((s) => [s, 200 + s]);
    const heldInside: Array<[number, number]> = [
      [7, 707],
      [9, 909],
    ];
    const accepted: string[] = [];
    let deletion: string;
    // 18.16 runs a mutation as merges do: with points' merges stopped the deletion's mutation stays
    // undone, and so does the deletion, for as long as this test holds it.
    await ch.command({ query: 'SYSTEM STOP MERGES points' });
    try {
      const res = await del(writer, { metrics: held, start_date: iso(5), end_date: iso(14), reason: 'held while ingest goes on' });
      expect(res.status, res.text).toBe(202);
      expect(res.json).toMatchObject({ metrics: [held], points_selected: 10 });
      deletion = res.json.task_id as string;
      await waitFor("the deletion's mutation of points to be under way", async () => ((await undoneMutations()) > 0 ? true : undefined), 60_000);

      // The public routes accept while the deletion is held: a push of another metric and of the
      // deleted metric outside and inside its range, and a file upload.
      for (const [metric, points] of [
        [beside, pushedBeside],
        [held, heldOutside],
        [held, heldInside],
      ] as const) {
        const pushed = await push(metric, [...points]);
        expect(pushed.status, pushed.text).toBe(202);
        accepted.push(pushed.json.task_id as string);
      }
      const filed = await uploadFile(beside, filedBeside);
      expect(filed.status, filed.text).toBe(202);
      accepted.push(JSON.parse(filed.text).task_id as string);
      for (const taskId of accepted) expect(['queued', 'running']).toContain(await status(taskId));
      // All of it was accepted while the deletion was undone: its mutation and its task are still waiting.
      expect(await undoneMutations()).toBeGreaterThan(0);
      expect(['queued', 'running']).toContain(await status(deletion));
    } finally {
      await ch.command({ query: 'SYSTEM START MERGES points' });
    }

    expect(await waitForTask(api.url, writer, deletion, 120_000)).toMatchObject({
      status: 'succeeded',
      result: { metrics: [held], points_selected: 10 },
    });
    for (const taskId of accepted) expect((await waitForTask(api.url, writer, taskId, 120_000)).status, taskId).toBe('succeeded');
    const kept: Array<[number, number]> = [
      ...Array.from({ length: 5 }, (_, s): [number, number] => [s, s]),
      ...heldInside,
      ...Array.from({ length: 5 }, (_, i): [number, number] => [15 + i, 15 + i]),
      ...heldOutside,
    ].sort((x, y) => x[0] - y[0]);
    expect(await downloaded(held)).toEqual(kept);
    expect(await downloaded(beside)).toEqual([...pushedBeside, ...filedBeside]);
    expect(await catalogEntry(held)).toEqual({ metric_name: held, points: kept.length, first_timestamp: iso(0), last_timestamp: iso(22) });
    expect(await catalogEntry(beside)).toEqual({ metric_name: beside, points: 20, first_timestamp: iso(0), last_timestamp: iso(19) });
  });

  it('meridian delete: the same deletion from the command line, waiting until it is done', async () => {
    const env = { PATH: process.env.PATH ?? '', HOME: '/nonexistent', MERIDIAN_URL: api.url, MERIDIAN_API_KEY: writer };
    const refused = await userCli(['delete', '--metric', 'del_w_b', '--from', iso(0), '--to', iso(9)], env);
    expect([refused.code, refused.stderr]).toEqual([2, expect.stringContaining('--reason')]);
    const run = await userCli(['delete', '--metric', 'del_w_b', '--from', iso(5), '--to', iso(6), '--reason', 'from the cli', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ metrics: ['del_w_b'], points_selected: 2, status: 'succeeded' });
    expect((await downloaded('del_w_b')).map(([s]) => s)).toEqual([7, 8, 9]);
    const denied = await userCli(['delete', '--metric', 'del_r_c', '--from', iso(0), '--to', iso(9), '--reason', 'x'], env);
    expect(denied.code).toBe(1);
  });

  it('the events export carries the deletions: who, when, what and why', async () => {
    const res = await call(`${api.url}/api/v1/events?${new URLSearchParams({ types: 'MetricsDeleted,PointsDeleted', format: 'ndjson' })}`, admin);
    expect(res.status, res.text).toBe(200);
    const events = res.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; event: Record<string, unknown> });
    expect(events.map((e) => e.event)).toContainEqual(
      expect.objectContaining({ user_name: 'deleter', reason: 'a device sent garbage', metrics: ['del_w_a'], from_ms: T(2), to_ms: T(5), points: 4 }),
    );
    expect(events.filter((e) => e.type === 'PointsDeleted').map((e) => e.event)).toContainEqual(
      expect.objectContaining({ metrics: ['del_w_a'], from_ms: T(2), to_ms: T(5) }),
    );
  });

  it('the export says which points each deletion took: its batches and markers, by partition and offset, give the downloads', async () => {
    type Logged = { type: string; partition: number; offset: number; event: Record<string, unknown> };
    const res = await call(
      `${api.url}/api/v1/events?${new URLSearchParams({ types: 'PointBatch,PointsDeleted,MetricsDeleted', format: 'ndjson', max_events: '100000' })}`,
      admin,
    );
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('x-next-cursor')).toBeNull();
    const logged = res.text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Logged);
    const reasons = new Map(logged.filter((e) => e.type === 'MetricsDeleted').map((e) => [e.event.task_id as string, e.event.reason as string]));
    // A marker takes the points of its metrics and range from the batches before it in its partition
    // (docs/using/deleting.md): each point is attributed to the first marker after it that selects it.
    const markers = logged.filter((e) => e.type === 'PointsDeleted');
    const takenBy = new Map<string, string>();
    const kept: Record<string, Array<[number, number]>> = {};
    for (const b of logged.filter((e) => e.type === 'PointBatch')) {
      const { metric_name, names, name_index, timestamps, values } = b.event as {
        metric_name: string;
        names: string[];
        name_index: number[];
        timestamps: number[];
        values: number[];
      };
      timestamps.forEach((ts, i) => {
        const name = names.length === 0 ? metric_name : names[name_index[i]!]!;
        const marker = markers.find(
          (m) =>
            m.partition === b.partition &&
            m.offset > b.offset &&
            (m.event.metrics as string[]).includes(name) &&
            ts >= (m.event.from_ms as number) &&
            ts <= (m.event.to_ms as number),
        );
        if (marker) takenBy.set(`${name} ${(ts - T(0)) / 1000}`, reasons.get(marker.event.task_id as string)!);
        else (kept[name] ??= []).push([(ts - T(0)) / 1000, values[i]!]);
      });
    }
    const taken = (reason: string) => [...takenBy].filter(([, r]) => r === reason).map(([point]) => point);
    expect(taken('a device sent garbage')).toEqual(['del_w_a 2', 'del_w_a 3', 'del_w_a 4', 'del_w_a 5']);
    expect(taken('the tail too')).toEqual(['del_w_a 8', 'del_w_a 9']);
    expect(taken('from the cli')).toEqual(['del_w_b 5', 'del_w_b 6']);
    // What no marker took is what the downloads hold, the point uploaded into a deleted range afterwards included.
    const sorted = (points: Array<[number, number]>) => [...points].sort((x, y) => x[0] - y[0]);
    for (const [metric, key] of [
      ['del_w_a', writer],
      ['del_w_b', writer],
      ['del_r_c', admin],
    ] as const)
      expect(sorted(kept[metric] ?? []), metric).toEqual(sorted(await downloaded(metric, key)));
  });

  it('replay rebuild points gives the same table as the live one', async () => {
    const run = await meridian(settings, ['replay', 'rebuild', 'points', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const built = JSON.parse(run.stdout) as { generation: number; verification: { ok: boolean } };
    expect(built.verification.ok).toBe(true);
    const rows = async (table: string) =>
      (
        await api.platform.clickhouse.query({
          query: `SELECT metric_name, ts, value, kafka_partition, kafka_offset, row_in_batch FROM ${table} ORDER BY kafka_partition, kafka_offset, row_in_batch`,
          format: 'JSONEachRow',
        })
      ).text();
    expect(await rows(`points_g${built.generation}`)).toBe(await rows('points'));
    const catalogOf = async (table: string) =>
      (
        await api.platform.clickhouse.query({
          query: `SELECT metric_name, countMerge(points) AS n, minMerge(first_ts) AS f, maxMerge(last_ts) AS l FROM ${table} GROUP BY metric_name ORDER BY metric_name`,
          format: 'JSONEachRow',
        })
      ).text();
    expect(await catalogOf(`metric_catalog_g${built.generation}`)).toBe(await catalogOf('metric_catalog'));
    // The rollups too: the user's deletions took their points out of the buckets, live and in the rebuild alike.
    const rollupOf = async (table: string) => (await api.platform.clickhouse.query({ query: rollupDumpSql(table), format: 'JSONEachRow' })).json();
    for (const view of ['points_1m', 'points_1h']) expect(await rollupOf(`${view}_g${built.generation}`), view).toEqual(await rollupOf(view));
    const rows1m = await rollupOf('points_1m');
    expect(rows1m).toContainEqual(expect.objectContaining({ metric_name: 'del_w_a', b: String(T(0)), n: '5', d: '5' }));
    await meridian(settings, ['replay', 'drop', String(built.generation)]);
  });

  it('a deletion is a task against MERIDIAN_MAX_QUEUED_TASKS_PER_USER: with no projector running, the second one is 429', async () => {
    await ingest.close();
    const capped = await startApi({ ...settings, MERIDIAN_MAX_QUEUED_TASKS_PER_USER: 1 });
    try {
      const body = { metrics: 'del_w_b', start_date: iso(0), end_date: iso(9), reason: 'capped' };
      const first = await call(`${capped.url}/api/v1/metrics/delete`, writer, { method: 'POST', body });
      expect(first.status, first.text).toBe(202);
      const second = await call(`${capped.url}/api/v1/metrics/delete`, writer, { method: 'POST', body });
      expect(second.status, second.text).toBe(429);
      expect(second.json.detail).toContain('MERIDIAN_MAX_QUEUED_TASKS_PER_USER');
    } finally {
      await capped.close();
    }
  });
});
