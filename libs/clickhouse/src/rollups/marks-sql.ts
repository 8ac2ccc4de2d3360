import { int } from '../download/filter-sql.ts';
import { ROLLUPS, type Resolution } from './sql.ts';

/**
 * The marks of migration 012: a row per metric and range a deletion rewrote in the rollups, and
 * rows with the empty name (a rebuild's swap) that cover every bucket. A sealed row is trusted
 * only while its bucket's marks are as many as when the pass read them (before the count).
 */
export const MARKS = 'rollup_marks';

/** The name of a mark covering every metric: no metric is named ''. */
export const EVERY_METRIC = '';

/**
 * `inner` (a subquery with metric_name and bucket columns, among `columns`) with a column `m`, the
 * number of marks covering each row's bucket: the metric's ranges overlapping it, as arrays joined
 * per metric (18.16 has no range join) and counted per row, plus the marks of every metric.
 * `names` restricts the metrics whose marks are read (a condition on metric_name), `buckets` the
 * buckets `inner` holds (from `first`, when known, to before `end`): only the marks overlapping them
 * are read. A row costs one comparison per such mark of its metric: marks grow with deletions only.
 */
export function withMarks(resolution: Resolution, inner: string, columns: string, names: string, buckets: { first?: number; end: number }): string {
  const step = int(ROLLUPS[resolution].stepMs);
  const overlapping = `from_ms < ${int(buckets.end)}${buckets.first === undefined ? '' : ` AND to_ms >= ${int(buckets.first)}`}`;
  const perMetric =
    `SELECT metric_name, groupArray(from_ms) AS mark_from, groupArray(to_ms) AS mark_to FROM ${MARKS} ` +
    `WHERE metric_name != '' AND ${names} AND ${overlapping} GROUP BY metric_name`;
  const every = `(SELECT count() FROM ${MARKS} WHERE metric_name = '')`;
  return (
    `SELECT ${columns}, toUInt64(arrayCount((f, t) -> f < bucket + ${step} AND t >= bucket, mark_from, mark_to) + ${every}) AS m ` +
    `FROM (${inner}) AS b ANY LEFT JOIN (${perMetric}) AS k USING (metric_name)`
  );
}
