import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootstrapAdmin, createUser } from '../support/accounts.ts';
import { call, startApi, type RunningApi } from '../support/api.ts';
import { clickhouse } from '../support/clickhouse.ts';
import { seedPoints } from '../support/seed-points.ts';
import { isolatedSettings } from '../support/settings.ts';

/**
 * GET /api/v1/metrics/series against real ClickHouse: a million points over four months come
 * back sampled over the whole range, with exact per-bucket min, max, average and count; names
 * are entitled as in a download; the bounds answer 400 naming their settings.
 */
const settings = isolatedSettings({ MERIDIAN_MAX_SERIES_POINTS: '2000', MERIDIAN_MAX_SERIES_PER_REQUEST: '2' });
let api: RunningApi;
let analyst: string;

const T0 = Date.UTC(2024, 0, 1);
const FOUR_MONTHS = Date.UTC(2024, 4, 1) - T0;
const BIG = 1_000_000;
const BIG_STEP = Math.floor(FOUR_MONTHS / BIG); // 10,454 ms: the last point on 2024-04-30
const LAST = T0 + (BIG - 1) * BIG_STEP;

type Series = { metric_name: string; t: number[]; min: number[]; max: number[]; avg: number[]; count: number[] };
type Answer = {
  start: string | null;
  end: string | null;
  start_ms: number | null;
  end_ms: number | null;
  step_ms: number | null;
  rollup: string | null;
  series: Series[];
};

async function series(qs: Record<string, string>, key = analyst) {
  const res = await call(`${api.url}/api/v1/metrics/series?${new URLSearchParams(qs)}`, key);
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    body: res.json as Answer & { detail?: string; errors?: Array<{ field: string; reason: string }> },
  };
}

beforeAll(async () => {
  api = await startApi(settings);
  const admin = await bootstrapAdmin(settings);
  await api.api.accounts.syncToEnd();
  analyst = await createUser(api.url, admin, 'analyst', [{ match: 'prefix', value: 'ser.', access: 'r' }]);
  // value = i: each bucket's min, max, average and count follow from its first and last point.
  await seedPoints(settings, { metric: 'ser.big', count: BIG, fromMs: T0, stepMs: BIG_STEP, value: 'number' });
  await seedPoints(settings, { metric: 'ser.two.a', count: 100, fromMs: T0, stepMs: 3_600_000, value: 'number * 1000' });
  await seedPoints(settings, { metric: 'ser.two.b', count: 50, fromMs: T0 + 1_800_000, stepMs: 7_200_000, value: '-number' });
  await seedPoints(settings, { metric: 'secret.big', count: 10, fromMs: T0, stepMs: 1000, value: 'number' });
  // A name no SQL text could hold unescaped: a quote, a tab, a backslash and a comment.
  await clickhouse(
    settings,
    `INSERT INTO points SELECT 'ser.it\\'s\\t\\\\ -- name', ${T0} + number * 1000, toFloat64(number), ${T0}, 'test-seed', 65535, 0, toUInt32(number) FROM numbers(7)`,
  );
}, 180_000);
afterAll(async () => {
  await api?.close();
});

