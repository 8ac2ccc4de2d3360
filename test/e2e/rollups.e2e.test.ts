import { tableFromIPC } from 'apache-arrow';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { clickhouse } from '../support/clickhouse.ts';
import { seedPoints } from '../support/seed-points.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';

/**
 * Downloads at resolution 1m and 1h (the rollups of migration 010) through the api, against the
 * real stack: uploaded points, some uploaded again with other values, come back per bucket with
 * exactly the aggregates of the deduplicated raw points (computed here from a raw download with
 * latest_only=true), in every format, paged by the cursor; points uploaded later join their buckets.
 */
// The worker seals closed buckets every half second (migration 011): the reads below are answered from sealed rows once
// sealedAll() has seen every bucket sealed at its count, and through the exactness check before.
const settings = isolatedSettings({
  MERIDIAN_MAX_ROLLUP_ROWS: '10000',
  MERIDIAN_ROLLUP_SEAL_INTERVAL_MS: '500',
  MERIDIAN_ROLLUP_SEAL_MAX_BUCKETS: '1000000',
  MERIDIAN_ROLLUP_SEAL_RESOLUTIONS: '1h,1m',
});
let api: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let admin: string;
let analyst: string;

const T0 = Date.UTC(2024, 0, 1);
const NAMES = ['ru.a', 'ru.semi;colon,"q'];
type Rollup = { metric_name: string; bucket: string; count: number; min: number; max: number; sum: number; avg: number; last: number };

async function upload(metric: string, values: Array<[number, number]>): Promise<void> {
  const res = await call(`${api.url}/api/v1/metrics/upload`, admin, {
    method: 'POST',
    body: { metric_name: metric, values: values.map(([ts, value]) => ({ timestamp: formatTimestamp(ts), value })) },
  });
  expect(res.status, res.text).toBe(202);
  expect((await waitForTask(api.url, admin, res.json.task_id, 120_000)).status).toBe('succeeded');
}

