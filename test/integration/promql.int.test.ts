import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  completeSeriesLabels,
  ensureDatabase,
  migrate,
  readAggregated,
  readSamples,
  readWindowStats,
  readWindowValues,
  seriesByLabels,
} from '@meridian/clickhouse';
import { evalRangeFunction, evalWindowStats, WINDOW_STATS_FUNCTIONS, type WindowStats } from '@meridian/domain';
import { scratchConnection } from '../support/scratch-database.ts';

/**
 * The PromQL reads against a real ClickHouse (18.16 here, 26.9 in the modern tier): samples
 * deduplicated to the newest row of a timestamp and sorted, the sparse steps, and the windows
 * reduced per series and step giving every reducible function exactly what the samples give.
 */
const { settings, conn, client } = scratchConnection();

const T = 1_700_000_000_000;
const COUNTER = 'requests_total{job="a\\"b"}';
const GAUGE = 'temp{room="lab"}';
type Row = {
  metric_name: string;
  ts: number;
  value: number;
  updated_at: number;
  task_id: string;
  kafka_partition: number;
  kafka_offset: number;
  row_in_batch: number;
};
const rows: Row[] = [];
const row = (metric_name: string, ts: number, value: number, updated_at = T): Row => ({
  metric_name,
  ts,
  value,
  updated_at,
  task_id: 't',
  kafka_partition: 0,
  kafka_offset: rows.length,
  row_in_batch: 0,
});

beforeAll(async () => {
  await ensureDatabase(conn);
  await migrate(client);
  let v = 0;
  for (let i = 0; i < 300; i++) {
    // A counter with resets and uneven spacing; a gauge that goes up and down.
    v = i % 97 === 50 ? 3 : v + (i % 5);
    rows.push(row(COUNTER, T + i * 15_000 + (i % 3) * 1000, v));
    rows.push(row(GAUGE, T + i * 20_000, 20 + Math.sin(i / 7) * 3));
  }
  // The same timestamp uploaded again later: the newer row wins.
  rows.push(row(GAUGE, T + 20_000, 99, T + 1));
  // Inserted out of order, in two parts.
  const shuffled = [...rows].reverse();
  await client.insert({ table: 'points', values: shuffled.slice(0, 300), format: 'JSONEachRow' });
  await client.insert({ table: 'points', values: shuffled.slice(300), format: 'JSONEachRow' });
}, 120_000);
afterAll(async () => {
  await client.command({ query: `DROP DATABASE IF EXISTS ${settings.CLICKHOUSE_DATABASE}` });
  await client.close();
});