describe('GET /api/v1/metrics/series', () => {
  it('samples a million points over their four months, start to end, with exact buckets', async () => {
    const started = performance.now();
    const { status, body } = await series({ metrics: 'ser.big', points: '2000' });
    const ms = performance.now() - started;
    expect(status, JSON.stringify(body)).toBe(200);
    expect([body.start_ms, body.end_ms]).toEqual([T0, LAST]);
    const [s] = body.series;
    expect(s!.metric_name).toBe('ser.big');
    expect(s!.t.length).toBeLessThanOrEqual(2000);
    expect(s!.t.length).toBeGreaterThan(2000 / 3);
    const step = body.step_ms!;
    // The whole range: the first bucket holds the first point, the last bucket the last one.
    expect(s!.t[0]).toBe(Math.floor(T0 / step) * step);
    expect(s!.t.at(-1)).toBe(Math.floor(LAST / step) * step);
    expect(s!.count.reduce((a, b) => a + b, 0)).toBe(BIG);
    expect(s!.min[0]).toBe(0);
    expect(s!.max.at(-1)).toBe(BIG - 1);
    for (let i = 0; i < s!.t.length; i++) {
      // Consecutive whole values: count = max − min + 1, the mean halfway, buckets in order and adjacent.
      expect(s!.count[i]).toBe(s!.max[i]! - s!.min[i]! + 1);
      expect(s!.avg[i]).toBeCloseTo((s!.min[i]! + s!.max[i]!) / 2, 6);
      if (i > 0) expect(s!.min[i]).toBe(s!.max[i - 1]! + 1);
      // Every point of the bucket lies within it.
      expect(T0 + s!.min[i]! * BIG_STEP).toBeGreaterThanOrEqual(s!.t[i]!);
      expect(T0 + s!.max[i]! * BIG_STEP).toBeLessThan(s!.t[i]! + step);
    }
    // Four months in steps of whole hours: the buckets inside the range come from the 1h rollup, with the figures above.
    expect(body.rollup).toBe('1h');
    console.log(`series of 1M points in ${s!.t.length} buckets: ${ms.toFixed(0)} ms`);
  });

  it('keeps to the range given, and to a step given', async () => {
    const { status, body } = await series({ metrics: 'ser.big', start_date: '2024-03-01', end_date: '2024-03-01', step: '3600000' });
    expect(status, JSON.stringify(body)).toBe(200);
    expect([body.start, body.end, body.step_ms]).toEqual(['2024-03-01T00:00:00+0000', '2024-03-01T23:59:59.999+0000', 3_600_000]);
    const [s] = body.series;
    expect(s!.t).toEqual(Array.from({ length: 24 }, (_, h) => Date.UTC(2024, 2, 1, h)));
    const first = Math.ceil((Date.UTC(2024, 2, 1) - T0) / BIG_STEP);
    const last = Math.floor((Date.UTC(2024, 2, 2) - 1 - T0) / BIG_STEP);
    expect([s!.min[0], s!.max.at(-1)]).toEqual([first, last]);
    expect(s!.count.reduce((a, b) => a + b, 0)).toBe(last - first + 1);
  });

  it('charts the metrics a pattern matches, each its own series, in name order', async () => {
    const { status, body } = await series({ metrics: 'ser.two.', pattern: 'starts_with', step: '86400000' });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.series.map((s) => s.metric_name)).toEqual(['ser.two.a', 'ser.two.b']);
    const [a, b] = body.series;
    expect(a!.count.reduce((x, y) => x + y, 0)).toBe(100);
    expect(b!.count.reduce((x, y) => x + y, 0)).toBe(50);
    expect([a!.min[0], a!.max.at(-1), b!.max[0], b!.min.at(-1)]).toEqual([0, 99_000, 0, -49]);
    // The range spans both: from the first point of either to the last of either.
    expect([body.start_ms, body.end_ms]).toEqual([T0, Math.max(T0 + 99 * 3_600_000, T0 + 1_800_000 + 49 * 7_200_000)]);
    // A list names the same two.
    const list = await series({ metrics: 'ser.two.b,ser.two.a', pattern: 'list', step: '86400000' });
    expect(list.body.series).toEqual(body.series);
  });

  it('takes any metric name as data, never as SQL', async () => {
    const name = "ser.it's\t\\ -- name";
    const { status, body } = await series({ metrics: name, step: '1000' });
    expect(status, JSON.stringify(body)).toBe(200);
    expect(body.series).toEqual([
      {
        metric_name: name,
        t: Array.from({ length: 7 }, (_, i) => T0 + i * 1000),
        min: [0, 1, 2, 3, 4, 5, 6],
        max: [0, 1, 2, 3, 4, 5, 6],
        avg: [0, 1, 2, 3, 4, 5, 6],
        count: [1, 1, 1, 1, 1, 1, 1],
      },
    ]);
    expect((await series({ metrics: "it's\t", pattern: 'contains', step: '1000' })).body.series.map((s) => s.metric_name)).toEqual([name]);
  });

  it('answers a metric the caller may not read exactly as one that does not exist', async () => {
    const hidden = await series({ metrics: 'secret.big' });
    const missing = await series({ metrics: 'ser.nope' });
    expect(hidden.status).toBe(404);
    expect(hidden.type).toMatch(/application\/problem\+json/);
    expect({ ...hidden.body, instance: undefined, request_id: undefined }).toEqual({ ...missing.body, instance: undefined, request_id: undefined });
    expect((await series({ metrics: 'ser.big,secret.big', pattern: 'list' })).status).toBe(404);
    // A substring pattern sees only readable metrics: nothing, not a 404.
    const none = await series({ metrics: 'secret', pattern: 'contains' });
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ start: null, end: null, start_ms: null, end_ms: null, step_ms: null, rollup: null, series: [] });
  });

  it('refuses past its bounds with a 400 naming the setting', async () => {
    const tooMany = await series({ metrics: 'ser.big', points: '2001' });
    expect(tooMany.status).toBe(400);
    expect(tooMany.type).toMatch(/application\/problem\+json/);
    expect(tooMany.body.errors).toEqual([{ field: 'points', reason: expect.stringContaining('MERIDIAN_MAX_SERIES_POINTS') }]);
    const fineStep = await series({ metrics: 'ser.big', step: '60000' });
    expect(fineStep.status).toBe(400);
    expect(fineStep.body.errors).toEqual([{ field: 'step', reason: expect.stringContaining('MERIDIAN_MAX_SERIES_POINTS') }]);
    const wide = await series({ metrics: 'ser.', pattern: 'starts_with' });
    expect(wide.status).toBe(400);
    expect(wide.body.errors).toEqual([{ field: 'metrics', reason: expect.stringContaining('MERIDIAN_MAX_SERIES_PER_REQUEST') }]);
    const longList = await series({ metrics: 'ser.big,ser.two.a,ser.two.b', pattern: 'list' });
    expect(longList.status).toBe(400);
    expect(longList.body.errors).toEqual([{ field: 'metrics', reason: expect.stringContaining('MERIDIAN_MAX_SERIES_PER_REQUEST') }]);
    expect((await series({ metrics: 'ser.big', points: '10', step: '1000' })).status).toBe(400);
    expect((await call(`${api.url}/api/v1/metrics/series?metrics=ser.big`, null)).status).toBe(401);
  });

  it('is in the OpenAPI document with its parameters', async () => {
    const doc = (await call(`${api.url}/api/v1/openapi.json`, null)).json;
    const op = doc.paths['/api/v1/metrics/series'].get;
    expect(op.operationId).toBe('metricSeries');
    expect(op.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['end_date', 'metrics', 'pattern', 'points', 'start_date', 'step']);
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '404']));
  });
});
