import { describe, expect, it } from 'vitest';
import {
  applyDeletion,
  createPointsSink,
  createSealPass,
  LIVE_DELETION_TARGETS,
  readRollupPage,
  SEALED,
  type PointsDeletion,
  type Resolution,
  type RollupRow,
} from '@meridian/clickhouse';
import type { Segment } from '@meridian/projection';
import { startQueryGate } from '../support/query-gate.ts';
import { referenceRollups } from '../support/rollup-reference.ts';
import { scratchDatabase } from '../support/scratch-database.ts';
import { waitFor } from '../support/wait.ts';

/**
 * Sealed rollup buckets (migration 011) and the seal pass, on this server (18.16; the modern
 * tier runs it on 26.9): the pass seals every closed bucket, clean or holding a replaced point,
 * with the aggregates of the deduplicated raw points; readRollupPage answers a bucket from its
 * sealed row only while the rollup's count equals the row's; an insert unseals, a deletion removes
 * the seals of the buckets it rewrites (a re-upload bringing a bucket back to its sealed count is
 * answered with the new points), and a pass seals at most its bound.
 */
describe('sealed rollup buckets', () => {
  const H = 3_600_000;
  const T = 1_700_000_000_000 - (1_700_000_000_000 % H); // an hour's start, long closed
  const A = 'rs.a "q\'';
  const B = 'rs.b';
  const { conn, client } = scratchDatabase(async () => {
    await sink.insert([first(1, A), first(2, B)]);
    await sink.insert([replaced]);
  });
  const sink = createPointsSink(client, 'points', { sealsTable: 'points_seals' });
  let offset = 10;

  /** Timestamps `step` apart in [T + from, T + to), values in quarters: every sum is exact in any order. */
  const times = (from: number, to: number, step: number) => Array.from({ length: Math.floor((to - from) / step) }, (_, i) => T + from + i * step);
  const segment = (o: number, metric: string, timestamps: number[], updatedAt: number, value: (ts: number) => number): Segment => ({
    partition: 0,
    offset: o,
    batch: { type: 'PointBatch', task_id: 't', metric_name: metric, updated_at: updatedAt, timestamps, values: timestamps.map(value) },
  });
  const first = (o: number, metric: string) => segment(o, metric, times(0, 3 * H, 7_000), 1, (ts) => ((ts / 1000) % 97) / 4);
  // Some of B uploaded again with other values: their buckets are dirty.
  const replaced = segment(3, B, times(0, 3 * H, 301_000), 2, (ts) => 1000 + ((ts / 1000) % 13) / 4);

  const every = (resolution: Resolution) =>
    readRollupPage(conn, { resolution, metricNames: [A, B], fromMs: T - H, toMs: T + 5 * H, after: null, maxRows: 100_000 }).then((p) => p.rows);
  const query = async <R>(sql: string) => (await client.query({ query: sql, format: 'JSONEachRow' })).json<R>();
  /** The sealed rows at their bucket's current count, as rows of a page. */
  const sealedRows = async (resolution: Resolution): Promise<RollupRow[]> => {
    const rows = await query<{ metric_name: string; b: string; points: string; lo: number; hi: number; total: number; last: number }>(
      `SELECT s.metric_name AS metric_name, toString(s.bucket) AS b, toString(points) AS points, min_value AS lo, max_value AS hi, sum_value AS total, last_value AS last
       FROM ${SEALED[resolution]} AS s ANY INNER JOIN (SELECT metric_name, bucket, countMerge(rows) AS rows FROM points_${resolution} GROUP BY metric_name, bucket) AS r USING (metric_name, bucket, rows)
       ORDER BY metric_name, b`,
    );
    return rows.map((r) => ({
      metric_name: r.metric_name,
      bucket: Number(r.b),
      count: Number(r.points),
      min: r.lo,
      max: r.hi,
      sum: r.total,
      avg: r.total / Number(r.points),
      last: r.last,
    }));
  };
  const pass = (maxBuckets = 1_000_000) => createSealPass(conn, { maxBuckets }).run();
  const expectExact = async () => {
    for (const resolution of ['1m', '1h'] as const) expect(await every(resolution), resolution).toEqual(await referenceRollups(conn, resolution));
  };

  it('a pass seals every closed bucket, clean and replaced ones, with the aggregates of the deduplicated raw points', async () => {
    const stats = await pass();
    const reference = { '1m': await referenceRollups(conn, '1m'), '1h': await referenceRollups(conn, '1h') };
    expect(stats.map((s) => [s.resolution, s.metricsBehind, s.buckets])).toEqual([
      ['1h', 2, reference['1h'].length],
      ['1m', 2, reference['1m'].length],
    ]);
    // B's replaced points (one every 301 s, each a timestamp of its own) reach its 3 hours and 35 minutes.
    expect(stats[0]!.replaced).toBe(3);
    expect(stats[1]!.replaced).toBe(35);
    for (const resolution of ['1m', '1h'] as const) expect(await sealedRows(resolution), resolution).toEqual(reference[resolution]);
    await expectExact();
    // Nothing left: the next pass finds no metric behind.
    expect((await pass()).map((s) => s.metricsBehind)).toEqual([0, 0]);
  });

  it('a sealed row answers its bucket only while its count is the rollup count', async () => {
    const [hour] = await every('1h');
    const truncate = () => client.command({ query: `TRUNCATE TABLE ${SEALED['1h']}` });
    await truncate();
    const bogus = (rows: number, sum: number) =>
      client.command({
        query: `INSERT INTO ${SEALED['1h']} (metric_name, bucket, rows, points, min_value, max_value, sum_value, last_value) SELECT metric_name, bucket, ${rows}, ${rows}, 0, 0, ${sum}, 0 FROM (SELECT '${'rs.a "q\\\''}' AS metric_name, toInt64(${hour!.bucket}) AS bucket)`,
      });
    await bogus(hour!.count + 1, 1e9); // a count the bucket does not have: not used
    expect((await every('1h'))[0]).toEqual(hour);
    await bogus(hour!.count, 1e9); // at its count: the reader takes it (which is why a deletion must remove seals)
    expect((await every('1h'))[0]!.sum).toBe(1e9);
    await truncate();
    await expectExact();
    expect((await pass()).map((s) => s.buckets)).toEqual([6, 0]);
  });

  it('an insert into a sealed bucket unseals it: the reader answers the new points, a pass seals it again', async () => {
    // New timestamps (odd seconds between A's) and a replaced one, in A's first hour.
    await sink.insert([segment(offset++, A, times(3_500, 600_000, 10_000), 3, () => 42.25)]);
    await expectExact();
    const stats = await pass();
    expect(stats.map((s) => s.buckets)).toEqual([1, 10]);
    for (const resolution of ['1m', '1h'] as const) expect(await sealedRows(resolution), resolution).toEqual(await referenceRollups(conn, resolution));
    await expectExact();
  });

  it('a deletion, then a re-upload bringing its buckets back to their sealed counts: the new points are answered', async () => {
    await pass();
    const before = await every('1m');
    // A's second hour, deleted, then uploaded again with other values: the same timestamps, so the same counts.
    const hour = times(0, 3 * H, 7_000).filter((ts) => ts >= T + H && ts < T + 2 * H);
    const d: PointsDeletion = { taskId: 'd', partition: 0, offset: offset++, metrics: [A], fromMs: T + H, toMs: T + 2 * H - 1, rollups: true };
    await applyDeletion(client, LIVE_DELETION_TARGETS, d);
    const [left] = await query<{ n: string }>(`SELECT toString(count()) AS n FROM ${SEALED['1h']} WHERE bucket = ${T + H} AND metric_name = 'rs.a "q\\''`);
    expect(left?.n).toBe('0');
    await sink.insert([segment(offset++, A, hour, 4, () => -3.5)]);
    const after = await every('1m');
    expect(after.length).toBe(before.length);
    expect(after.filter((r, i) => r.count !== before[i]!.count)).toEqual([]);
    await expectExact();
    expect((await every('1h')).find((r) => r.metric_name === A && r.bucket === T + H)!.sum).toBe(-3.5 * hour.length);
  });

  it('a pass seals at most its bound, and the next one goes on', async () => {
    await sink.insert([segment(offset++, A, times(5_000, 3 * H, 60_000), 5, () => 1.5), segment(offset++, B, times(5_000, 3 * H, 60_000), 5, () => 2.5)]);
    const stats = await pass(25);
    expect(stats.map((s) => [s.metricsBehind, s.buckets])).toEqual([
      [2, 6],
      [2, 25],
    ]);
    const next = await pass(1_000);
    expect(next.map((s) => [s.metricsBehind, s.buckets])).toEqual([
      [0, 0],
      [2, 2 * 179 - 25], // a point a minute from 5 s past the hour: 179 minutes of each metric
    ]);
    await expectExact();
  });

  it('a bucket still open is left for a later pass', async () => {
    await sink.insert([segment(offset++, A, times(3 * H + 1_000, 3 * H + 2_000, 1_000), 6, () => 8)]);
    const open = await createSealPass(conn, { maxBuckets: 100, now: () => T + 3 * H + 30_000 }).run();
    expect(open.map((s) => s.buckets)).toEqual([0, 0]);
    const closed = await createSealPass(conn, { maxBuckets: 100, now: () => T + 4 * H }).run();
    expect(closed.map((s) => s.buckets)).toEqual([1, 1]);
    await expectExact();
  });

  it("retention's deletion leaves the rollups, so their seals stay at their counts and answer as before", async () => {
    await pass();
    const before = { '1m': await every('1m'), '1h': await every('1h') };
    // B's first hour, replaced points included, leaves points (rollups: false, as retention's markers are).
    await applyDeletion(client, LIVE_DELETION_TARGETS, {
      taskId: 'r',
      partition: 0,
      offset: offset++,
      metrics: [B],
      fromMs: T,
      toMs: T + H - 1,
      rollups: false,
    });
    const [gone] = await query<{ n: string }>(`SELECT toString(count()) AS n FROM points WHERE metric_name = '${B}' AND ts < ${T + H}`);
    expect(gone?.n).toBe('0');
    expect((await pass()).map((s) => s.metricsBehind)).toEqual([0, 0]);
    for (const resolution of ['1m', '1h'] as const) expect(await every(resolution), resolution).toEqual(before[resolution]);
  });

  it('a pass stopped while a statement of it hangs ends at once; the next pass seals what it left', async () => {
    // Unseal everything A has: a point in each of its closed hours.
    for (let h = 0; h < 3; h++) await sink.insert([segment(offset++, A, [T + h * H + 500], 9, () => 1)]);
    const gate = await startQueryGate(conn.url);
    try {
      // Its first statement never answers (as a server too loaded to): without the stop, the pass
      // would wait for ever. The stop's KILL QUERY goes through to the server.
      gate.set({ match: /^(?!KILL QUERY)/, action: 'hold' });
      const abort = new AbortController();
      const running = createSealPass({ ...conn, url: gate.url }, { maxBuckets: 100, resolutions: ['1h'], now: () => T + 4 * H }).run(abort.signal);
      const stopped = running.then(
        () => 'ended',
        (error: unknown) => (abort.signal.aborted ? 'stopped' : `failed: ${String(error)}`),
      );
      await waitFor('the pass to reach its held statement', () => (gate.hits()[0]! > 0 ? true : undefined), 30_000);
      abort.abort(new Error('stopping'));
      expect(await stopped).toBe('stopped');
    } finally {
      await gate.close();
    }
    // A's hours and minutes were left unsealed by the stopped pass; the next seals them, and then none is behind.
    expect((await pass()).map((s) => s.metricsBehind)).toEqual([1, 1]);
    expect((await pass()).map((s) => s.metricsBehind)).toEqual([0, 0]);
  });
});