describe('PromQL samples from ClickHouse', () => {
  it('one per timestamp (the newest row), sorted, names as external data', async () => {
    const read = await readSamples(conn, { names: [GAUGE, COUNTER, 'absent'], fromMs: T, toMs: T + 100_000, sparse: null, maxSamples: 1000 });
    expect(read).not.toBe('too_many');
    const gauge = (read as Array<{ name: string; ts: number[]; vs: number[] }>).find((s) => s.name === GAUGE)!;
    expect(gauge.ts).toEqual([T, T + 20_000, T + 40_000, T + 60_000, T + 80_000, T + 100_000]);
    expect(gauge.vs[1]).toBe(99);
    expect((read as unknown[]).length).toBe(2);
  });

  it('answers too_many past the bound, and only the samples some sparse step sees', async () => {
    expect(await readSamples(conn, { names: [GAUGE], fromMs: T, toMs: T + 10_000_000, sparse: null, maxSamples: 10 })).toBe('too_many');
    const sparse = await readSamples(conn, {
      names: [GAUGE],
      fromMs: T,
      toMs: T + 3_600_000,
      sparse: { firstRefMs: T + 600_000, stepMs: 600_000, widthMs: 60_000 },
      maxSamples: 1000,
    });
    const ts = (sparse as Array<{ ts: number[] }>)[0]!.ts;
    for (const t of ts) expect((((T + 600_000 - t) % 600_000) + 600_000) % 600_000).toBeLessThanOrEqual(60_000);
    expect(ts.length).toBeGreaterThan(10);
  });

  // 45 s steps: each sample joined to its windows; 60 s steps: the range is 5 steps, so grouped by step first (samples on step ends included).
  it.each([45_000, 60_000])('reduces windows per series and step to what the samples give, for every reducible function (steps of %i ms)', async (stepMs) => {
    const reduce = { firstRefMs: T + 300_000, stepMs, steps: 80, rangeMs: 300_000 };
    const request = {
      names: [COUNTER, GAUGE],
      fromMs: reduce.firstRefMs - reduce.rangeMs,
      toMs: reduce.firstRefMs + (reduce.steps - 1) * reduce.stepMs,
      sparse: null,
      maxSamples: 100_000,
    };
    const stats = new Map<string, WindowStats>();
    const read = await readWindowStats(conn, { ...request, reduce }, (name, k, s) => stats.set(`${name} ${k}`, s));
    expect(typeof read).toBe('number');
    const samples = (await readSamples(conn, request)) as Array<{ name: string; ts: number[]; vs: number[] }>;
    let compared = 0;
    for (const s of samples) {
      for (let k = 0; k < reduce.steps; k++) {
        const end = reduce.firstRefMs + k * reduce.stepMs;
        const bounds = { rangeStartMs: end - reduce.rangeMs, rangeEndMs: end, rangeSeconds: reduce.rangeMs / 1000 };
        const lo = s.ts.findIndex((t) => t >= bounds.rangeStartMs);
        const hi = s.ts.findLastIndex((t) => t <= end);
        const st = stats.get(`${s.name} ${k}`);
        expect(st === undefined, `${s.name} step ${k}`).toBe(lo < 0 || hi < lo);
        if (!st) continue;
        for (const func of WINDOW_STATS_FUNCTIONS) {
          const want = evalRangeFunction(func, { ts: s.ts, vs: s.vs, lo, hi }, bounds, Number.NaN);
          const got = evalWindowStats(func, st, bounds);
          if (want === null || got === null) expect(got, `${func} ${s.name} step ${k}`).toBe(want);
          else expect(Math.abs(got - want), `${func} ${s.name} step ${k}`).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(want)));
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });

  it.each([45_000, 60_000])("computes each function's values in ClickHouse as from the reduction (steps of %i ms)", async (stepMs) => {
    const reduce = { firstRefMs: T + 300_000, stepMs, steps: 80, rangeMs: 300_000 };
    const request = {
      names: [COUNTER, GAUGE],
      fromMs: reduce.firstRefMs - reduce.rangeMs,
      toMs: reduce.firstRefMs + (reduce.steps - 1) * reduce.stepMs,
      sparse: null,
      maxSamples: 100_000,
    };
    const stats = new Map<string, WindowStats>();
    await readWindowStats(conn, { ...request, reduce }, (name, k, st) => stats.set(`${name} ${k}`, st));
    for (const func of WINDOW_STATS_FUNCTIONS) {
      const want = new Map<string, number>();
      for (const [key, st] of stats) {
        const end = reduce.firstRefMs + Number(key.slice(key.lastIndexOf(' ') + 1)) * reduce.stepMs;
        const v = evalWindowStats(func, st, { rangeStartMs: end - reduce.rangeMs, rangeEndMs: end, rangeSeconds: reduce.rangeMs / 1000 });
        if (v !== null) want.set(key, v);
      }
      const got = new Map<string, number>();
      const read = await readWindowValues(conn, { ...request, reduce, func }, (name, ks, vs) => ks.forEach((k, i) => got.set(`${name} ${k}`, vs[i]!)));
      expect(read, func).toBeGreaterThan(100);
      expect([...got.keys()].sort(), func).toEqual([...want.keys()].sort());
      for (const [key, v] of want) expect(Math.abs(got.get(key)! - v), `${func} ${key}`).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(v)));
    }
  });

  it('aggregates the reduced values by group in ClickHouse as the api would', async () => {
    const reduce = { firstRefMs: T + 600_000, stepMs: 60_000, steps: 60, rangeMs: 600_000 };
    const request = {
      names: [COUNTER, GAUGE],
      fromMs: reduce.firstRefMs - reduce.rangeMs,
      toMs: reduce.firstRefMs + (reduce.steps - 1) * reduce.stepMs,
      sparse: null,
      maxSamples: 100_000,
    };
    for (const func of WINDOW_STATS_FUNCTIONS) {
      const perSeries = new Map<number, number[]>();
      await readWindowStats(conn, { ...request, reduce }, (_name, k, st) => {
        const end = reduce.firstRefMs + k * reduce.stepMs;
        const v = evalWindowStats(func, st, { rangeStartMs: end - reduce.rangeMs, rangeEndMs: end, rangeSeconds: reduce.rangeMs / 1000 });
        if (v !== null) perSeries.set(k, [...(perSeries.get(k) ?? []), v]);
      });
      for (const op of ['sum', 'max', 'count'] as const) {
        const got = new Map<number, number>();
        const read = await readAggregated(conn, { ...request, reduce, aggregate: { op, func, groupOf: [0, 0], labels: [[]] } }, (group, k, v) => {
          expect(group).toBe(0);
          got.set(k, v);
        });
        expect(read, `${func} ${op}`).toBeGreaterThan(100);
        for (const [k, values] of perSeries) {
          const want = op === 'sum' ? values.reduce((a, b) => a + b, 0) : op === 'max' ? Math.max(...values) : values.length;
          expect(Math.abs(got.get(k)! - want), `${op}(${func}) step ${k}`).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(want)));
        }
        expect(got.size, `${op}(${func})`).toBe(perSeries.size);
      }
    }
  });
});

