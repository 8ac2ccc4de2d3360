import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatTimestamp } from '@meridian/domain';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { startWorker } from '../support/ingest.ts';
import { isolatedSettings } from '../support/settings.ts';
import { waitForTask } from '../support/tasks.ts';
import { uploadFile } from '../support/uploads.ts';
import { waitFor } from '../support/wait.ts';
import { seededRandom } from '../support/random.ts';

/**
 * The Prometheus API reading the rollups (points_1h, points_1m) for windows of whole buckets,
 * against the real stack: points uploaded through the api, some uploaded again with other values
 * (buckets whose rollup holds replaced rows), with gaps of hours; every answer of an api reading
 * rollups must be the answer of one reading only raw points (MERIDIAN_PROMQL_ROLLUP_MIN_RANGE=off),
 * every series, timestamp and value; misaligned windows take the raw path; an unentitled series
 * stays invisible; buckets count against the samples bound.
 */
// The test's series are sparse (a dozen points an hour): rollups are read whatever the points per bucket.
const settings = isolatedSettings({
  MERIDIAN_RATE_LIMIT_PER_SECOND: '0',
  LOG_LEVEL: 'info',
  MERIDIAN_PROMQL_ROLLUP_MIN_POINTS_PER_BUCKET: '0',
  MERIDIAN_POINTS_RETENTION_INTERVAL_MS: '500',
});
let rollups: RunningApi;
let raw: RunningApi;
/** Reads rollups under a samples bound the hourly buckets fit in and the minutes do not. */
let tight: RunningApi;
let ingest: Awaited<ReturnType<typeof startWorker>>;
let admin: string;
let analyst: string;

const HOUR = 3_600_000;
const T0 = Date.UTC(2024, 2, 1);
const DAYS = 3;
const ROOMS = ['a', 'b', 'c'];

type Row = [name: string, ts: number, value: number];

/**
 * Whole-second points every few minutes, some on the hour and on the minute (where a window's
 * end sample and a bucket's first meet), integers (sums are then exact in any order) but one
 * room of two decimals; room c has a gap of 7 hours.
 */
function firstUpload(): Row[] {
  const rnd = seededRandom(7);
  const rows: Row[] = [];
  for (const room of ROOMS) {
    for (let t = T0 + 1000 * Math.floor(rnd() * 600); t < T0 + DAYS * 24 * HOUR;) {
      const inGap = room === 'c' && t >= T0 + 30 * HOUR && t < T0 + 37 * HOUR;
      const v = room === 'b' ? Math.round(rnd() * 10_000) / 100 : Math.floor(rnd() * 1000) - 300;
      if (!inGap) rows.push([`rq_temp{room="${room}"}`, t, v]);
      const r = rnd();
      t = r < 0.1 ? Math.ceil((t + 1) / HOUR) * HOUR : r < 0.3 ? Math.ceil((t + 1) / 60_000) * 60_000 : t + 1000 * (60 + Math.floor(rnd() * 600));
    }
  }
  for (let t = T0; t < T0 + DAYS * 24 * HOUR; t += 5 * 60_000) rows.push(['rq_secret{room="a"}', t, 1e6]);
  return rows;
}

