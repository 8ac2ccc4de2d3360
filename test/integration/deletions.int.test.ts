import { beforeAll, describe, expect, it } from 'vitest';
import { applyDeletion, createPointsSink, LIVE_DELETION_TARGETS, serverCapabilities } from '@meridian/clickhouse';
import { deleteRows } from '../../libs/clickhouse/src/points/delete-rows.ts';
import type { Segment } from '@meridian/projection';
import { itOnServer } from '../support/clickhouse-front.ts';
import { scratchDatabase } from '../support/scratch-database.ts';
import { waitFor } from '../support/wait.ts';

/**
 * A deletion's marker applied to the live tables, on this server (18.16: a mutation, waited
 * for; in the modern tier, 26.9: a lightweight DELETE): the rows of its metrics and range below its
 * offset leave points, the catalog equals the points that remain, the marker counts in the position,
 * and applying it again changes nothing. Names with quotes and backslashes reach the SQL as hex.
 */
describe('applyDeletion', () => {
  const { client } = scratchDatabase();
  const sink = createPointsSink(client, 'points', { sealsTable: 'points_seals' });
  const odd = 'del\'\\x{a="b"}';

  const segment = (partition: number, offset: number, metric: string, timestamps: number[]): Segment => ({
    partition,
    offset,
    batch: { type: 'PointBatch', task_id: 't', metric_name: metric, updated_at: 5, timestamps, values: timestamps.map((t) => t / 2) },
  });
  const rowsOf = async <T>(sql: string): Promise<T[]> => (await client.query({ query: sql, format: 'JSONEachRow' })).json<T>();
  const pointsPerMetric = () =>
    rowsOf(
      'SELECT metric_name, toString(count()) AS n, toString(min(ts)) AS first_ts, toString(max(ts)) AS last_ts FROM points GROUP BY metric_name ORDER BY metric_name',
    );
  const catalog = () =>
    rowsOf<{ metric_name: string; n: string; first_ts: string; last_ts: string }>(
      'SELECT metric_name, toString(countMerge(points)) AS n, toString(minMerge(first_ts)) AS first_ts, toString(maxMerge(last_ts)) AS last_ts FROM metric_catalog GROUP BY metric_name ORDER BY metric_name',
    );
  const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);
  /** Mutations (lightweight deletes included) of the catalog's storage: one per rewrite of its rows. */
  const catalogMutations = async () =>
    Number(
      (
        await rowsOf<{ n: string }>(
          `SELECT toString(count()) AS n FROM system.mutations WHERE database = currentDatabase() AND table IN ('metric_catalog', '.inner.metric_catalog')`,
        )
      )[0]!.n,
    );

  beforeAll(async () => {
    await sink.insert([segment(0, 10, odd, range(0, 100)), segment(0, 11, 'keep', range(0, 100))]);
    await sink.insert([segment(0, 20, odd, range(0, 10))]); // after the marker (offset 15): kept
  });

  it("deletes its metrics' range below its offset, rewrites their catalog rows and records its offset; again changes nothing", async () => {
    const deletion = { taskId: 'd', partition: 0, offset: 15, metrics: [odd], fromMs: 0, toMs: 49 };
    await applyDeletion(client, LIVE_DELETION_TARGETS, deletion);
    const after = [
      { metric_name: odd, n: '60', first_ts: '0', last_ts: '99' },
      { metric_name: 'keep', n: '100', first_ts: '0', last_ts: '99' },
    ];
    expect(await pointsPerMetric()).toEqual(after);
    expect(await rowsOf('SELECT toString(count()) AS n FROM points WHERE kafka_offset = 10 AND ts < 50')).toEqual([{ n: '0' }]);
    expect(await catalog()).toEqual(after);
    expect(await sink.maxOffsets([0])).toEqual(new Map([[0, 20]]));
    const rewrites = await catalogMutations();
    await applyDeletion(client, LIVE_DELETION_TARGETS, deletion);
    expect(await pointsPerMetric()).toEqual(after);
    expect(await catalog()).toEqual(after);
    // It selected nothing and the catalog agreed: its rows were left alone, never hidden from a reader by a rewrite.
    expect(await catalogMutations()).toBe(rewrites);
  });

  it("a deletion of every row of a metric, the position's highest batch among them: the metric leaves the catalog, the position stays at the marker", async () => {
    await applyDeletion(client, LIVE_DELETION_TARGETS, { taskId: 'e', partition: 0, offset: 30, metrics: [odd], fromMs: 0, toMs: 1000 });
    expect(await pointsPerMetric()).toEqual([{ metric_name: 'keep', n: '100', first_ts: '0', last_ts: '99' }]);
    expect(await catalog()).toEqual(await pointsPerMetric());
    expect(await sink.maxOffsets([0])).toEqual(new Map([[0, 30]]));
  });

  itOnServer(
    'queries side by side',
    'while its rows are rewritten, the catalog never counts a metric twice: it shows the old rows until they are gone',
    async () => {
      await sink.insert([segment(2, 10, 'twice', range(0, 100))]);
      const twice = async () =>
        (await rowsOf<{ n: string }>("SELECT toString(countMerge(points)) AS n FROM metric_catalog WHERE metric_name = 'twice' GROUP BY metric_name"))[0]?.n ??
        'none';
      const catalogStorage =
        (await rowsOf<{ engine: string }>("SELECT engine FROM system.tables WHERE database = currentDatabase() AND name = 'metric_catalog'"))[0]!.engine ===
        'MaterializedView'
          ? '`.inner.metric_catalog`'
          : 'metric_catalog';
      const mutationsBefore = await catalogMutations();
      // Held: 18.16 runs a mutation in the background as merges do, on the parts that existed when
      // it was asked, so rows inserted meanwhile would be read beside the old ones until it ends.
      await client.command({ query: `SYSTEM STOP MERGES ${catalogStorage}` });
      let applied: Promise<void> | undefined;
      try {
        applied = applyDeletion(client, LIVE_DELETION_TARGETS, { taskId: 'g', partition: 2, offset: 11, metrics: ['twice'], fromMs: 0, toMs: 79 });
        applied.catch(() => undefined);
        await waitFor('the catalog rows to be asked to go', async () => ((await catalogMutations()) > mutationsBefore ? true : undefined), 60_000);
        // Time for an insert of the new rows, had it been sent before the old rows were gone.
        await new Promise((r) => setTimeout(r, 1500));
        expect(await twice()).toBe('100');
      } finally {
        await client.command({ query: `SYSTEM START MERGES ${catalogStorage}` });
      }
      await applied;
      expect((await catalog()).find((r) => r.metric_name === 'twice')).toEqual({ metric_name: 'twice', n: '20', first_ts: '80', last_ts: '99' });
    },
    120_000,
  );

  itOnServer(
    'a mutation in the background (clickhouse-local runs it inside its ALTER, which a held mutation never ends)',
    'a step tried again after its wait for the mutation ended waits for that mutation: it never asks for a second',
    async () => {
      await sink.insert([segment(3, 10, 'held', range(0, 100))]);
      // The mutation path (18.16's) on any server: 26.9 runs ALTER … DELETE as a mutation too.
      const caps = { ...(await serverCapabilities(client)), lightweightDelete: false };
      const where = "metric_name = 'held' AND ts < 50";
      const pointsMutations = async () =>
        Number(
          (await rowsOf<{ n: string }>("SELECT toString(count()) AS n FROM system.mutations WHERE database = currentDatabase() AND table = 'points'"))[0]!.n,
        );
      const before = await pointsMutations();
      // Held: a mutation runs as merges do, so none of points' parts is rewritten until merges start again.
      await client.command({ query: 'SYSTEM STOP MERGES points' });
      try {
        await expect(deleteRows(client, 'points', where, caps, 300)).rejects.toThrow(/not done within 300 ms/);
        // The retry (the projector's persist): on 18.16 a second mutation would rewrite every part of points again.
        await expect(deleteRows(client, 'points', where, caps, 300)).rejects.toThrow(/not done within 300 ms/);
        expect(await pointsMutations()).toBe(before + 1);
      } finally {
        await client.command({ query: 'SYSTEM START MERGES points' });
      }
      expect(await deleteRows(client, 'points', where, caps)).toBe(0);
      expect(await pointsMutations()).toBe(before + 1);
      expect(await rowsOf("SELECT toString(count()) AS n, toString(min(ts)) AS first FROM points WHERE metric_name = 'held'")).toEqual([
        { n: '50', first: '50' },
      ]);
    },
    60_000,
  );

  it('a deletion of more names than one statement carries is applied in runs of them', async () => {
    const names = Array.from({ length: 1500 }, (_, i) => `many.${'x'.repeat(60)}.${i}`);
    await sink.insert(names.map((name, i) => segment(1, 100 + i, name, [1, 2, 3])));
    await applyDeletion(client, LIVE_DELETION_TARGETS, { taskId: 'f', partition: 1, offset: 5000, metrics: names, fromMs: 2, toMs: 3 });
    expect(
      await rowsOf(
        "SELECT toString(count()) AS n, toString(uniqExact(metric_name)) AS m, toString(max(ts)) AS last FROM points WHERE startsWith(metric_name, 'many.')",
      ),
    ).toEqual([{ n: '1500', m: '1500', last: '1' }]);
    expect(
      await rowsOf(
        "SELECT toString(sum(n)) AS n FROM (SELECT countMerge(points) AS n FROM metric_catalog WHERE startsWith(metric_name, 'many.') GROUP BY metric_name)",
      ),
    ).toEqual([{ n: '1500' }]);
  });
});
