import type { Capabilities } from '../capabilities.ts';
import type { ClickHouseClient } from '../client.ts';
import { int } from '../download/filter-sql.ts';
import { deleteRows, deletionWriteId, namesIn, quotedTable, rewriteInsertSettings, storageOf } from '../points/delete-rows.ts';
import { markDeletion, markedBucketsWhere } from './marks.ts';
import { SEALED } from './sealed-sql.ts';
import { bucketRange, ROLLUPS, rollupStatesSql, type Resolution } from './sql.ts';

/** A user's deletion as the rollups take it: its metrics and inclusive range, the points table it was applied to. */
export type RollupDeletion = { readonly metrics: readonly string[]; readonly fromMs: number; readonly toMs: number; readonly points: string };

/** The rows of a rollup (or of points, by `column`) in the buckets overlapping [fromMs, toMs] of these metrics. */
export function bucketsWhere(resolution: Resolution, d: Omit<RollupDeletion, 'points'>, column: 'bucket' | 'ts'): string {
  const { first, last } = bucketRange(resolution, d.fromMs, d.toMs);
  const end = last + ROLLUPS[resolution].stepMs;
  return `${namesIn(d.metrics)} AND ${column} >= ${int(first)} AND ${column} < ${int(end)}`;
}

/**
 * Makes a rollup's buckets overlapping a deletion's range equal to the states of the points rows
 * that remain in them, as the view would have written them had the deleted rows never come: the
 * rows of those buckets leave the rollup, and the states of the points' rows in them (the whole
 * bucket, its part outside the range too) go in; a bucket with no row left is gone. Replaced
 * points stay as the view keeps them (every row, a bucket's rows above its distinct timestamps),
 * so the readers still tell those buckets and compute them from points.
 *
 * Runs after the points' rows are deleted, and can run again: it only reads points, which the
 * deletion's partition alone writes meanwhile. Batches a crashed projector re-reads before the
 * marker hold only rows the deletion removes (any other row would have kept the position past
 * them), so the states their views add fall in these buckets and are rewritten here again.
 */
export async function recomputeRollupBuckets(
  client: ClickHouseClient,
  resolution: Resolution,
  table: string,
  d: RollupDeletion,
  caps: Capabilities,
): Promise<void> {
  const storage = await storageOf(client, table);
  // As for the catalog: the old rows are gone before the new states go in, or a reader would
  // count both until 18.16's mutation ends (the buckets are missing for the insert's time instead).
  // None is asked when the rollup holds nothing here (deleteRows).
  await deleteRows(client, storage, bucketsWhere(resolution, d, 'bucket'), caps);
  await client.command({
    query: `INSERT INTO ${quotedTable(table)} ${rollupStatesSql(resolution, quotedTable(d.points), bucketsWhere(resolution, d, 'ts'))}`,
    clickhouse_settings: rewriteInsertSettings(caps),
    query_id: deletionWriteId(d.points),
  });
}

/** Whether these are the live rollups, the only ones with seals (a rebuild's generation has none until its swap voids every seal). */
export const liveRollups = (rollups: Readonly<Record<Resolution, string>>): boolean =>
  (Object.entries(rollups) as [Resolution, string][]).every(([resolution, table]) => table === ROLLUPS[resolution].table);

/**
 * Once a deletion has rewritten the live rollups' buckets: marks its range's days (marks.ts), which
 * voids every seal of those days a pass read before, whenever it writes it; then removes the sealed
 * rows of those days, which only frees them (a void seal is never read, and one a pass under way
 * writes after this is void all the same; a true one removed is sealed again by the next pass).
 *
 * The mark comes after the rewrite (the caller's order) and only then: a pass reads a bucket's
 * marks before its count and its points, so one that saw this mark reads the rewritten bucket,
 * and one that did not holds fewer marks than the bucket has from now on. A mark written before
 * the rewrite as well would add nothing: a pass reading between it and the rewrite is voided by
 * the mark after it all the same, and without that one such a pass would seal the old bucket
 * trusted. A crash between the rewrite and the mark leaves the task unfinished: it is applied
 * again, rewrite and mark.
 */
export async function markRewrittenBuckets(client: ClickHouseClient, d: RollupDeletion, caps: Capabilities, cause: string): Promise<void> {
  await markDeletion(client, caps, { metrics: d.metrics, fromMs: d.fromMs, toMs: d.toMs, cause }, deletionWriteId(d.points));
  for (const resolution of Object.keys(ROLLUPS) as Resolution[]) await unsealDays(client, resolution, d, caps);
}

async function unsealDays(client: ClickHouseClient, resolution: Resolution, d: RollupDeletion, caps: Capabilities): Promise<void> {
  const sealed = SEALED[resolution];
  const where = `${namesIn(d.metrics)} AND ${markedBucketsWhere(d.fromMs, d.toMs, d.metrics.length)}`;
  await deleteRows(client, sealed, where, caps);
}
