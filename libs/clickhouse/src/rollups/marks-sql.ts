import { int } from '../download/filter-sql.ts';

/**
 * The counted marks of migration 013: per metric and day (`period`) the number of deletions that
 * rewrote rollup buckets of that day, a metric's whole-axis row (EVERY_PERIOD) for a range of more
 * than MAX_MARKED_PERIODS days, and the empty name's rows (a rebuild's swap) that count in every
 * bucket. A sealed row is trusted only while its bucket's marks are as many as when the pass read
 * them (before the count).
 */
export const MARKS = 'rollup_mark_counts';

/** The name of a mark covering every metric: no metric is named ''. */
export const EVERY_METRIC = '';

/**
 * A period is a day of buckets: a deletion voids the seals of the days it touches (at most 1,440
 * minutes and 24 hours per metric and day for the pass to seal again), and a read joins one row per
 * metric and day of its page (366 for a year at `1h`), whatever the number of deletions. A day is a
 * whole number of buckets of every resolution, so a bucket lies in one period.
 */
export const MARK_PERIOD_MS = 86_400_000;

/** The period of a metric's marks that count in every bucket of it: below any bucket's (intDiv of an Int64 by a day is above -1.1e11). */
export const EVERY_PERIOD = Number.MIN_SAFE_INTEGER;

/** The most periods a deletion marks one by one; a longer range marks its metrics' EVERY_PERIOD (a bound on a deletion's rows). */
export const MAX_MARKED_PERIODS = 366;

/**
 * The most rows one deletion's mark inserts, metrics × days: a deletion by pattern may name tens of
 * thousands of metrics, and a year of days each would be millions of rows built in the ingest
 * worker; past it every metric is marked in its EVERY_PERIOD (one row each, voiding all its seals).
 */
export const MAX_MARK_ROWS = 100_000;

/** A bucket's period, as ClickHouse's intDiv gives it (towards zero). */
export const periodOf = (bucket: number): number => Math.trunc(bucket / MARK_PERIOD_MS) || 0; // no -0

/**
 * `inner` (a subquery with metric_name and bucket columns, among `columns`) with a column `m`, the
 * marks of each row's bucket: the sum of its metric's counts for the bucket's day, of its metric's
 * whole-axis counts, and of every metric's. `names` restricts the metrics whose counts are read (a
 * condition on metric_name), `buckets` the buckets `inner` holds (from `first`, when known, to
 * before `end`): only the days of those are read. Two joins on small tables (a row per metric and
 * day, the counts summed here: the table's merges are never waited for), not a comparison per
 * deletion: a row costs the same after any number of them.
 */
export function withMarks(inner: string, columns: string, names: string, buckets: { first?: number; end: number }): string {
  const from = buckets.first === undefined ? EVERY_PERIOD + 1 : periodOf(buckets.first);
  const days = `period >= ${int(from)} AND period <= ${int(periodOf(buckets.end))}`;
  const perDay = `SELECT metric_name, period, sum(n) AS in_day FROM ${MARKS} WHERE metric_name != '' AND ${names} AND ${days} GROUP BY metric_name, period`;
  const whole = `SELECT metric_name, sum(n) AS in_whole FROM ${MARKS} WHERE metric_name != '' AND ${names} AND period = ${int(EVERY_PERIOD)} GROUP BY metric_name`;
  const every = `(SELECT sum(n) FROM ${MARKS} WHERE metric_name = '')`;
  const daily =
    `SELECT ${columns}, in_day FROM (SELECT ${columns}, intDiv(bucket, ${int(MARK_PERIOD_MS)}) AS period FROM (${inner})) AS b ` +
    `ANY LEFT JOIN (${perDay}) AS k USING (metric_name, period)`;
  return `SELECT ${columns}, toUInt64(in_day + in_whole + ${every}) AS m FROM (${daily}) AS d ANY LEFT JOIN (${whole}) AS w USING (metric_name)`;
}
