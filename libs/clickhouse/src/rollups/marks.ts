import type { Capabilities } from '../capabilities.ts';
import type { ClickHouseClient } from '../client.ts';
import { int } from '../download/filter-sql.ts';
import { quotedTable, rewriteInsertSettings } from '../points/delete-rows.ts';
import { EVERY_METRIC, EVERY_PERIOD, MARK_PERIOD_MS, MARKS, MAX_MARK_ROWS, MAX_MARKED_PERIODS, periodOf } from './marks-sql.ts';
import { SEALED } from './sealed-sql.ts';
import { bucketRange, ROLLUPS, type Resolution } from './sql.ts';

/** A deletion's range as it is marked: its metrics, its inclusive range, and what did it (its task). */
export type RollupMark = { readonly metrics: readonly string[]; readonly fromMs: number; readonly toMs: number; readonly cause: string };

/**
 * The periods (days) of the buckets a deletion's range rewrites in either rollup, or null for a
 * range over more than MAX_MARKED_PERIODS of them, or more than MAX_MARK_ROWS for its `metrics`
 * together (then marked in EVERY_PERIOD of its metrics).
 */
export function markedPeriods(fromMs: number, toMs: number, metrics: number): { readonly first: number; readonly last: number } | null {
  const ranges = (Object.keys(ROLLUPS) as Resolution[]).map((resolution) => bucketRange(resolution, fromMs, toMs));
  const first = periodOf(Math.min(...ranges.map((r) => r.first)));
  const last = periodOf(Math.max(...ranges.map((r) => r.last)));
  const days = last - first + 1;
  return days > MAX_MARKED_PERIODS || days * metrics > MAX_MARK_ROWS ? null : { first, last };
}

/** The buckets of the periods a deletion of `metrics` metrics marks, as a condition on `bucket` ('1' for every bucket). */
export function markedBucketsWhere(fromMs: number, toMs: number, metrics: number): string {
  const periods = markedPeriods(fromMs, toMs, metrics);
  if (periods === null) return '1';
  const day = `intDiv(bucket, ${int(MARK_PERIOD_MS)})`;
  // The bounds on `bucket` hold the days' buckets on either side of zero (intDiv rounds towards it), for the primary key.
  const edges = `bucket > ${int((periods.first - 1) * MARK_PERIOD_MS)} AND bucket < ${int((periods.last + 1) * MARK_PERIOD_MS)}`;
  return `${day} >= ${int(periods.first)} AND ${day} <= ${int(periods.last)} AND ${edges}`;
}

/**
 * Marks a deletion's range in every metric (migration 013): n = 1 in each of its metrics' days,
 * once the rollups' buckets are rewritten and before its task succeeds. A seal whose pass read its
 * bucket's marks before this row existed holds fewer marks than the bucket now has and is never
 * trusted again, whenever it is written; a pass that reads them after it reads the count after the
 * rewrite too. Written again when the deletion is applied again (a crash): one more mark only voids
 * the same seals (on a replicated table the same block is dropped, the first one counted).
 * `queryId` names the write as the deletion's others are (a swap's freeze waits for them).
 */
export async function markDeletion(client: ClickHouseClient, caps: Capabilities, mark: RollupMark, queryId: string): Promise<void> {
  if (mark.metrics.length === 0) return;
  const periods = markedPeriods(mark.fromMs, mark.toMs, mark.metrics.length);
  const days = periods === null ? [EVERY_PERIOD] : Array.from({ length: periods.last - periods.first + 1 }, (_, i) => periods.first + i);
  await client.insert({
    table: MARKS,
    format: 'JSONEachRow',
    values: mark.metrics.flatMap((metric_name) => days.map((period) => ({ metric_name, period, n: 1, cause: mark.cause }))),
    clickhouse_settings: rewriteInsertSettings(caps),
    query_id: queryId,
  });
}

/**
 * Voids every seal (a rebuild's swap, once the new generation's rollups are live): a mark of every
 * metric, then the sealed tables emptied. A pass under way that read its marks before the mark
 * writes seals that are never trusted, even after the truncation; one that read them after it
 * reads the new generation's counts. The truncation only frees the void rows.
 */
export async function voidEverySeal(client: ClickHouseClient, caps: Capabilities, cause: string): Promise<void> {
  await client.insert({
    table: MARKS,
    format: 'JSONEachRow',
    values: [{ metric_name: EVERY_METRIC, period: EVERY_PERIOD, n: 1, cause }],
    clickhouse_settings: rewriteInsertSettings(caps),
  });
  for (const table of Object.values(SEALED)) await client.command({ query: `TRUNCATE TABLE IF EXISTS ${quotedTable(table)}` });
}
