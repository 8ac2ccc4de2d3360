import { serverCapabilities, type Capabilities } from '../capabilities.ts';
import type { ClickHouseClient } from '../client.ts';
import { nameRuns } from '@meridian/domain';
import { int } from '../download/filter-sql.ts';
import { liveRollups, markRewrittenBuckets, recomputeRollupBuckets } from '../rollups/follow-deletion.ts';
import type { Resolution } from '../rollups/sql.ts';
import { LIVE_STAGE_TARGETS } from './stage.ts';
import { deleteRows, deletionWriteId, namesIn, quotedTable, rewriteInsertSettings, rows, storageOf } from './delete-rows.ts';

export { deleteRowsSql, hexString } from './delete-rows.ts';

/**
 * A deletion's marker as the projector applies it: the rows of `metrics` with a timestamp in
 * [fromMs, toMs] that came from `partition` below `offset` (projected before the marker).
 */
export type PointsDeletion = {
  readonly taskId: string;
  readonly partition: number;
  readonly offset: number;
  readonly metrics: readonly string[];
  readonly fromMs: number;
  readonly toMs: number;
  /**
   * Whether the rollups follow: a user's deletion recomputes their buckets overlapping the range
   * from the points that remain; retention's (and a v1 marker's) leaves them, they outlive the points.
   */
  readonly rollups?: boolean;
};

/**
 * The tables a deletion reaches: points, its catalog, the table whose rows count in the position,
 * and the rollups by resolution (a view, or the table of its states; none: a deletion leaves no rollup to follow).
 */
export type DeletionTargets = {
  readonly points: string;
  readonly catalog: string;
  readonly seals: string;
  readonly rollups?: Readonly<Record<Resolution, string>>;
};

/** The live tables, those a staged upload is sealed into. */
export const LIVE_DELETION_TARGETS: DeletionTargets = LIVE_STAGE_TARGETS;

/**
 * Bytes of names per statement: their hex literals, twice as long, stay well below the server's
 * max_query_size (256 KiB by default, 18.16 included).
 */
export const SQL_NAME_BYTES = 48 * 1024;

/** The rows of points a deletion removes: its metrics and range, from its partition, before its marker. */
export function deletionWhere(d: PointsDeletion): string {
  return `${namesIn(d.metrics)} AND ts >= ${int(d.fromMs)} AND ts <= ${int(d.toMs)} AND kafka_partition = ${int(d.partition)} AND kafka_offset < ${int(d.offset)}`;
}

/**
 * Applies a deletion's marker (in runs of names that fit a statement), then records it at the marker's offset in the seals table, which
 * counts in the projector's position. Every step can run again: a projector killed anywhere in it
 * reads the marker again (it is above the position until recorded) and redoes it whole, and the
 * batches re-read before it, whose rows it may have removed already, are stored and removed again.
 *
 * The catalog keeps partial aggregate states no mutation can take points out of, so the metrics'
 * catalog rows are deleted and written anew from what points holds. A metric's points all come
 * from one points partition (its name is the key), whose projector is the one applying the
 * marker: nothing inserts points of these metrics meanwhile. A user's deletion (`rollups`) then
 * rewrites the rollups' buckets it overlaps from the points that remain (follow-deletion.ts).
 */
export async function applyDeletion(client: ClickHouseClient, targets: DeletionTargets, d: PointsDeletion): Promise<void> {
  const caps = await serverCapabilities(client);
  for (const metrics of nameRuns(d.metrics, SQL_NAME_BYTES)) await deleteRun(client, targets, { ...d, metrics }, caps);
  // Named as a staged seal's record is: a swap's freeze waits for every write of a seal under way (replay's freezeLive).
  await client.insert({
    table: targets.seals,
    format: 'JSONEachRow',
    values: [{ kafka_partition: d.partition, seal_offset: d.offset, task_id: d.taskId, attempt: '' }],
    query_id: deletionWriteId(targets.points),
  });
}

/** The statements of one run of a deletion's names: its points, its metrics' catalog rows, then (a user's) their rollup buckets. */
async function deleteRun(client: ClickHouseClient, targets: DeletionTargets, d: PointsDeletion, caps: Capabilities): Promise<void> {
  // A deletion that selects nothing now (an empty range, or one applied again after a crash) asks
  // for no mutation (deleteRows). The catalog is written anew all the same when it does not agree:
  // a crash may have come between the two.
  const selected = await deleteRows(client, targets.points, deletionWhere(d), caps);
  // Rewritten only when it does not count what points holds (rows left now, or a crash came between
  // the two): a rewrite hides the metrics from listings and downloads for the insert's time, which a
  // deletion that selects nothing (an empty range, one applied again) must not do to them.
  if (selected > 0 || !(await catalogAgrees(client, targets, d.metrics))) await rewriteCatalog(client, targets, d.metrics, caps);
  if (d.rollups !== true || targets.rollups === undefined) return;
  for (const [resolution, table] of Object.entries(targets.rollups) as [Resolution, string][]) {
    await recomputeRollupBuckets(client, resolution, table, { metrics: d.metrics, fromMs: d.fromMs, toMs: d.toMs, points: targets.points }, caps);
  }
  if (liveRollups(targets.rollups))
    await markRewrittenBuckets(client, { metrics: d.metrics, fromMs: d.fromMs, toMs: d.toMs, points: targets.points }, caps, d.taskId);
}

/**
 * The metrics' catalog rows deleted and written anew from points. The old rows are gone before the
 * new ones go in: 18.16's mutation runs in the background on the parts that existed when it was
 * asked, and until it ends a reader sees the old rows, beside any new ones inserted meanwhile (a
 * metric's points counted twice). So the metrics are missing from the catalog for the insert's time.
 */
async function rewriteCatalog(client: ClickHouseClient, targets: DeletionTargets, metrics: readonly string[], caps: Capabilities): Promise<void> {
  await deleteRows(client, await storageOf(client, targets.catalog), namesIn(metrics), caps);
  await client.command({
    query: `INSERT INTO ${quotedTable(targets.catalog)} SELECT metric_name, countState() AS points, minState(ts) AS first_ts, maxState(ts) AS last_ts
      FROM ${quotedTable(targets.points)} WHERE ${namesIn(metrics)} GROUP BY metric_name`,
    clickhouse_settings: rewriteInsertSettings(caps),
    query_id: deletionWriteId(targets.points),
  });
}

/** Whether the catalog counts exactly what points holds of these metrics (points, first and last timestamp). */
async function catalogAgrees(client: ClickHouseClient, targets: DeletionTargets, metrics: readonly string[]): Promise<boolean> {
  type Row = { metric_name: string; n: string; lo: string; hi: string };
  const of = (sql: string) => rows<Row>(client, sql).then((r) => JSON.stringify(r));
  const [catalog, points] = await Promise.all([
    of(
      `SELECT metric_name, toString(countMerge(points)) AS n, toString(minMerge(first_ts)) AS lo, toString(maxMerge(last_ts)) AS hi FROM ${quotedTable(targets.catalog)} WHERE ${namesIn(metrics)} GROUP BY metric_name HAVING countMerge(points) > 0 ORDER BY metric_name`,
    ),
    of(
      `SELECT metric_name, toString(count()) AS n, toString(min(ts)) AS lo, toString(max(ts)) AS hi FROM ${quotedTable(targets.points)} WHERE ${namesIn(metrics)} GROUP BY metric_name ORDER BY metric_name`,
    ),
  ]);
  return catalog === points;
}
