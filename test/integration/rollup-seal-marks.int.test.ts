import { describe, expect, it } from 'vitest';
import {
  applyDeletion,
  checkChunk,
  createPointsSink,
  createSealPass,
  EVERY_PERIOD,
  LIVE_DELETION_TARGETS,
  MARK_PERIOD_MS,
  markDeletion,
  MARKS,
  readRollupPage,
  sealCandidates,
  SEALED,
  serverCapabilities,
  voidEverySeal,
  writeSeals,
} from '@meridian/clickhouse';
import type { Segment } from '@meridian/projection';
import { referenceRollups } from '../support/rollup-reference.ts';
import { scratchDatabase } from '../support/scratch-database.ts';

/**
 * The race between a seal pass and a deletion (the marks of migrations 012 and 013), driven step by step in
 * the bad order through the pass's and the deletion's own functions: the pass reads a bucket
 * (its marks, then its count in the exactness check), a user's deletion rewrites the bucket,
 * marks it and removes its seals, and only then does the pass write its seal, at the old count.
 * Uploads bring the bucket back to exactly that count: the reader must answer the points it holds
 * now, not the seal. The same with a rebuild's swap in place of the deletion (a mark of every
 * metric). On this server (18.16; the modern tier runs it on 26.9).
 */
describe('a seal written after a deletion that came between its reads', () => {
  const H = 3_600_000;
  const T = 1_700_000_000_000 - (1_700_000_000_000 % H); // an hour's start, long closed
  const M = 'rm.a "q\'';
  const closedBefore = T + 24 * H;
  const { conn, client } = scratchDatabase();
  const sink = createPointsSink(client, 'points', { sealsTable: 'points_seals' });
  let offset = 1;

  /** Timestamps `step` apart in [T + from, T + to); values in quarters, so every sum is exact in any order. */
  const times = (from: number, to: number, step: number) => Array.from({ length: Math.floor((to - from) / step) }, (_, i) => T + from + i * step);
  const upload = (timestamps: number[], updatedAt: number, value: (ts: number) => number) => {
    const segment: Segment = {
      partition: 0,
      offset: offset++,
      batch: { type: 'PointBatch', task_id: 't', metric_name: M, updated_at: updatedAt, timestamps, values: timestamps.map(value) },
    };
    return sink.insert([segment]);
  };
  const hour = () => readRollupPage(conn, { resolution: '1h', metricNames: [M], fromMs: T, toMs: T + H - 1, after: null, maxRows: 10 }).then((p) => p.rows);
  const reference = async () => (await referenceRollups(conn, '1h')).filter((r) => r.metric_name === M && r.bucket === T);
  const sealsOfHour = async () => {
    const text = await (
      await client.query({
        query: `SELECT toString(rows) AS rows, toString(marks) AS marks FROM ${SEALED['1h']} WHERE bucket = ${T} ORDER BY rows, marks`,
        format: 'JSONEachRow',
      })
    ).json<{ rows: string; marks: string }>();
    return text.map((r) => [Number(r.rows), Number(r.marks)]);
  };
  /** The pass's first two steps for the hour: its marks, then its count (the exactness check). */
  const readHour = async () => {
    const candidates = await sealCandidates(conn, '1h', M, closedBefore, 100);
    expect(candidates.map((c) => c.bucket)).toEqual([T]);
    return checkChunk(conn, '1h', candidates);
  };

  it('a deletion between the pass reading a bucket and writing its seal: the seal is never trusted, even at its count again', async () => {
    // The hour: a point every 10 s (360), 6 of its first half uploaded again with other values, so
    // the bucket holds a replaced point and is sealed from the deduplicated raw points.
    await upload(times(0, H, 10_000), 1, (ts) => ((ts / 1000) % 97) / 4);
    await upload(times(0, 60_000, 10_000), 2, () => 1000.25);
    const read = await readHour();
    expect(read.replaced.map((c) => [c.rows, c.marks])).toEqual([[366, 0]]);

    // The deletion, whole, in the other worker: the first half hour (180 points and the 6 replaced rows).
    await applyDeletion(client, LIVE_DELETION_TARGETS, {
      taskId: 'd',
      partition: 0,
      offset: offset++,
      metrics: [M],
      fromMs: T,
      toMs: T + H / 2 - 1,
      rollups: true,
    });
    expect((await hour())[0]!.count).toBe(180);

    // The pass's last step, late: a seal at the count it read (366), of the points there are now.
    await writeSeals(conn, '1h', read, 'points');
    expect(await sealsOfHour()).toEqual([[366, 0]]);

    // 186 new points in the deleted half: the bucket counts 366 again, and holds other points.
    await upload(times(5_000, H / 2, 9_650).slice(0, 186), 3, () => -2.5);
    const now = await reference();
    expect(now[0]!.count).toBe(366);
    expect(await hour()).toEqual(now);

    // The next pass seals the bucket at its marks; the void seal stalls nothing.
    expect((await createSealPass(conn, { maxBuckets: 100, resolutions: ['1h'] }).run())[0]!.buckets).toBe(1);
    expect(await sealsOfHour()).toEqual([
      [366, 0],
      [366, 1],
    ]);
    expect((await createSealPass(conn, { maxBuckets: 100, resolutions: ['1h'] }).run())[0]!.metricsBehind).toBe(0);
    expect(await hour()).toEqual(now);
  });

  it("a rebuild's swap between the pass reading a bucket and writing its seal: a mark of every metric voids it", async () => {
    await upload(times(1_000, 60_000, 10_000), 4, () => 7.75);
    const read = await readHour();
    const everyMetric = `SELECT toString(sum(n)) AS n FROM ${MARKS} WHERE metric_name = ''`;
    const [{ n: before } = { n: '' }] = await (await client.query({ query: everyMetric, format: 'JSONEachRow' })).json<{ n: string }>();
    await voidEverySeal(client, await serverCapabilities(client), 'swap:test');
    expect(await sealsOfHour()).toEqual([]);
    await writeSeals(conn, '1h', read, 'points');
    expect(await sealsOfHour()).toEqual([[371, 1]]);
    const [{ n: after } = { n: '' }] = await (await client.query({ query: everyMetric, format: 'JSONEachRow' })).json<{ n: string }>();
    expect(Number(after) - Number(before)).toBe(1);
    // The seal is at the bucket's count, yet the pass finds the bucket unsealed and seals it at its marks.
    expect((await createSealPass(conn, { maxBuckets: 100, resolutions: ['1h'] }).run())[0]!.buckets).toBe(1);
    expect(await sealsOfHour()).toEqual([
      [371, 1],
      [371, 2],
    ]);
    expect(await hour()).toEqual(await reference());
  });

  it('a read takes a sealed row only while its bucket has as many marks as the row holds', async () => {
    const [exact] = await hour();
    const bogus = (marks: number) =>
      client.command({
        query: `INSERT INTO ${SEALED['1h']} (metric_name, bucket, rows, points, min_value, max_value, sum_value, last_value, marks) SELECT name, ${T}, ${exact!.count}, ${exact!.count}, 0, 0, 1e9, 0, ${marks} FROM (SELECT any(metric_name) AS name FROM points_1h WHERE bucket = ${T})`,
      });
    await client.command({ query: `TRUNCATE TABLE ${SEALED['1h']}` });
    // The hour has two marks now (the deletion's, the swap's): a row at its count with one is not taken; with two it is.
    await bogus(1);
    expect(await hour()).toEqual([exact]);
    await bogus(2);
    expect((await hour())[0]!.sum).toBe(1e9);
    await client.command({ query: `TRUNCATE TABLE ${SEALED['1h']}` });
  });
});