async function download(qs: Record<string, string>, key = analyst) {
  const res = await fetch(`${api.url}/api/v1/metrics/download?${new URLSearchParams(qs)}`, {
    headers: { Authorization: `Bearer ${key}`, 'Accept-Encoding': 'identity' },
  });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

const selection = { metrics: 'ru.', pattern: 'starts_with', start_date: '2024-01-01', end_date: '2024-01-01' };

/** Buckets of a rollup with no sealed row at their count. */
async function unsealed(resolution: '1m' | '1h'): Promise<number> {
  const counted = `SELECT metric_name, bucket, countMerge(rows) AS n FROM points_${resolution} GROUP BY metric_name, bucket`;
  const sealed = `SELECT metric_name, bucket, rows AS n, 1 AS s FROM points_${resolution}_sealed`;
  return Number(await clickhouse(settings, `SELECT count() FROM (${counted}) AS r ANY LEFT JOIN (${sealed}) AS j USING (metric_name, bucket, n) WHERE s = 0`));
}

/** Waits until the worker's seal pass has sealed every bucket of these rollups at its count. */
async function sealedAll(resolutions: readonly ('1m' | '1h')[] = ['1m', '1h']): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (const resolution of resolutions) {
    while ((await unsealed(resolution)) > 0) {
      if (Date.now() > deadline) throw new Error(`the ${resolution} rollup was not sealed within 120 s`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** The reference: a raw download with latest_only=true, aggregated per (metric, bucket) here. */
async function expected(stepMs: number): Promise<Rollup[]> {
  const raw = await download({ ...selection, latest_only: 'true', format: 'json', max_rows: '100000' });
  expect(raw.status).toBe(200);
  const rows = JSON.parse(raw.bytes.toString()) as Array<{ metric_name: string; timestamp: string; metric_numeric_value: number }>;
  const out = new Map<string, Rollup & { lastTs: number }>();
  for (const r of rows) {
    const ts = Date.parse(r.timestamp.replace(/\+0000$/, 'Z'));
    const bucket = Math.floor(ts / stepMs) * stepMs;
    const key = `${r.metric_name}\u0000${bucket}`;
    const v = r.metric_numeric_value;
    const b = out.get(key);
    if (!b) out.set(key, { metric_name: r.metric_name, bucket: formatTimestamp(bucket), count: 1, min: v, max: v, sum: v, avg: v, last: v, lastTs: ts });
    else {
      b.count += 1;
      b.min = Math.min(b.min, v);
      b.max = Math.max(b.max, v);
      b.sum += v;
      b.avg = b.sum / b.count;
      if (ts >= b.lastTs) [b.last, b.lastTs] = [v, ts];
    }
  }
  // Rows come in (metric_name, timestamp) order: so are the buckets.
  return [...out.values()].map(({ lastTs: _, ...r }) => r);
}

beforeAll(async () => {
  api = await startApi(settings);
  ingest = await startWorker(settings);
  admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  analyst = await createUser(api.url, admin, 'analyst', [{ match: 'prefix', value: 'ru.', access: 'r' }]);
  // 400 points 37 s apart (about four hours), values in quarters: every sum is exact in any order.
  for (const [m, name] of NAMES.entries())
    await upload(
      name,
      Array.from({ length: 400 }, (_, i) => [T0 + i * 37_000 + m, (i % 50) / 4 - m]),
    );
  // Some of them uploaded again with other values: the newest counts, once.
  await upload(
    NAMES[0]!,
    Array.from({ length: 40 }, (_, i) => [T0 + i * 10 * 37_000, 1000 + i / 4]),
  );
}, 300_000);
afterAll(async () => {
  await ingest?.close();
  await api?.close();
});

describe('downloads at resolution 1m and 1h', () => {
  for (const [resolution, stepMs] of [
    ['1m', 60_000],
    ['1h', 3_600_000],
  ] as const) {
    it(`${resolution}: every bucket equals the aggregates of the deduplicated raw points, as JSON and CSV, answered from sealed rows`, async () => {
      await sealedAll();
      const want = await expected(stepMs);
      const json = await download({ ...selection, resolution, format: 'json', max_rows: '10000' });
      expect(json.status, json.bytes.toString()).toBe(200);
      expect(json.headers.get('x-next-cursor')).toBeNull();
      expect(JSON.parse(json.bytes.toString())).toEqual(want);
      // POST, the parameters as a JSON body: the same rows.
      const posted = await fetch(`${api.url}/api/v1/metrics/download`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${analyst}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ ...selection, resolution, format: 'json', max_rows: 10000 }),
      });
      expect(posted.status).toBe(200);
      expect(await posted.json()).toEqual(want);
      const csv = await download({ ...selection, resolution, max_rows: '10000' });
      expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
      const quote = (n: string) => (/[",;]/.test(n) ? `"${n.replaceAll('"', '""')}"` : n);
      expect(csv.bytes.toString()).toBe(
        `metric_name,bucket,count,min,max,sum,avg,last\n${want.map((r) => `${quote(r.metric_name)},${r.bucket},${r.count},${r.min},${r.max},${r.sum},${r.avg},${r.last}\n`).join('')}`,
      );
    });
  }

  it('Arrow and Parquet carry the same rows, typed', async () => {
    const want = (await expected(60_000)).map((r) => ({ ...r, bucket: Date.parse(r.bucket.replace(/\+0000$/, 'Z')) }));
    const arrow = tableFromIPC((await download({ ...selection, resolution: '1m', format: 'arrow', max_rows: '10000' })).bytes);
    expect(arrow.schema.fields.map((f) => `${f.name}:${String(f.type)}`)).toEqual([
      'metric_name:Utf8',
      'bucket:Timestamp<MILLISECOND, UTC>',
      'count:Int64',
      'min:Float64',
      'max:Float64',
      'sum:Float64',
      'avg:Float64',
      'last:Float64',
    ]);
    expect(
      [...arrow].map((r) => ({
        metric_name: r.metric_name,
        bucket: Number(r.bucket),
        count: Number(r.count),
        min: r.min,
        max: r.max,
        sum: r.sum,
        avg: r.avg,
        last: r.last,
      })),
    ).toEqual(want);
    const parquet = (await download({ ...selection, resolution: '1m', format: 'parquet', max_rows: '10000' })).bytes;
    const file = parquet.buffer.slice(parquet.byteOffset, parquet.byteOffset + parquet.length);
    const objects = await parquetReadObjects({ file });
    expect(objects.map((o) => ({ ...o, bucket: o.bucket instanceof Date ? o.bucket.getTime() : Number(o.bucket), count: Number(o.count) }))).toEqual(want);
  });

  it('pages continue after their last bucket; a raw cursor is not one of a rollup; max_rows is bounded by MERIDIAN_MAX_ROLLUP_ROWS', async () => {
    const want = await expected(60_000);
    const got: Rollup[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 1000; pages++) {
      const page = await download({ ...selection, resolution: '1m', format: 'json', max_rows: '7', ...(cursor ? { cursor } : {}) });
      expect(page.status).toBe(200);
      got.push(...(JSON.parse(page.bytes.toString()) as Rollup[]));
      cursor = page.headers.get('x-next-cursor');
      if (cursor === null) break;
      expect(page.headers.get('link')).toContain('cursor=');
    }
    expect(got).toEqual(want);
    const raw = await download({ ...selection, max_rows: '1' });
    const foreign = await download({ ...selection, resolution: '1m', cursor: raw.headers.get('x-next-cursor')! });
    expect(foreign.status).toBe(400);
    const over = await download({ ...selection, resolution: '1h', max_rows: '10001' });
    expect(over.status).toBe(400);
    expect(over.bytes.toString()).toContain('MERIDIAN_MAX_ROLLUP_ROWS');
    expect((await download({ ...selection, resolution: '5m' })).status).toBe(400);
  });

  it('points uploaded later join their buckets; an unreadable metric is a 404 as in a raw download', async () => {
    await upload(NAMES[1]!, [
      [T0 + 59_999, -100],
      [T0 + 3 * 3_600_000 + 1, 100],
    ]);
    const want = await expected(3_600_000);
    const got = JSON.parse((await download({ ...selection, resolution: '1h', format: 'json' })).bytes.toString()) as Rollup[];
    expect(got).toEqual(want);
    expect(got.find((r) => r.metric_name === NAMES[1] && r.bucket === formatTimestamp(T0))!.min).toBe(-100);
    // Sealed again at their new counts: the same answer.
    await sealedAll();
    expect(JSON.parse((await download({ ...selection, resolution: '1h', format: 'json' })).bytes.toString())).toEqual(want);
    expect((await download({ metrics: 'secret.x', resolution: '1h' })).status).toBe(404);
  });

  it("a user's deletion of a range cutting buckets: downloads at raw, 1m and 1h agree after it", async () => {
    // Points are 37 s apart: the range's first and last minutes, and its two hours, keep points outside it.
    const [from, to] = [T0 + 2_980_000, T0 + 7_992_000];
    const bucketOf = (ms: number, step: number) => formatTimestamp(ms - (ms % step));
    const countIn = (rows: Rollup[], ms: number, step: number) => rows.find((r) => r.metric_name === NAMES[0] && r.bucket === bucketOf(ms, step))?.count;
    const before = JSON.parse((await download({ ...selection, resolution: '1m', format: 'json', max_rows: '10000' })).bytes.toString()) as Rollup[];
    const res = await call(`${api.url}/api/v1/metrics/delete`, admin, {
      method: 'POST',
      body: { metrics: NAMES[0], start_date: formatTimestamp(from), end_date: formatTimestamp(to), reason: 'rollups follow' },
    });
    expect(res.status, res.text).toBe(202);
    expect(res.json.points_selected).toBe(136 + 13); // the stored rows: 13 of the 136 points were uploaded twice
    expect((await waitForTask(api.url, admin, res.json.task_id, 120_000)).status).toBe('succeeded');
    const raw = await download({ metrics: NAMES[0]!, start_date: formatTimestamp(from), end_date: formatTimestamp(to), format: 'json' });
    expect(JSON.parse(raw.bytes.toString())).toEqual([]);
    for (const [resolution, stepMs] of [
      ['1m', 60_000],
      ['1h', 3_600_000],
    ] as const) {
      const got = JSON.parse((await download({ ...selection, resolution, format: 'json', max_rows: '10000' })).bytes.toString()) as Rollup[];
      expect(got, resolution).toEqual(await expected(stepMs));
      expect(
        got.some((r) => r.metric_name === NAMES[0] && r.bucket === bucketOf(from + 120_000, stepMs)),
        resolution,
      ).toBe(resolution === '1h');
    }
    // Once the pass has sealed the rewritten buckets anew, the same answers; the range uploaded again is kept, and counted.
    await sealedAll();
    for (const stepMs of [60_000, 3_600_000]) {
      const resolution = stepMs === 60_000 ? '1m' : '1h';
      expect(JSON.parse((await download({ ...selection, resolution, format: 'json', max_rows: '10000' })).bytes.toString()), resolution).toEqual(
        await expected(stepMs),
      );
    }
    const after = JSON.parse((await download({ ...selection, resolution: '1m', format: 'json', max_rows: '10000' })).bytes.toString()) as Rollup[];
    for (const edge of [from, to]) expect(countIn(after, edge, 60_000)).toBe(countIn(before, edge, 60_000)! - 1);
    // The console's charts read the 1h rollup for whole hours: they count the rows that remain (charts count every stored row).
    const day = { metrics: NAMES[0]!, start_date: '2024-01-01', end_date: '2024-01-01' };
    const chart = await call(`${api.url}/api/v1/metrics/series?${new URLSearchParams({ ...day, step: '3600000' })}`, analyst);
    expect(chart.status, chart.text).toBe(200);
    expect(chart.json.rollup).toBe('1h');
    const [s] = chart.json.series as Array<{ t: number[]; count: number[] }>;
    const rows = JSON.parse((await download({ ...day, format: 'json', max_rows: '100000' })).bytes.toString()) as Array<{ timestamp: string }>;
    const perHour = new Map<number, number>();
    for (const r of rows) {
      const ts = Date.parse(r.timestamp.replace(/\+0000$/, 'Z'));
      perHour.set(ts - (ts % 3_600_000), (perHour.get(ts - (ts % 3_600_000)) ?? 0) + 1);
    }
    expect(new Map(s!.t.map((t, i) => [t, s!.count[i]!] as const).filter(([, n]) => n > 0))).toEqual(perHour);
  });

  it('a year of a million points at 1h: 8,784 buckets, timed', async () => {
    const year = Date.UTC(2025, 0, 1) - T0; // 2024 is a leap year
    await seedPoints(settings, { metric: 'ru.year', count: 1_000_000, fromMs: T0, stepMs: Math.floor(year / 1_000_000), value: 'number % 1000' });
    const timed = async () => {
      const started = performance.now();
      const res = await download({ metrics: 'ru.year', resolution: '1h', format: 'json', max_rows: '10000' });
      const ms = performance.now() - started;
      expect(res.status).toBe(200);
      const rows = JSON.parse(res.bytes.toString()) as Rollup[];
      expect(rows).toHaveLength(8784);
      expect(rows.reduce((a, r) => a + r.count, 0)).toBe(1_000_000);
      return { ms, rows };
    };
    const first = await timed(); // right after the insert: the pass may have sealed some hours already, not all
    await sealedAll(['1h']);
    const sealed = await timed();
    expect(sealed.rows).toEqual(first.rows);
    console.log(`a year of 1M points at 1h, 8784 buckets: ${first.ms.toFixed(0)} ms right after the insert, ${sealed.ms.toFixed(0)} ms sealed`);
  });
});
