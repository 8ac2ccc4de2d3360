import type { WindowStats } from '@meridian/domain';
import { float, unescape } from '../series.ts';
import { int } from '../download/filter-sql.ts';
import { queryText, type ConnOptions } from '../download/http.ts';
import { sampleRowsSql, type SamplesRequest } from './samples.ts';

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

export function windowStatsSql(req: Pick<WindowStatsRequest, 'fromMs' | 'toMs' | 'sparse' | 'maxSamples' | 'reduce'>): string {
  return `${statsSelectSql(req)} FORMAT TabSeparated`;
}

/**
 * The reduction without its format: one row per series and step with the named columns n, t0,
 * v0, t1, v1, tp1, vp1, drops, resets, changes, total, lo, hi, len (aggregate-sql.ts reads them).
 */
export function statsSelectSql(req: Pick<WindowStatsRequest, 'fromMs' | 'toMs' | 'sparse' | 'maxSamples' | 'reduce'>): string {
  const { firstRefMs, stepMs, steps, rangeMs } = req.reduce;
  const F = int(firstRefMs);
  const step = int(stepMs);
  const range = int(rangeMs);
  // Shifted by M steps so the numerators are positive: intDiv truncates towards zero.
  const m = Math.ceil(rangeMs / stepMs) + 1;
  const shift = int(m * stepMs);
  const rows = sampleRowsSql(req);
  const series =
    'SELECT metric_name, arraySort(groupArray(ts)) AS t, arraySort((x, y) -> y, groupArray(value), groupArray(ts)) AS v, length(t) AS len ' +
    `FROM (${rows}) GROUP BY metric_name`;
  const paired =
    'SELECT metric_name, len, ts, value, tp, vp FROM (' + series + ') ' +
    'ARRAY JOIN t AS ts, v AS value, arrayPushFront(arrayPopBack(t), toInt64(-9223372036854775807)) AS tp, arrayPushFront(arrayPopBack(v), nan) AS vp';
  const bounded =
    'SELECT metric_name, len, ts, value, tp, vp, ' +
    `greatest(intDiv(ts - ${F} + ${shift} + ${step} - 1, ${step}) - ${int(m)}, 0) AS kmin, ` +
    `least(intDiv(ts - ${F} + ${shift} + ${range}, ${step}) - ${int(m)}, ${int(steps - 1)}) AS kmax ` +
    `FROM (${paired})`;
  const joined =
    'SELECT metric_name, len, ts, value, tp, vp, arrayJoin(arrayMap(x -> toInt64(x) + kmin, range(toUInt64(greatest(kmax - kmin + 1, 0))))) AS k, ' +
    `${F} + k * ${step} - ${range} AS ws FROM (${bounded})`;
  return (
    'SELECT metric_name, k, count() AS n, min(ts) AS t0, argMin(value, ts) AS v0, max(ts) AS t1, argMax(value, ts) AS v1, argMax(tp, ts) AS tp1, argMax(vp, ts) AS vp1, ' +
    'sumIf(vp, value < vp AND tp >= ws) AS drops, countIf(value < vp AND tp >= ws) AS resets, countIf(value != vp AND tp >= ws) AS changes, ' +
    `sum(value) AS total, min(value) AS lo, max(value) AS hi, any(len) AS len FROM (${joined}) GROUP BY metric_name, k`
  );
}

/** Hands each row (series name, step, its window's reduction) to onRow; answers the samples read, or 'too_many' past maxSamples. */
export function parseWindowStats(text: string, maxSamples: number, onRow: (name: string, k: number, stats: WindowStats) => void): number | 'too_many' {
  const lengths = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    const f = line.split('\t');
    if (f.length !== 16) throw new Error(`ClickHouse answered a row of ${f.length} fields`);
    const name = unescape(f[0]!);
    lengths.set(name, Number(f[15]));
    onRow(name, Number(f[1]), {
      n: Number(f[2]), tFirst: Number(f[3]), vFirst: float(f[4]!), tLast: Number(f[5]), vLast: float(f[6]!),
      tPrev: Number(f[7]), vPrev: float(f[8]!), drops: float(f[9]!), resets: Number(f[10]), changes: Number(f[11]),
      sum: float(f[12]!), min: float(f[13]!), max: float(f[14]!),
    });
  }
  let total = 0;
  for (const n of lengths.values()) total += n;
  return total > maxSamples ? 'too_many' : total;
}

export async function readWindowStats(conn: ConnOptions, req: WindowStatsRequest, onRow: (name: string, k: number, stats: WindowStats) => void): Promise<number | 'too_many'> {
  if (req.names.length === 0 || req.toMs < req.fromMs) return 0;
  const text = await queryText(conn, {
    sql: windowStatsSql(req),
    tables: [{ name: 'names', structure: 'name String', rows: req.names.map((n) => [n]) }],
    ...(req.queryId ? { queryId: req.queryId } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
  });
  return parseWindowStats(text, req.maxSamples, onRow);
}
