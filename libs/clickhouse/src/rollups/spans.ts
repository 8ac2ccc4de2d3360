import { int } from '../download/filter-sql.ts';

/**
 * The spans of migration 011: per block written into points and per (metric, bucket) it touches,
 * the block's first and last timestamp there, its rows and its distinct timestamps. A bucket whose
 * spans count all of its rollup's rows, each span without a repeated timestamp and no two spans
 * overlapping, holds no replaced point: two rows of one timestamp would be in one span (its
 * distinct count short of its rows) or in two spans that both contain it. The converse does not
 * hold (two blocks may interleave without sharing a timestamp): such buckets are answered as
 * before the spans existed (read.ts), so the spans only ever save work, never decide a bucket
 * dirty.
 */

/**
 * The spans' verdict per (metric_name, bucket) of a spans table, rows matching `where` (built by
 * the caller from constant text and checked integers): `spans_rows`, the rows they count, and
 * `spans_apart`, 1 when no span repeats a timestamp and, sorted, none overlaps the next.
 */
export function spansOfBucketsSql(spansTable: string, where: string): string {
  checkTable(spansTable);
  const sorted = 'arraySort(groupArray((first_ts, last_ts)))';
  return (
    `SELECT metric_name, bucket, sum(rows) AS spans_rows, ` +
    `min(rows = distinct_ts) AND arrayAll((a, b) -> a.1 > b.2, arrayPopFront(${sorted}), arrayPopBack(${sorted})) AS spans_apart ` +
    `FROM ${spansTable} WHERE ${where} GROUP BY metric_name, bucket`
  );
}

/**
 * The spans a view would write for the rows of `source` (a table of points' structure, or a
 * subquery in parentheses) matching `where`, taken as one block: what a write that runs no view
 * adds itself (a staged upload's ATTACH, a deletion's or a repair's rewrite of buckets).
 */
export function spansStatesSql(stepMs: number, source: string, where?: string): string {
  const step = int(stepMs);
  return (
    `SELECT metric_name, intDiv(ts, ${step}) * ${step} AS bucket, min(ts) AS first_ts, max(ts) AS last_ts, count() AS rows, uniqExact(ts) AS distinct_ts ` +
    `FROM ${source} ${where === undefined ? '' : `WHERE ${where} `}GROUP BY metric_name, bucket`
  );
}

/**
 * The spans table beside a rollup table, by the names the migrations and replay's generations
 * give them: `points_1h` → `points_1h_spans`, `.inner.points_1h` → `.inner.points_1h_spans`,
 * `points_1h_g3` → `points_1h_spans_g3`.
 */
export function spansTableOf(rollupTable: string): string {
  const m = /^(\.inner\.)?(points_1[mh])((?:_g\d+)?)$/.exec(rollupTable);
  if (!m) throw new Error(`not a rollup table: ${rollupTable}`);
  return `${m[1] ?? ''}${m[2]!}_spans${m[3]!}`;
}

function checkTable(name: string): void {
  if (!/^[.A-Za-z_][.A-Za-z0-9_]*$/.test(name)) throw new Error(`not a spans table: ${name}`);
}
