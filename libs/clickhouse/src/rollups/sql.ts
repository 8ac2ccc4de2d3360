import { int } from '../download/filter-sql.ts';
import type { ExternalTable } from '../download/external-data.ts';

/**
 * The rollups of migration 010: per (metric, bucket) states of every row of points, with the
 * distinct timestamps that tell a bucket holding a replaced point (rows > timestamps). The SQL is
 * built from constant text and checked integers; metric names travel as external tables.
 */

export type Resolution = '1m' | '1h';

/** Each rollup's bucket width (ms) and table. */
export const ROLLUPS: Readonly<Record<Resolution, { readonly stepMs: number; readonly table: string }>> = {
  '1m': { stepMs: 60_000, table: 'points_1m' },
  '1h': { stepMs: 3_600_000, table: 'points_1h' },
};

/** The version of a row: the newest of a (metric_name, ts) wins, as in a download with latest_only. */
const VERSION = 'tuple(updated_at, kafka_partition, kafka_offset, row_in_batch)';

/**
 * The states the migration's views write, from any table of points' structure (`source` is a
 * checked table name): what an insert that runs no view (an ATTACH of a staged upload) adds itself.
 */
export function rollupStatesSql(resolution: Resolution, source: string, where?: string): string {
  const step = int(ROLLUPS[resolution].stepMs);
  return (
    `SELECT metric_name, intDiv(ts, ${step}) * ${step} AS bucket, countState() AS rows, uniqExactState(ts) AS timestamps, ` +
    'minState(value) AS min_value, maxState(value) AS max_value, sumState(value) AS sum_value, ' +
    `argMaxState(value, ts) AS last_value FROM ${source} ${where === undefined ? '' : `WHERE ${where} `}GROUP BY metric_name, bucket`
  );
}

/** The first bucket of a rollup read and the last: the buckets overlapping [fromMs, toMs]. */
export function bucketRange(resolution: Resolution, fromMs: number, toMs: number): { first: number; last: number } {
  const step = ROLLUPS[resolution].stepMs;
  return { first: Math.floor(fromMs / step) * step, last: Math.floor(toMs / step) * step };
}

/** The first and last bucket of some rows (a loop: a spread of a page's buckets overflows the stack). */
export function bucketSpan(rows: readonly { readonly bucket: number }[]): [number, number] {
  let [first, last] = [Infinity, -Infinity];
  for (const { bucket } of rows) [first, last] = [Math.min(first, bucket), Math.max(last, bucket)];
  return [first, last];
}

/** Continue strictly after this (metric_name, bucket). */
export type RollupCursor = { readonly metric_name: string; readonly bucket: number };

/**
 * One page of rollup rows, in (metric_name, bucket) order, at most `limit`: the aggregates of
 * every row and `clean` = 1 where no timestamp repeats (then they are the deduplicated points').
 * Reads the external tables `names` and, with a cursor, `after_name`.
 */
export function rollupPageSql(resolution: Resolution, first: number, last: number, after: RollupCursor | null, limit: number): string {
  const conditions = ['metric_name IN (SELECT name FROM names)', `bucket >= ${int(first)}`, `bucket <= ${int(last)}`];
  if (after) {
    const a = '(SELECT any(name) FROM after_name)';
    conditions.push(`(metric_name > ${a} OR (metric_name = ${a} AND bucket > ${int(after.bucket)}))`);
  }
  return (
    'SELECT metric_name, bucket, countMerge(rows) = uniqExactMerge(timestamps) AS clean, countMerge(rows) AS n, ' +
    'minMerge(min_value) AS lo, maxMerge(max_value) AS hi, sumMerge(sum_value) AS total, argMaxMerge(last_value) AS last ' +
    `FROM ${ROLLUPS[resolution].table} WHERE ${conditions.join(' AND ')} ` +
    `GROUP BY metric_name, bucket ORDER BY metric_name, bucket LIMIT ${int(limit)} FORMAT TabSeparated`
  );
}

/**
 * The same aggregates of the deduplicated points (the newest row of each timestamp) of some
 * buckets, from points: for the buckets a rollup cannot answer. Reads the external table
 * `buckets` (name, bucket); [first, last] bound the scan by the primary key.
 */
export function dedupedBucketsSql(resolution: Resolution, first: number, last: number, source = 'points'): string {
  return `${dedupedBucketsSelect(resolution, first, last, source, 'buckets')} ORDER BY metric_name, bucket FORMAT TabSeparated`;
}

/** dedupedBucketsSql's SELECT, unordered, over the buckets of the external table `table` (name, bucket, ...). */
export function dedupedBucketsSelect(resolution: Resolution, first: number, last: number, source: string, table: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(source)) throw new Error(`not a points table: ${source}`);
  const step = int(ROLLUPS[resolution].stepMs);
  const latest =
    `SELECT metric_name, ts, argMax(value, ${VERSION}) AS v FROM ${source} ` +
    `WHERE metric_name IN (SELECT DISTINCT name FROM ${table}) AND ts >= ${int(first)} AND ts < ${int(last + ROLLUPS[resolution].stepMs)} ` +
    `AND (metric_name, intDiv(ts, ${step}) * ${step}) IN (SELECT name, bucket FROM ${table}) GROUP BY metric_name, ts`;
  return (
    `SELECT metric_name, intDiv(ts, ${step}) * ${step} AS bucket, 1 AS clean, count() AS n, min(v) AS lo, max(v) AS hi, sum(v) AS total, argMax(v, ts) AS last ` +
    `FROM (${latest}) GROUP BY metric_name, bucket`
  );
}

export const namesTable = (names: readonly string[]): ExternalTable => ({ name: 'names', structure: 'name String', rows: names.map((n) => [n]) });
export const afterTable = (after: RollupCursor): ExternalTable => ({ name: 'after_name', structure: 'name String', rows: [[after.metric_name]] });
export const bucketsTable = (buckets: readonly { metric_name: string; bucket: number }[]): ExternalTable => ({
  name: 'buckets',
  structure: 'name String, bucket Int64',
  rows: buckets.map((b) => [b.metric_name, String(b.bucket)]),
});
