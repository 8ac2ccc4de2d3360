import type { WindowStats, WindowStatsFunction } from '@meridian/domain';
import { float, unescape } from '../series.ts';
import { int } from '../download/filter-sql.ts';
import type { ConnOptions } from '../download/http.ts';
import { namesQueryRows, seriesArraysSql, type SamplesRequest } from './samples.ts';

/**
 * A range function's windows reduced in ClickHouse: for each series and each step k of a query
 * (the window ending at firstRefMs + k·stepMs, rangeMs long, both ends included), the sample
 * count, first, last and next-to-last samples, the sum of the values before each decrease
 * (counter resets), resets, changes, sum, min and max. Each sample is paired with the one
 * before it (arrays, since 18.16 has no window functions), then joined to the steps whose
 * windows hold it (arrayJoin), then grouped by series and step: one row per series and step
 * comes back instead of every sample, and the function's value is computed from it exactly as
 * from the samples.
 */
export type WindowStatsRequest = SamplesRequest & {
  readonly reduce: { readonly firstRefMs: number; readonly stepMs: number; readonly steps: number; readonly rangeMs: number };
};

/** The request's names, in the order of the external table: a series is its 1-based index here (sid) once its samples are in arrays. */
export const NAMES = '(SELECT groupArray(name) FROM names)';

export function windowStatsSql(req: Pick<WindowStatsRequest, 'fromMs' | 'toMs' | 'sparse' | 'reduce'>): string {
  return `SELECT ${NAMES}[sid] AS metric_name, k, n, t0, v0, t1, v1, tp1, vp1, drops, resets, changes, total, lo, hi, len FROM (${statsSelectSql(req)}) FORMAT TabSeparated`;
}

/**
 * Each sample with the one before it in its series (the first has none: -2^63 and NaN), and the
 * series' sample count. The series is its number (sid), not its name: a name repeated on every
 * sample row and grouped by was much of the work.
 */
function pairedSql(req: Pick<WindowStatsRequest, 'fromMs' | 'toMs' | 'sparse'>, reads: readonly Column[]): string {
  const series = `FROM (SELECT indexOf(${NAMES}, metric_name) AS sid, len, t, v FROM (${seriesArraysSql(req)}))`;
  // Without a column that reads the sample before, none is joined: an ARRAY JOIN whose arrays the
  // query then leaves unread made 18.16 ask for 64 GiB (and 8 GiB in other shapes).
  if (!PAIRED.some((c) => reads.includes(c))) return `SELECT sid, len, ts, value ${series} ARRAY JOIN t AS ts, v AS value`;
  return (
    `SELECT sid, len, ts, value, tp, vp ${series} ` +
    'ARRAY JOIN t AS ts, v AS value, arrayPushFront(arrayPopBack(t), toInt64(-9223372036854775807)) AS tp, arrayPushFront(arrayPopBack(v), nan) AS vp'
  );
}

type Column = 'first' | 'prev' | 'drops' | 'resets' | 'changes' | 'total' | 'lo' | 'hi';
/** The columns each function reads besides n, t1 and v1 (functions.ts' evalWindowStats, aggregate-sql.ts' valueSql); the others are 0. */
const READS: Record<WindowStatsFunction, readonly Column[]> = {
  rate: ['first', 'drops'],
  increase: ['first', 'drops'],
  delta: ['first'],
  irate: ['prev'],
  resets: ['resets'],
  changes: ['changes'],
  count_over_time: [],
  sum_over_time: ['total'],
  avg_over_time: ['total'],
  min_over_time: ['lo'],
  max_over_time: ['hi'],
  last_over_time: [],
};
const ALL: readonly Column[] = ['first', 'prev', 'drops', 'resets', 'changes', 'total', 'lo', 'hi'];
/** The columns that read the sample before each one. */
const PAIRED: readonly Column[] = ['prev', 'drops', 'resets', 'changes'];

/** An aggregate when the function reads its column, else a constant of its type (ClickHouse then skips the work). */
function only(reads: readonly Column[], column: Column, sql: string, zero: string): string {
  return reads.includes(column) ? sql : zero;
}

/**
 * The reduction without its format: one row per series (sid) and step with the named columns
 * n, t0, v0, t1, v1, tp1, vp1, drops, resets, changes, total, lo, hi, len; those `func` does
 * not read are 0 (every column when no func is given). A range query whose range is a whole
 * number of steps is reduced by steps (bucketedStatsSql); any other (an instant query, a range
 * between steps) joins each sample to its windows.
 */
export function statsSelectSql(req: Pick<WindowStatsRequest, 'fromMs' | 'toMs' | 'sparse' | 'reduce'>, func?: WindowStatsFunction): string {
  const { stepMs, steps, rangeMs } = req.reduce;
  const reads = func ? READS[func] : ALL;
  return steps > 1 && rangeMs >= stepMs && rangeMs % stepMs === 0 ? bucketedStatsSql(req, reads) : perSampleStatsSql(req, reads);
}

