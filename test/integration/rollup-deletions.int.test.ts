import { describe, expect, it } from 'vitest';
import { applyDeletion, createPointsSink, LIVE_DELETION_TARGETS, readRollupPage, type PointsDeletion, type Resolution } from '@meridian/clickhouse';
import type { Segment } from '@meridian/projection';
import { referenceRollups } from '../support/rollup-reference.ts';
import { scratchDatabase } from '../support/scratch-database.ts';

/**
 * A deletion's marker and the rollups (migration 010), on this server (18.16: mutations; in the
 * modern tier, 26.9: lightweight DELETEs). A user's marker (rollups: true) leaves every 1m and 1h
 * bucket equal to the aggregates of the deduplicated raw points that remain, buckets cut by the
 * range and buckets holding replaced points included, and the rollups' row counts equal to the
 * points' rows per bucket, as the views would have them had the deleted rows never come; applied
 * again, or after a crash at any step (the points deleted but not the rollups, or the batches
 * before the marker projected again), it ends the same. Retention's (rollups: false) leaves them.
 */
describe('a deletion and the rollups', () => {
  const { conn, client } = scratchDatabase(async () => {
    await sink.insert([first(A), first(B)]);
    await sink.insert([replaced]);
    await sink.insert([segment(20, A, seconds(3_100_000, 3_200_000, 10_000), 3, () => 7)]); // after the marker: kept
  });
  const sink = createPointsSink(client, 'points', { sealsTable: 'points_seals' });
  const H = 3_600_000;
  const T = 1_700_000_000_000 - (1_700_000_000_000 % H); // an hour's start
  const A = 'rd.a "q\'';
  const B = 'rd.b';

  /** Points 7 s apart over 3 hours (several per minute), values in quarters: every sum is exact in any order. */
  const seconds = (from: number, to: number, step: number) => Array.from({ length: Math.floor((to - from) / step) }, (_, i) => T + from + i * step);
  const segment = (offset: number, metric: string, timestamps: number[], updatedAt: number, value: (ts: number) => number): Segment => ({
    partition: 0,
    offset,
    batch: { type: 'PointBatch', task_id: 't', metric_name: metric, updated_at: updatedAt, timestamps, values: timestamps.map(value) },
  });
  const first = (metric: string) => segment(metric === A ? 1 : 2, metric, seconds(0, 3 * H, 7_000), 1, (ts) => ((ts / 1000) % 97) / 4);
  // Some of A replaced, in and out of the range: their buckets are answered from points.
  const replaced = segment(3, A, seconds(1000, 3 * H, 301_000), 2, (ts) => 1000 + ((ts / 1000) % 13) / 4);
  // A deletion cutting 1m and 1h buckets at both ends: [T + 50 min + 3.5 s, T + 2 h 13 min + 29 ms].
  const userDeletion: PointsDeletion = { taskId: 'u', partition: 0, offset: 10, metrics: [A], fromMs: T + 3_003_500, toMs: T + 7_980_029, rollups: true };

  const every = (resolution: Resolution) =>
    readRollupPage(conn, { resolution, metricNames: [A, B], fromMs: T - H, toMs: T + 4 * H, after: null, maxRows: 100_000 }).then((p) => p.rows);
  const query = async (sql: string) => (await client.query({ query: sql, format: 'JSONEachRow' })).json();
  /** Rows per bucket in a rollup and in points: equal where the rollup holds exactly the points' states. */
  const rowCounts = async (resolution: Resolution) => {
    const [table, step] = resolution === '1m' ? ['points_1m', 60_000] : ['points_1h', H];
    const rollup = await query(
      `SELECT metric_name, toString(bucket) AS b, toString(countMerge(rows)) AS n FROM ${table} GROUP BY metric_name, bucket ORDER BY metric_name, b`,
    );
    const points = await query(
      `SELECT metric_name, toString(intDiv(ts, ${step}) * ${step}) AS b, toString(count()) AS n FROM points GROUP BY metric_name, b ORDER BY metric_name, b`,
    );
    return { rollup, points };
  };
  async function expectExact(): Promise<void> {
    for (const resolution of ['1m', '1h'] as const) {
      expect(await every(resolution), resolution).toEqual(await referenceRollups(conn, resolution));
      const { rollup, points } = await rowCounts(resolution);
      expect(rollup, resolution).toEqual(points);
    }
  }

  it("a user's deletion: every bucket it overlaps is computed again from the points that remain; again, nothing changes", async () => {
    const before = await every('1m');
    await applyDeletion(client, LIVE_DELETION_TARGETS, userDeletion);
    await expectExact();
    // The range held points, some replaced, and cut buckets at both ends: the test covers each case.
    const after = await every('1m');
    expect(after.length).toBeLessThan(before.length);
    const cut = (ms: number) => after.find((r) => r.metric_name === A && r.bucket === ms - (ms % 60_000))!;
    expect(cut(userDeletion.fromMs).count).toBeLessThan(before.find((r) => r.metric_name === A && r.bucket === cut(userDeletion.fromMs).bucket)!.count);
    expect(cut(userDeletion.toMs).count).toBeGreaterThan(0);
    await applyDeletion(client, LIVE_DELETION_TARGETS, userDeletion);
    await expectExact();
  });

  it('a crash after the points left and before the rollups followed, then the marker again: exact', async () => {
    const d: PointsDeletion = { ...userDeletion, taskId: 'v', offset: 21, fromMs: T + 600_000, toMs: T + 1_200_000 };
    await applyDeletion(client, LIVE_DELETION_TARGETS, { ...d, rollups: false }); // the points' and catalog's steps only
    expect(await every('1m')).not.toEqual(await referenceRollups(conn, '1m'));
    await applyDeletion(client, LIVE_DELETION_TARGETS, d);
    await expectExact();
  });

  it('a crash that has the batches before the marker projected again (their views run again), then the marker again: exact', async () => {
    const d: PointsDeletion = { ...userDeletion, taskId: 'w', offset: 22, fromMs: T + 1_500_000, toMs: T + 1_700_000 };
    await applyDeletion(client, LIVE_DELETION_TARGETS, d);
    // The rows it removed come back as a re-read batch would bring them, and its views add their states again.
    const again = first(A).batch.timestamps.filter((ts) => ts >= d.fromMs && ts <= d.toMs);
    expect(again.length).toBeGreaterThan(0);
    await sink.insert([{ ...first(A), batch: { ...first(A).batch, timestamps: again, values: again.map((ts) => ((ts / 1000) % 97) / 4) } }]);
    expect((await rowCounts('1m')).rollup).toEqual((await rowCounts('1m')).points);
    await applyDeletion(client, LIVE_DELETION_TARGETS, d);
    await expectExact();
  });

  it("retention's deletion (rollups: false) leaves the rollups whole: they outlive the raw points", async () => {
    const before = { '1m': await every('1m'), '1h': await every('1h') };
    const old = await query(`SELECT toString(count()) AS n FROM points WHERE metric_name = '${B}' AND ts < ${T + H}`);
    expect(old).not.toEqual([{ n: '0' }]);
    await applyDeletion(client, LIVE_DELETION_TARGETS, { taskId: 'r', partition: 0, offset: 23, metrics: [B], fromMs: 0, toMs: T + H - 1, rollups: false });
    expect(await query(`SELECT toString(count()) AS n FROM points WHERE metric_name = '${B}' AND ts < ${T + H}`)).toEqual([{ n: '0' }]);
    expect(await every('1m')).toEqual(before['1m']);
    expect(await every('1h')).toEqual(before['1h']);
  });
});
