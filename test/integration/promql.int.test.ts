import { beforeAll, describe, expect, it } from 'vitest';
import { completeSeriesLabels, readSamples, seriesByLabels } from '@meridian/clickhouse';
import { scratchDatabase } from '../support/scratch-database.ts';

/**
 * The PromQL reads against a real ClickHouse (18.16 here, 26.9 in the modern tier): samples
 * deduplicated to the newest row of a timestamp and sorted, the bound on samples and the sparse
 * steps.
 */
const { conn, client } = scratchDatabase();

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
  let v = 0;
  for (let i = 0; i < 300; i++) {
    // A counter with resets and uneven spacing; a gauge that goes up and down.
    v = i % 97 === 50 ? 3 : v + (i % 5);
    rows.push(row(COUNTER, T + i * 15_000 + (i % 3) * 1000, v));
    rows.push(row(GAUGE, T + i * 20_000, 20 + Math.sin(i / 7) * 3));
  }
  // The same timestamp uploaded again later: the newer row wins.
  rows.push(row(GAUGE, T + 20_000, 99, T + 1));
  // Again at the same updated_at: the later Kafka offset wins.
  rows.push(row(COUNTER, T + 32_000, 777));
  // Inserted out of order, in two parts.
  const shuffled = [...rows].reverse();
  await client.insert({ table: 'points', values: shuffled.slice(0, 300), format: 'JSONEachRow' });
  await client.insert({ table: 'points', values: shuffled.slice(300), format: 'JSONEachRow' });
}, 120_000);

describe('PromQL samples from ClickHouse', () => {
  it('one per timestamp (the newest row), sorted, names as external data', async () => {
    const read = await readSamples(conn, { names: [GAUGE, COUNTER, 'absent'], fromMs: T, toMs: T + 100_000, sparse: null, maxSamples: 1000 });
    expect(read).not.toBe('too_many');
    const gauge = (read as Array<{ name: string; ts: number[]; vs: number[] }>).find((s) => s.name === GAUGE)!;
    expect(gauge.ts).toEqual([T, T + 20_000, T + 40_000, T + 60_000, T + 80_000, T + 100_000]);
    expect(gauge.vs[1]).toBe(99);
    const counter = (read as Array<{ name: string; ts: number[]; vs: number[] }>).find((s) => s.name === COUNTER)!;
    expect(counter.ts.slice(0, 3)).toEqual([T, T + 16_000, T + 32_000]);
    expect(counter.vs[2]).toBe(777);
    expect(new Set(counter.ts).size).toBe(counter.ts.length);
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