/** Every sample joined to each step whose window holds it (a sample in r windows is r rows), grouped by series and step. */
function perSampleStatsSql(req: Pick<WindowStatsRequest, 'fromMs' | 'toMs' | 'sparse' | 'reduce'>, reads: readonly Column[]): string {
  const { firstRefMs, stepMs, steps, rangeMs } = req.reduce;
  const F = int(firstRefMs);
  const step = int(stepMs);
  const range = int(rangeMs);
  // Shifted by M steps so the numerators are positive: intDiv truncates towards zero.
  const m = Math.ceil(rangeMs / stepMs) + 1;
  const shift = int(m * stepMs);
  const paired = PAIRED.some((col) => reads.includes(col)) ? ', tp, vp' : '';
  const bounded =
    `SELECT sid, len, ts, value${paired}, ` +
    `greatest(intDiv(ts - ${F} + ${shift} + ${step} - 1, ${step}) - ${int(m)}, 0) AS kmin, ` +
    `least(intDiv(ts - ${F} + ${shift} + ${range}, ${step}) - ${int(m)}, ${int(steps - 1)}) AS kmax ` +
    `FROM (${pairedSql(req, reads)})`;
  const joined =
    `SELECT sid, len, ts, value${paired}, arrayJoin(arrayMap(x -> toInt64(x) + kmin, range(toUInt64(greatest(kmax - kmin + 1, 0))))) AS k, ` +
    `${F} + k * ${step} - ${range} AS ws FROM (${bounded})`;
  const c = (column: Column, sql: string, zero: string) => only(reads, column, sql, zero);
  return (
    `SELECT sid, k, count() AS n, min(ts) AS t0, ${c('first', 'argMin(value, ts)', 'nan')} AS v0, max(ts) AS t1, argMax(value, ts) AS v1, ` +
    `${c('prev', 'argMax(tp, ts)', 'toInt64(0)')} AS tp1, ${c('prev', 'argMax(vp, ts)', 'nan')} AS vp1, ` +
    `${c('drops', 'sumIf(vp, value < vp AND tp >= ws)', 'toFloat64(0)')} AS drops, ${c('resets', 'countIf(value < vp AND tp >= ws)', 'toUInt64(0)')} AS resets, ` +
    `${c('changes', 'countIf(value != vp AND tp >= ws)', 'toUInt64(0)')} AS changes, ` +
    `${c('total', 'sum(value)', 'toFloat64(0)')} AS total, ${c('lo', 'min(value)', 'nan')} AS lo, ${c('hi', 'max(value)', 'nan')} AS hi, any(len) AS len ` +
    `FROM (${joined}) GROUP BY sid, k`
  );
}

/**
 * The same reduction in two groupings, for a range of R whole steps: the samples are first
 * grouped by the step interval that holds them (bucket j: F + (j−1)·step < ts ≤ F + j·step),
 * and the buckets then joined to their windows. Window k (F + (k−R)·step ≤ ts ≤ F + k·step, both
 * ends included) is the buckets k−R+1 … k, and the sample at exactly its start, which is the last
 * of bucket k−R when it lies on that bucket's end (the "edge"). A sample is one row of the first
 * grouping and a bucket R + 1 rows of the second, where joining samples to windows made each
 * sample R + 1 rows: with many samples per step that was most of the work (and of ClickHouse's
 * memory: 10 million samples of rate[5m] at 1 m steps passed 5.6 GB).
 *
 * A pair of samples (the one before, for drops, resets and changes) counts when the earlier
 * sample is in the window: inside a bucket always (the bucket is all in the window), for the
 * first sample of a bucket when the sample before it (tpf) is at or after the window's start;
 * never for the edge sample (the one before it is before the window).
 */
