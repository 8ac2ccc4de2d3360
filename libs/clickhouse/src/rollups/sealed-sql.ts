import { int } from '../download/filter-sql.ts';
import type { ExternalTable } from '../download/external-data.ts';
import { withMarks } from './marks-sql.ts';
import { dedupedBucketsSelect, ROLLUPS, type Resolution, type RollupCursor } from './sql.ts';

/**
 * The sealed buckets of migration 011: per (metric, bucket) the aggregates of its deduplicated
 * points, with `rows`, the rollup's count when they were computed, and `marks` (migrations 012, 013),
 * the bucket's marks the pass read before that count. A sealed row answers its bucket while the
 * rollup's count still equals its `rows` and the bucket's marks still number its `marks`. SQL from constant text and checked integers;
 * names travel as external tables.
 */
export const SEALED: Readonly<Record<Resolution, string>> = { '1m': 'points_1m_sealed', '1h': 'points_1h_sealed' };

/** The sealed tables' columns, in the order the seal statements write them. */
const SEALED_COLUMNS = '(metric_name, bucket, rows, points, min_value, max_value, sum_value, last_value, marks)';

const AGGREGATES = 'minMerge(min_value) AS lo, maxMerge(max_value) AS hi, sumMerge(sum_value) AS total, argMaxMerge(last_value) AS last';

function pageConditions(first: number, last: number, after: RollupCursor | null): string {
  const conditions = ['metric_name IN (SELECT name FROM names)', `bucket >= ${int(first)}`, `bucket <= ${int(last)}`];
  if (after) {
    const a = '(SELECT any(name) FROM after_name)';
    conditions.push(`(metric_name > ${a} OR (metric_name = ${a} AND bucket > ${int(after.bucket)}))`);
  }
  return conditions.join(' AND ');
}

/**
 * One page of a rollup's buckets, in (metric_name, bucket) order, at most `limit`, without the
 * exactness check: the aggregates of every row, and the sealed row whose `rows` equals the
 * bucket's count and whose `marks` its marks where there is one (`sealed` = 1, its aggregates in the s_ columns; 0 and
 * zeros elsewhere). Reads the external tables `names` and, with a cursor, `after_name`.
 */
export function sealedPageSql(resolution: Resolution, first: number, last: number, after: RollupCursor | null, limit: number): string {
  const where = pageConditions(first, last, after);
  const rollup =
    `SELECT metric_name, bucket, countMerge(rows) AS n, ${AGGREGATES} FROM ${ROLLUPS[resolution].table} WHERE ${where} ` +
    `GROUP BY metric_name, bucket ORDER BY metric_name, bucket LIMIT ${int(limit)}`;
  const marked = withMarks(rollup, 'metric_name, bucket, n, lo, hi, total, last', 'metric_name IN (SELECT name FROM names)', {
    first,
    end: last + ROLLUPS[resolution].stepMs,
  });
  const sealed =
    'SELECT metric_name, bucket, rows AS n, marks AS m, 1 AS sealed, points AS s_points, min_value AS s_lo, max_value AS s_hi, sum_value AS s_total, last_value AS s_last ' +
    `FROM ${SEALED[resolution]} WHERE ${where}`;
  return (
    'SELECT metric_name, bucket, sealed, n, lo, hi, total, last, s_points, s_lo, s_hi, s_total, s_last ' +
    `FROM (${marked}) AS r ANY LEFT JOIN (${sealed}) AS s USING (metric_name, bucket, n, m) ORDER BY metric_name, bucket FORMAT TabSeparated`
  );
}

/**
 * The buckets of the external table `buckets` (name, bucket) as rollupPageSql gives them: the
 * aggregates of every row and `clean` = 1 where no timestamp repeats. [first, last] bound the
 * scan by the primary key.
 */
export function checkedBucketsSql(resolution: Resolution, first: number, last: number): string {
  return (
    `SELECT metric_name, bucket, countMerge(rows) = uniqExactMerge(timestamps) AS clean, countMerge(rows) AS n, ${AGGREGATES} ` +
    `FROM ${ROLLUPS[resolution].table} WHERE metric_name IN (SELECT DISTINCT name FROM buckets) AND bucket >= ${int(first)} AND bucket <= ${int(last)} ` +
    'AND (metric_name, bucket) IN (SELECT name, bucket FROM buckets) GROUP BY metric_name, bucket ORDER BY metric_name, bucket FORMAT TabSeparated'
  );
}

/**
 * Per metric, the rollup's count of its closed buckets (bucket < closedBefore) and the sum of the
 * greatest sealed `rows` of each of them, of the sealed rows at their bucket's marks (a void one,
 * marked since, may hold a count above the bucket's). Counts only grow while no mark comes, so a
 * trusted seal's `rows` is never above its bucket's count: the two sums are equal exactly when
 * every closed bucket has a seal at its count, and only the metrics where they differ are looked
 * into. Reads the `rows` column of the rollup and the sealed table's keys and counts once.
 */