const csv = (rows: readonly Row[], updatedAt: number) =>
  `metric_name,timestamp,metric_numeric_value,updated_at\n${rows
    .map(([n, t, v]) => `"${n.replace(/"/g, '""')}",${formatTimestamp(t)},${v},${formatTimestamp(updatedAt)}`)
    .join('\n')}\n`;

async function upload(rows: readonly Row[], updatedAt: number): Promise<void> {
  const res = await uploadFile(rollups.url, admin, csv(rows, updatedAt));
  expect(res.status, res.text).toBe(202);
  const task = await waitForTask(rollups.url, admin, res.json.task_id as string, 170_000);
  expect(task.status, JSON.stringify(task)).toBe('succeeded');
}

type Answer = { status: string; errorType?: string; error?: string; data?: { resultType: string; result: unknown[] } };

async function query(on: RunningApi, params: Record<string, string>, key = analyst): Promise<{ status: number; body: Answer }> {
  const path = params.time === undefined ? 'query_range' : 'query';
  const res = await fetch(`${on.url}/prometheus/api/v1/${path}?${new URLSearchParams(params)}`, { headers: { Authorization: `Bearer ${key}` } });
  return { status: res.status, body: (await res.json()) as Answer };
}

/** The bucket widths the last PromQL query of an api read from rollups (empty: every window raw). */
function lastRollups(on: RunningApi): number[] {
  const logged = on.logs().filter((l) => l.msg === 'promql query');
  return logged[logged.length - 1]!.rollups as number[];
}

const s = (ms: number) => String(ms / 1000);
const FUNCS = ['min_over_time', 'max_over_time', 'sum_over_time', 'count_over_time', 'last_over_time'];

/** The same query of both apis: the same answer, and whether the rollup api read rollups of which widths. */
async function same(params: Record<string, string>, widths: number[]): Promise<number> {
  const [a, b] = [await query(rollups, params), await query(raw, params)];
  expect(a.status, JSON.stringify(a.body)).toBe(200);
  expect(b.status, JSON.stringify(b.body)).toBe(200);
  expect(lastRollups(rollups), params.query).toEqual(widths);
  expect(lastRollups(raw)).toEqual([]);
  // A sum over buckets adds the same values in another grouping: the two agree to the rounding.
  const rounded = /sum_over_time/.test(params.query!);
  const points = (x: Answer) =>
    (x.data!.result as Array<{ metric: object; values?: Array<[number, string]>; value?: [number, string] }>).map((r) => ({
      metric: JSON.stringify(r.metric),
      points: r.values ?? [r.value!],
    }));
  const [p, q] = [points(a.body), points(b.body)];
  expect(
    p.map((x) => [x.metric, x.points.map((v) => v[0])]),
    params.query,
  ).toEqual(q.map((x) => [x.metric, x.points.map((v) => v[0])]));
  p.forEach((x, i) =>
    x.points.forEach(([t, v], k) => {
      const want = q[i]!.points[k]![1];
      if (rounded) expect(Math.abs(Number(v) - Number(want)), `${params.query} ${x.metric} ${t}`).toBeLessThanOrEqual(1e-12 * Math.abs(Number(want)));
      else expect(v, `${params.query} ${x.metric} ${t}`).toBe(want);
    }),
  );
  return a.body.data!.result.length;
}

beforeAll(async () => {
  [rollups, raw, tight, ingest] = await Promise.all([
    startApi(settings),
    startApi({ ...settings, MERIDIAN_PROMQL_ROLLUP_MIN_RANGE: 'off' }),
    startApi({ ...settings, MERIDIAN_PROMQL_MAX_SAMPLES: 2000 }),
    startWorker(settings),
  ]);
  admin = await bootstrapAdmin(settings);
  await Promise.all([rollups, raw, tight].map((a) => a.api.accounts.syncToEnd()));
  analyst = await createUser(rollups.url, admin, 'rq-analyst', [{ match: 'prefix', value: 'rq_temp{', access: 'r' }]);
  await Promise.all([rollups, raw, tight].map((a) => a.api.accounts.syncToEnd()));
  const rows = firstUpload();
  await upload(rows, T0 + 100 * 24 * HOUR);
  // Every seventh point again with another value, newer: those buckets hold replaced rows (the hour ones among them).
  const again = rows.filter((r, i) => i % 7 === 0 || r[1] % HOUR === 0).map(([n, t, v]): Row => [n, t, v + 0.5]);
  await upload(again, T0 + 101 * 24 * HOUR);
}, 180_000);
afterAll(async () => {
  await Promise.all([rollups, raw, tight, ingest].map((x) => x?.close()));
});

describe('PromQL windows from the rollups', () => {
  it('answers each function over hourly and minute buckets as from the raw points', async () => {
    const end = T0 + DAYS * 24 * HOUR;
    for (const func of FUNCS) {
      expect(await same({ query: `${func}(rq_temp[1h])`, start: s(T0), end: s(end), step: '3600' }, [HOUR])).toBe(3);
      await same({ query: `${func}(rq_temp[3h])`, start: s(T0 + 5 * HOUR), end: s(end), step: '7200' }, [HOUR]);
      await same({ query: `${func}(rq_temp{room!="b"}[2h] offset 1h)`, start: s(T0 + 2 * HOUR), end: s(end), step: '1800' }, [60_000]);
      await same({ query: `${func}(rq_temp[90m])`, start: s(T0 + 30 * 60_000), end: s(T0 + 40 * HOUR), step: '300' }, [60_000]);
      await same({ query: `${func}(rq_temp[1d])`, time: s(T0 + 36 * HOUR) }, [HOUR]);
      await same({ query: `${func}(rq_temp[2h])`, time: s(T0 + 31 * HOUR + 60_000) }, [60_000]);
    }
    // avg keeps Prometheus' running mean, which a sum over a count does not give bit for bit: read raw.
    await same({ query: 'avg_over_time(rq_temp[1h])', start: s(T0), end: s(end), step: '3600' }, []);
    await same({ query: 'sum by (room) (max_over_time(rq_temp[1h]))', start: s(T0), end: s(end), step: '3600' }, [HOUR]);
    await same({ query: 'avg(count_over_time(rq_temp[1h]))', start: s(T0), end: s(end), step: '3600' }, [HOUR]);
    await same({ query: 'max_over_time(rq_temp[1h]) - min_over_time(rq_temp[1h])', start: s(T0), end: s(end), step: '3600' }, [HOUR, HOUR]);
  });

  it('reads misaligned windows, shorter ranges and other functions from the raw points, answering the same', async () => {
    const end = T0 + DAYS * 24 * HOUR;
    await same({ query: 'max_over_time(rq_temp[1h])', start: s(T0 + 17_000), end: s(end), step: '3600' }, []);
    await same({ query: 'sum_over_time(rq_temp[1h])', start: s(T0), end: s(end), step: '90' }, []);
    await same({ query: 'count_over_time(rq_temp[61m30s])', start: s(T0), end: s(end), step: '3600' }, []);
    await same({ query: 'last_over_time(rq_temp[30m])', start: s(T0), end: s(end), step: '3600' }, []);
    await same({ query: 'min_over_time(rq_temp[1h] offset 30s)', time: s(T0 + 36 * HOUR) }, []);
    await same({ query: 'rate(rq_temp[1h])', start: s(T0), end: s(end), step: '3600' }, []);
    await same({ query: 'quantile_over_time(0.5, rq_temp[1h])', start: s(T0), end: s(end), step: '3600' }, []);
  });

  it('keeps a series the caller may not read invisible', async () => {
    const params = { query: 'max_over_time({__name__=~"rq_.+"}[1h])', start: s(T0), end: s(T0 + 24 * HOUR), step: '3600' };
    const names = (x: NonNullable<Answer['data']>) => (x.result as Array<{ metric: Record<string, string> }>).map((r) => JSON.stringify(r.metric)).sort();
    const mine = await query(rollups, params);
    expect(lastRollups(rollups)).toEqual([HOUR]);
    expect(names(mine.body.data!)).toEqual(ROOMS.map((room) => JSON.stringify({ room })));
    const hidden = await query(rollups, { ...params, query: 'max_over_time(rq_secret[1h])' });
    const missing = await query(rollups, { ...params, query: 'max_over_time(rq_nothing[1h])' });
    expect(hidden.body).toEqual(missing.body);
    expect(hidden.body.data!.result).toEqual([]);
    const asAdmin = await query(rollups, { ...params, query: 'max_over_time(rq_secret[1h])' }, admin);
    expect(asAdmin.body.data!.result).toHaveLength(1);
  });

  it('counts the buckets read against MERIDIAN_PROMQL_MAX_SAMPLES', async () => {
    const end = T0 + DAYS * 24 * HOUR;
    // 3 series × 72 hours: within 2,000; the same windows in minutes are 3 × 4,320 buckets.
    const hours = await query(tight, { query: 'max_over_time(rq_temp[1h])', start: s(T0), end: s(end), step: '3600' });
    expect(hours.status, JSON.stringify(hours.body)).toBe(200);
    const minutes = await query(tight, { query: 'max_over_time(rq_temp[1h])', start: s(T0), end: s(end), step: '60' });
    expect(lastRollups(tight)).toEqual([60_000]);
    expect(minutes.status).toBe(422);
    expect(minutes.body).toMatchObject({ errorType: 'execution', error: expect.stringContaining('MERIDIAN_PROMQL_MAX_SAMPLES') });
  });

  it('never reads a bucket before the raw points retention left, and reads the bucket of the first one raw', async () => {
    const MIN = 60_000;
    const now = Math.floor(Date.now() / MIN) * MIN;
    // Seconds 7, 12, … 57 of each minute: the first point retention leaves is never on the minute.
    const minutes = (from: number, to: number) =>
      Array.from({ length: to - from }, (_, m) => Array.from({ length: 11 }, (_, k) => now + (from + m) * MIN + 7000 + 5000 * k)).flat();
    const old = minutes(-30, -10);
    const fresh = minutes(10, 40);
    await upload(
      [...old, ...fresh].map((t, i): Row => ['rq_ret', t, (i * 37) % 101]),
      now,
    );
    const set = await call(`${rollups.url}/api/v1/retention`, admin, { method: 'PUT', body: { match: 'prefix', value: 'rq_ret', seconds: 5 } });
    expect(set.status, set.text).toBe(200);
    await waitFor(
      'the catalog to start at the first point retention left',
      async () => {
        const catalog = await call(`${rollups.url}/api/v1/metrics?${new URLSearchParams({ metrics: 'rq_ret' })}`, admin);
        const entry = (catalog.json?.metrics as Array<{ first_timestamp: string }> | undefined)?.[0];
        return entry?.first_timestamp === formatTimestamp(fresh[0]!) ? true : undefined;
      },
      60_000,
      200,
    );
    // Windows of 1 h every minute over both: the minute buckets of the old points are still in the rollup.
    for (const func of ['count_over_time', 'min_over_time', 'last_over_time', 'sum_over_time']) {
      const params = { query: `${func}(rq_ret[1h])`, start: s(now - 40 * MIN), end: s(now + 60 * MIN), step: '60' };
      const [a, b] = [await query(rollups, params, admin), await query(raw, params, admin)];
      expect(lastRollups(rollups).length, func).toBe(1);
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      expect(JSON.stringify(a.body.data), func).toBe(JSON.stringify(b.body.data));
    }
    const counted = await query(rollups, { query: 'count_over_time(rq_ret[1h])', time: s(now + 60 * MIN) }, admin);
    expect(counted.body.data!.result).toEqual([{ metric: {}, value: [(now + 60 * MIN) / 1000, String(fresh.length)] }]);
  });
});