describe('series chosen by their labels in ClickHouse (series_labels)', () => {
  const UP1 = 'up{instance="h:1",job="node"}';
  const UP2 = 'up{instance="h:2",job="node"}';
  const NOTE = 'note{text="line\\nbreak \\"q\\" back\\\\slash"}';
  const PLAIN = 'plain.metric,with{odd}text';
  const UNSORTED = 'up{job="x",instance="h:3"}'; // not canonical: a series with __name__ only
  const names = [COUNTER, GAUGE, UP1, UP2, NOTE, PLAIN, UNSORTED];

  beforeAll(async () => {
    await client.insert({ table: 'points', values: [UP1, UP2, NOTE, PLAIN, UNSORTED].map((n, i) => row(n, T + i, i)), format: 'JSONEachRow' });
  });

  it("adds the labels of the catalog's names it lacks, once", async () => {
    expect(await completeSeriesLabels(conn)).toBeGreaterThanOrEqual(names.length);
    expect(await completeSeriesLabels(conn)).toBe(0);
  });

  it('equality and inequality on any label, __name__ included; a missing label is the empty value', async () => {
    const by = async (...m: Array<[string, boolean, string]>) =>
      (
        await seriesByLabels(
          conn,
          m.map(([name, equal, value]) => ({ name, equal, value })),
        )
      ).sort();
    expect(await by(['job', true, 'node'])).toEqual([UP1, UP2]);
    expect(await by(['__name__', true, 'up'], ['instance', false, 'h:1'])).toEqual([UP2]);
    expect(await by(['job', true, 'a"b'])).toEqual([COUNTER]);
    expect(await by(['text', true, 'line\nbreak "q" back\\slash'])).toEqual([NOTE]);
    expect(await by(['__name__', true, PLAIN])).toEqual([PLAIN]);
    expect(await by(['__name__', true, UNSORTED])).toEqual([UNSORTED]);
    expect(await by(['job', true, ''])).toEqual([GAUGE, NOTE, PLAIN, UNSORTED].sort());
    expect(await by(['room', false, ''])).toEqual([GAUGE]);
    expect(await by(['job', true, "x' OR 1=1 --"])).toEqual([]);
  });
});