function bucketedStatsSql(req: Pick<WindowStatsRequest, 'fromMs' | 'toMs' | 'sparse' | 'reduce'>, reads: readonly Column[]): string {
  const { firstRefMs, stepMs, steps, rangeMs } = req.reduce;
  const F = int(firstRefMs);
  const step = int(stepMs);
  const r = int(rangeMs / stepMs);
  // Shifted so the numerator is positive (intDiv truncates towards zero): samples start at F − range.
  const m = rangeMs / stepMs + 1;
  const shift = int(m * stepMs);
  const c = (column: Column, sql: string, zero: string) => only(reads, column, sql, zero);
  const inner = `tp > ${F} + (j - 1) * ${step}`;
  const pairs = reads.includes('drops') || reads.includes('resets') || reads.includes('changes');
  const buckets =
    `SELECT sid, intDiv(ts - ${F} + ${shift} + ${step} - 1, ${step}) - ${int(m)} AS j, any(len) AS len, count() AS bn, min(ts) AS bt0, max(ts) AS bt1, argMax(value, ts) AS bv1, ` +
    `${c('first', 'argMin(value, ts)', 'nan')} AS bv0, ${pairs ? 'argMin(value, ts) AS bfirst, argMin(tp, ts) AS tpf, argMin(vp, ts) AS vpf' : 'nan AS bfirst, toInt64(0) AS tpf, nan AS vpf'}, ` +
    `${c('prev', 'argMax(tp, ts)', 'toInt64(0)')} AS btp1, ${c('prev', 'argMax(vp, ts)', 'nan')} AS bvp1, ` +
    `${c('drops', `sumIf(vp, value < vp AND ${inner})`, 'toFloat64(0)')} AS bdrops, ${c('resets', `countIf(value < vp AND ${inner})`, 'toUInt64(0)')} AS bresets, ` +
    `${c('changes', `countIf(value != vp AND ${inner})`, 'toUInt64(0)')} AS bchanges, ` +
    `${c('total', 'sum(value)', 'toFloat64(0)')} AS btotal, ${c('lo', 'min(value)', 'nan')} AS blo, ${c('hi', 'max(value)', 'nan')} AS bhi ` +
    `FROM (${pairedSql(req, reads)}) GROUP BY sid, j`;
  // The windows of bucket j: j … j + R − 1 hold it whole, j + R its last sample when that is on the bucket's end.
  const joined =
    `SELECT *, arrayJoin(range(toUInt64(greatest(least(j + ${r}, ${int(steps - 1)}) - greatest(j, 0) + 1, 0)))) + greatest(j, 0) AS k, ` +
    `k < j + ${r} AS whole, ${F} + (k - ${r}) * ${step} AS ws FROM (${buckets})`;
  const pick = (inside: string, edge: string) => `if(whole, ${inside}, ${edge})`;
  const paired = (counted: string) => `(bfirst ${counted} vpf AND tpf >= ws)`;
  return (
    `SELECT sid, k, sum(${pick('bn', '1')}) AS n, min(${pick('bt0', 'bt1')}) AS t0, ${c('first', `argMin(${pick('bv0', 'bv1')}, ${pick('bt0', 'bt1')})`, 'nan')} AS v0, ` +
    `max(bt1) AS t1, argMax(bv1, bt1) AS v1, ${c('prev', 'argMax(btp1, bt1)', 'toInt64(0)')} AS tp1, ${c('prev', 'argMax(bvp1, bt1)', 'nan')} AS vp1, ` +
    `${c('drops', `sum(${pick(`bdrops + if(${paired('<')}, vpf, 0)`, '0')})`, 'toFloat64(0)')} AS drops, ` +
    `${c('resets', `sum(${pick(`bresets + ${paired('<')}`, '0')})`, 'toUInt64(0)')} AS resets, ` +
    `${c('changes', `sum(${pick(`bchanges + ${paired('!=')}`, '0')})`, 'toUInt64(0)')} AS changes, ` +
    `${c('total', `sum(${pick('btotal', 'bv1')})`, 'toFloat64(0)')} AS total, ${c('lo', `min(${pick('blo', 'bv1')})`, 'nan')} AS lo, ${c('hi', `max(${pick('bhi', 'bv1')})`, 'nan')} AS hi, ` +
    `any(len) AS len FROM (${joined}) WHERE whole OR bt1 = ${F} + j * ${step} GROUP BY sid, k`
  );
}

/** Hands each row (series name, step, its window's reduction) to onRow; answers the samples read, or 'too_many' past maxSamples. */
export function parseWindowStats(
  rows: readonly (readonly string[])[],
  maxSamples: number,
  onRow: (name: string, k: number, stats: WindowStats) => void,
): number | 'too_many' {
  const lengths = new Map<string, number>();
  for (const f of rows) {
    const name = unescape(f[0]!);
    lengths.set(name, Number(f[15]));
    onRow(name, Number(f[1]), {
      n: Number(f[2]),
      tFirst: Number(f[3]),
      vFirst: float(f[4]!),
      tLast: Number(f[5]),
      vLast: float(f[6]!),
      tPrev: Number(f[7]),
      vPrev: float(f[8]!),
      drops: float(f[9]!),
      resets: Number(f[10]),
      changes: Number(f[11]),
      sum: float(f[12]!),
      min: float(f[13]!),
      max: float(f[14]!),
    });
  }
  let total = 0;
  for (const n of lengths.values()) total += n;
  return total > maxSamples ? 'too_many' : total;
}

export async function readWindowStats(
  conn: ConnOptions,
  req: WindowStatsRequest,
  onRow: (name: string, k: number, stats: WindowStats) => void,
): Promise<number | 'too_many'> {
  if (req.names.length === 0 || req.toMs < req.fromMs) return 0;
  const rows = await namesQueryRows(conn, req, windowStatsSql(req), { structure: 'name String', rows: req.names.map((n) => [n]) }, 16);
  return parseWindowStats(rows, req.maxSamples, onRow);
}