export function sealTotalsSql(resolution: Resolution, closedBefore: number): string {
  const before = `bucket < ${int(closedBefore)}`;
  const counted = `SELECT metric_name, countMerge(rows) AS counted FROM ${ROLLUPS[resolution].table} WHERE ${before} GROUP BY metric_name`;
  const seals = withMarks(`SELECT metric_name, bucket, rows, marks FROM ${SEALED[resolution]} WHERE ${before}`, 'metric_name, bucket, rows, marks', '1', {
    end: closedBefore,
  });
  const sealed =
    `SELECT metric_name, sum(top) AS sealed FROM (SELECT metric_name, bucket, max(rows) AS top FROM (${seals}) WHERE marks = m ` +
    'GROUP BY metric_name, bucket) GROUP BY metric_name';
  return `SELECT metric_name FROM (${counted}) AS r ANY LEFT JOIN (${sealed}) AS s USING (metric_name) WHERE counted != sealed ORDER BY metric_name FORMAT TabSeparated`;
}

/**
 * The closed buckets of the metrics of the external table `names` (one, as the pass asks) with no
 * sealed row at their count and marks, in bucket order, at most `limit`, with that count and the
 * bucket's marks (`m`). The pass writes these marks in the seals: they are read before the count
 * the seals are written with (the exactness check's, a later statement).
 */
export function sealCandidatesSql(resolution: Resolution, closedBefore: number, limit: number): string {
  const where = `metric_name IN (SELECT name FROM names) AND bucket < ${int(closedBefore)}`;
  const counted = `SELECT metric_name, bucket, countMerge(rows) AS n FROM ${ROLLUPS[resolution].table} WHERE ${where} GROUP BY metric_name, bucket`;
  const marked = withMarks(counted, 'metric_name, bucket, n', 'metric_name IN (SELECT name FROM names)', { end: closedBefore });
  const sealed = `SELECT metric_name, bucket, rows AS n, marks AS m, 1 AS sealed FROM ${SEALED[resolution]} WHERE ${where}`;
  return (
    `SELECT metric_name, bucket, n, m FROM (${marked}) AS r ANY LEFT JOIN (${sealed}) AS s USING (metric_name, bucket, n, m) ` +
    `WHERE sealed = 0 ORDER BY metric_name, bucket LIMIT ${int(limit)} FORMAT TabSeparated`
  );
}

/**
 * Seals the buckets of the external table `counts` (name, bucket, rows, marks) with the rollup's merged
 * states, where its count still equals the one in `counts` (an insert since raises it, so equal
 * means no row came since). For the buckets the exactness check found clean; with `rawGone`, for
 * the others whose raw points are all gone (retention), where the rollup's aggregates of every row
 * are what a reader answers. One statement: the aggregates and the count it compares are of the
 * same parts, and no value leaves the server.
 */
export function insertMergedSealsSql(resolution: Resolution, first: number, last: number, rawGone?: { readonly source: string }): string {
  const step = int(ROLLUPS[resolution].stepMs);
  const inRange = `bucket >= ${int(first)} AND bucket <= ${int(last)}`;
  const gone = rawGone
    ? ` AND (metric_name, bucket) NOT IN (SELECT metric_name, intDiv(ts, ${step}) * ${step} FROM ${pointsSource(rawGone.source)} ` +
      `WHERE metric_name IN (SELECT DISTINCT name FROM counts) AND ts >= ${int(first)} AND ts < ${int(last + ROLLUPS[resolution].stepMs)})`
    : '';
  const merged =
    `SELECT metric_name, bucket, countMerge(rows) AS n, ${AGGREGATES} FROM ${ROLLUPS[resolution].table} ` +
    `WHERE metric_name IN (SELECT DISTINCT name FROM counts) AND ${inRange} ` +
    `AND (metric_name, bucket) IN (SELECT name, bucket FROM counts)${gone} GROUP BY metric_name, bucket`;
  return (
    `INSERT INTO ${SEALED[resolution]} ${SEALED_COLUMNS} SELECT metric_name, bucket, n, n, lo, hi, total, last, marks ` +
    `FROM (${merged}) AS r ANY INNER JOIN (SELECT name AS metric_name, bucket, rows AS n, marks FROM counts) AS c USING (metric_name, bucket, n)`
  );
}

function pointsSource(source: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(source)) throw new Error(`not a points table: ${source}`);
  return source;
}

/**
 * Seals the buckets of the external table `counts` (name, bucket, rows, marks) where a timestamp
 * repeats: the aggregates of their deduplicated points from `source`, written with the count
 * read before (a point inserted meanwhile is in the aggregates but above that count, so the seal
 * never matches). A bucket with no raw point left (retention) gets none.
 */
export function insertDedupedSealsSql(resolution: Resolution, first: number, last: number, source = 'points'): string {
  return (
    `INSERT INTO ${SEALED[resolution]} ${SEALED_COLUMNS} SELECT metric_name, bucket, rows, n, lo, hi, total, last, marks ` +
    `FROM (${dedupedBucketsSelect(resolution, first, last, source, 'counts')}) AS d ANY INNER JOIN (SELECT name AS metric_name, bucket, rows, marks FROM counts) AS c USING (metric_name, bucket)`
  );
}

/** A bucket, the rollup's count of it and the marks covering it, as the pass read them (the marks first). */
export type BucketCount = { readonly metric_name: string; readonly bucket: number; readonly rows: number; readonly marks: number };

export const countsTable = (rows: readonly BucketCount[]): ExternalTable => ({
  name: 'counts',
  structure: 'name String, bucket Int64, rows UInt64, marks UInt64',
  rows: rows.map((r) => [r.metric_name, String(r.bucket), String(r.rows), String(r.marks)]),
});
