import { int } from './download/filter-sql.ts';
import { queryText, type ConnOptions } from './download/http.ts';
import { ROLLUPS, type Resolution } from './rollups/sql.ts';

/**
 * Sampled series: the points of some metrics over a range, grouped per metric into buckets of
 * `stepMs` (intDiv(ts, step): buckets aligned to the epoch), each with the min, max, average and
 * count of its points. The metric names travel as the external table `names`, never in the
 * SQL; the range and step are numbers checked to be safe integers.
 */
export type SeriesRequest = {
  readonly metricNames: readonly string[];
  readonly fromMs: number;
  readonly toMs: number;
  readonly stepMs: number;
  readonly queryId?: string;
  readonly signal?: AbortSignal;
};

/** One metric's buckets, as columns: bucket i starts at t[i] (epoch ms) and holds count[i] points. */
export type SeriesColumns = {
  readonly metric_name: string;
  readonly t: number[];
  readonly min: number[];
  readonly max: number[];
  readonly avg: number[];
  readonly count: number[];
};

/** The query: one row per (metric, bucket) that holds points, in name then time order. */
export function seriesSql(fromMs: number, toMs: number, stepMs: number): string {
  if (stepMs < 1) throw new RangeError(`step must be at least 1 ms: ${stepMs}`);
  const step = int(stepMs);
  return (
    `SELECT metric_name, intDiv(ts, ${step}) * ${step} AS t, min(value) AS lo, max(value) AS hi, avg(value) AS mean, count() AS n ` +
    `FROM points WHERE metric_name IN (SELECT name FROM names) AND ts >= ${int(fromMs)} AND ts <= ${int(toMs)} ` +
    // intDiv(ts, step) * step has the order of ts: the primary key's order within a metric.
    'GROUP BY metric_name, t ORDER BY metric_name, t FORMAT TabSeparated'
  );
}

/** The rollup a series of this range and step reads (seriesFromRollupSql), or null: the points alone. */
export function seriesRollup(fromMs: number, toMs: number, stepMs: number): Resolution | null {
  const resolution = (['1h', '1m'] as const).find((r) => stepMs % ROLLUPS[r].stepMs === 0);
  if (resolution === undefined) return null;
  const w = ROLLUPS[resolution].stepMs;
  // At least one bucket wholly inside the range.
  return Math.ceil(fromMs / w) * w <= Math.floor((toMs + 1) / w) * w - w ? resolution : null;
}

/**
 * The same query answered from a rollup (migration 010) where the step is a whole number of its
 * buckets: the buckets wholly inside the range from the rollup's states of every row (so the
 * answer is the raw query's: min, max and count of every stored row, the mean up to the rounding
 * of the sum), the points of the partial buckets at either end from points. Null where no rollup
 * fits (a step not a multiple of a minute, or a range without one whole bucket): the raw query then.
 */
export function seriesFromRollupSql(fromMs: number, toMs: number, stepMs: number): string | null {
  const resolution = seriesRollup(fromMs, toMs, stepMs);
  if (resolution === null) return null;
  const rollup = ROLLUPS[resolution];
  const w = rollup.stepMs;
  const innerFirst = Math.ceil(fromMs / w) * w;
  const innerLast = Math.floor((toMs + 1) / w) * w - w;
  const step = int(stepMs);
  const names = 'metric_name IN (SELECT name FROM names)';
  const whole =
    `SELECT metric_name, intDiv(bucket, ${step}) * ${step} AS t, minMerge(min_value) AS lo, maxMerge(max_value) AS hi, sumMerge(sum_value) AS total, countMerge(rows) AS n ` +
    `FROM ${rollup.table} WHERE ${names} AND bucket >= ${int(innerFirst)} AND bucket <= ${int(innerLast)} GROUP BY metric_name, t`;
  const edges =
    `SELECT metric_name, intDiv(ts, ${step}) * ${step} AS t, min(value) AS lo, max(value) AS hi, sum(value) AS total, count() AS n FROM points ` +
    `WHERE ${names} AND ((ts >= ${int(fromMs)} AND ts < ${int(innerFirst)}) OR (ts >= ${int(innerLast + w)} AND ts <= ${int(toMs)})) GROUP BY metric_name, t`;
  return (
    `SELECT metric_name, t, min(lo), max(hi), sum(total) / sum(n), sum(n) FROM (${whole} UNION ALL ${edges}) ` +
    'GROUP BY metric_name, t ORDER BY metric_name, t FORMAT TabSeparated'
  );
}

/** A Float64 as ClickHouse writes it in TabSeparated (inf and nan spelt its way). */
export function float(text: string): number {
  if (text === 'inf' || text === '+inf') return Number.POSITIVE_INFINITY;
  if (text === '-inf') return Number.NEGATIVE_INFINITY;
  if (text === 'nan' || text === '-nan') return Number.NaN;
  const n = Number(text);
  if (Number.isNaN(n)) throw new Error(`ClickHouse answered a non-number: ${text}`);
  return n;
}

/** TabSeparated escapes of a String field undone. */
export function unescape(text: string): string {
  return text.replace(
    /\\(.)/g,
    (_, c: string) => (({ t: '\t', n: '\n', r: '\r', '0': '\0', b: '\b', f: '\f', "'": "'", '\\': '\\' }) as Record<string, string>)[c] ?? c,
  );
}

/** The answer as columns per metric, every name asked for present (an empty series when it has no point in the range), in the order given. */
export function parseSeries(text: string, names: readonly string[]): SeriesColumns[] {
  const out = new Map<string, SeriesColumns>(names.map((n) => [n, { metric_name: n, t: [], min: [], max: [], avg: [], count: [] }]));
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    const fields = line.split('\t');
    if (fields.length !== 6) throw new Error(`ClickHouse answered a row of ${fields.length} fields`);
    const series = out.get(unescape(fields[0]!));
    if (!series) throw new Error('ClickHouse answered a metric that was not asked for');
    series.t.push(Number(fields[1]));
    series.min.push(float(fields[2]!));
    series.max.push(float(fields[3]!));
    series.avg.push(float(fields[4]!));
    series.count.push(Number(fields[5]));
  }
  return [...out.values()];
}

/** Runs the query (from a rollup where one fits); the answer is at most (series × buckets) rows, bounded by the caller. */
export async function readSeries(conn: ConnOptions, req: SeriesRequest): Promise<SeriesColumns[]> {
  if (req.metricNames.length === 0) return [];
  const text = await queryText(conn, {
    sql: seriesFromRollupSql(req.fromMs, req.toMs, req.stepMs) ?? seriesSql(req.fromMs, req.toMs, req.stepMs),
    tables: [{ name: 'names', structure: 'name String', rows: req.metricNames.map((n) => [n]) }],
    ...(req.queryId ? { queryId: req.queryId } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
  });
  return parseSeries(text, req.metricNames);
}