/**
 * Many deletions leave the marks bounded (migration 013): each adds 1 to its metrics' days, rows
 * the table sums as it merges, so after 200 deletions of one metric in two days it holds two rows
 * of the metric, and a read or a pass joins those two, not 200. They void the seals of those two
 * days only; a range past the marked days' bound voids every day of its metric with one row.
 */
describe('marks stay one row per metric and day, however many deletions', () => {
  const H = 3_600_000;
  const D0 = 1_700_006_400_000; // a day's start (a multiple of MARK_PERIOD_MS), long closed
  const M = 'rm.bounded';
  const { conn, client } = scratchDatabase();
  const sink = createPointsSink(client, 'points', { sealsTable: 'points_seals' });
  const rows = async <T>(query: string) => (await client.query({ query, format: 'JSONEachRow' })).json<T>();
  const pass = async () =>
    (await createSealPass(conn, { maxBuckets: 10_000, now: () => D0 + 10 * MARK_PERIOD_MS }).run()).map((s) => [s.resolution, s.buckets]);
  const marksOfM = () =>
    rows<{ period: string; n: string }>(`SELECT toString(period) AS period, toString(n) AS n FROM ${MARKS} WHERE metric_name = '${M}' ORDER BY period`);
  const everyBucketRight = async () => {
    for (const resolution of ['1h', '1m'] as const) {
      const page = await readRollupPage(conn, { resolution, metricNames: [M], fromMs: D0, toMs: D0 + 3 * MARK_PERIOD_MS - 1, after: null, maxRows: 10_000 });
      expect(page.rows).toEqual((await referenceRollups(conn, resolution)).filter((r) => r.metric_name === M));
    }
  };

  it('200 deletions in two days: two rows after a merge, the seals of those days sealed again, the third day left trusted', async () => {
    // Three days, a point every 10 minutes: 72 hours, 432 minutes.
    const timestamps = Array.from({ length: 432 }, (_, i) => D0 + i * 600_000);
    const batch = { type: 'PointBatch' as const, task_id: 't', metric_name: M, updated_at: 1, timestamps, values: timestamps.map((_, i) => i / 4) };
    await sink.insert([{ partition: 0, offset: 10, batch } satisfies Segment]);
    expect(await pass()).toEqual([
      ['1h', 72],
      ['1m', 432],
    ]);

    const caps = await serverCapabilities(client);
    for (let i = 0; i < 200; i++) {
      const from = D0 + (i % 2) * MARK_PERIOD_MS + (Math.floor(i / 2) % 24) * H;
      await markDeletion(client, caps, { metrics: [M], fromMs: from, toMs: from + H - 1, cause: `d${i}` }, `mark-test-${i}`);
    }
    // Summed at read, merged or not: every seal of the two days is void, those of the third are not.
    expect(await pass()).toEqual([
      ['1h', 48],
      ['1m', 288],
    ]);
    await everyBucketRight();
    await client.command({ query: `OPTIMIZE TABLE ${MARKS} FINAL` });
    expect(await marksOfM()).toEqual([
      { period: String(D0 / MARK_PERIOD_MS), n: '100' },
      { period: String(D0 / MARK_PERIOD_MS + 1), n: '100' },
    ]);
    // The merge changes no bucket's marks: nothing to seal again.
    expect(await pass()).toEqual([
      ['1h', 0],
      ['1m', 0],
    ]);
  });

  it('a deletion over more days than the bound marks its metric once, in every day: all its seals are sealed again', async () => {
    // Applied whole, over 2^50 ms from the epoch: it selects no point (none is before its offset), and rewrites and marks the rollups.
    await applyDeletion(client, LIVE_DELETION_TARGETS, { taskId: 'all', partition: 0, offset: 1, metrics: [M], fromMs: 0, toMs: 2 ** 50, rollups: true });
    await client.command({ query: `OPTIMIZE TABLE ${MARKS} FINAL` });
    expect(await marksOfM()).toEqual([
      { period: String(EVERY_PERIOD), n: '1' },
      { period: String(D0 / MARK_PERIOD_MS), n: '100' },
      { period: String(D0 / MARK_PERIOD_MS + 1), n: '100' },
    ]);
    // Its seals were removed with the mark; the pass seals every bucket again, at the new marks.
    expect(await rows(`SELECT count() AS n FROM ${SEALED['1m']} WHERE metric_name = '${M}'`)).toEqual([{ n: '0' }]);
    expect(await pass()).toEqual([
      ['1h', 72],
      ['1m', 432],
    ]);
    expect(await rows(`SELECT DISTINCT toString(marks) AS m FROM ${SEALED['1h']} WHERE metric_name = '${M}' ORDER BY m`)).toEqual([{ m: '1' }, { m: '101' }]);
    await everyBucketRight();
  });
});
