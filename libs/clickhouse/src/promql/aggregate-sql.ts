import type { Labels, WindowStatsFunction } from '@meridian/domain';
import { float, unescape } from '../series.ts';
import { int } from '../download/filter-sql.ts';
import type { ConnOptions } from '../download/http.ts';
import { arrayOf, namesQueryRows, windowConditions } from './samples.ts';
import { NAMES, statsSelectSql, type WindowStatsRequest } from './window-stats.ts';

/**
 * sum, avg, min, max or count by (…) of a reduced range function, done by ClickHouse: each
 * window's reduction (window-stats.ts) becomes the function's value with Prometheus' formulas
 * written in SQL (the same operations in the same order as functions.ts, so the same floats),
 * then the values are aggregated per group and step. Each name's group travels with it in the
 * external table `names` (name, grp); one row per group and step comes back.
 */
export type AggregatedRequest = WindowStatsRequest & {
  readonly aggregate: {
    readonly op: 'sum' | 'avg' | 'min' | 'max' | 'count';
    readonly func: WindowStatsFunction;
    readonly groupOf: readonly number[];
    readonly labels: readonly Labels[];
  };
};

/** The grp of the row that carries the count of samples read, not a group's value. */
const SAMPLES_ROW = 4294967295;

/** The function's value from the reduction's columns, and the condition for a value at all (Prometheus' minimum samples). */
function valueSql(func: WindowStatsFunction, rangeMs: number, we: string): { value: string; when: string } {
  const ws = `(${we} - ${int(rangeMs)})`;
  switch (func) {
    case 'rate':
    case 'increase':
    case 'delta': {
      const counter = func !== 'delta';
      const sampled = '((t1 - t0) / 1000)';
      const average = `(${sampled} / (n - 1))`;
      const result0 = counter ? '(v1 - v0 + drops)' : '(v1 - v0 + 0)';
      const toStart0 = `((t0 - ${ws}) / 1000)`;
      const toEnd = `((${we} - t1) / 1000)`;
      const toZero = `(${sampled} * (v0 / ${result0}))`;
      const toStart = counter ? `if(${result0} > 0 AND v0 >= 0 AND ${toZero} < ${toStart0}, ${toZero}, ${toStart0})` : toStart0;
      const threshold = `(${average} * 1.1)`;
      const interval = `(${sampled} + if(${toStart} < ${threshold}, ${toStart}, ${average} / 2) + if(${toEnd} < ${threshold}, ${toEnd}, ${average} / 2))`;
      // The range in seconds as the shortest text of that float, which ClickHouse reads back as the same float.
      const seconds = String(Number(int(rangeMs)) / 1000);
      // Prometheus 2.42 divides the factor by the range, then multiplies: the same order here.
      const factor = func === 'rate' ? `((${interval} / ${sampled}) / ${seconds})` : `(${interval} / ${sampled})`;
      return { value: `(${result0} * ${factor})`, when: 'n >= 2' };
    }
    case 'irate':
      return { value: '(if(v1 < vp1, v1, v1 - vp1) / ((t1 - tp1) / 1000))', when: 'n >= 2 AND t1 != tp1' };
    case 'resets':
      return { value: 'toFloat64(resets)', when: '1' };
    case 'changes':
      return { value: 'toFloat64(changes)', when: '1' };
    case 'count_over_time':
      return { value: 'toFloat64(n)', when: '1' };
    case 'sum_over_time':
      return { value: 'total', when: '1' };
    case 'avg_over_time':
      return { value: '(total / n)', when: '1' };
    case 'min_over_time':
      return { value: 'lo', when: '1' };
    case 'max_over_time':
      return { value: 'hi', when: '1' };
    case 'last_over_time':
      return { value: 'v1', when: '1' };
    default: {
      const never: never = func;
      return never;
    }
  }
}

/** The function's value of each series (sid) and step where it has one: rows sid, k, value, len. */
function valuesSql(req: WindowStatsRequest, func: WindowStatsFunction): string {
  const { firstRefMs, stepMs, rangeMs } = req.reduce;
  const we = `(${int(firstRefMs)} + k * ${int(stepMs)})`;
  const { value, when } = valueSql(func, rangeMs, we);
  return `SELECT sid, k, ${value} AS value, len FROM (${statsSelectSql(req, func)}) WHERE ${when}`;
}

export function aggregatedSql(req: AggregatedRequest): string {
  const agg = { sum: 'sum(value)', avg: 'avg(value)', min: 'min(value)', max: 'max(value)', count: 'toFloat64(count())' }[req.aggregate.op];
  // Each series' group, by its place in the external table.
  const groups = '(SELECT groupArray(grp) FROM names)';
  return (
    `SELECT ${groups}[sid] AS grp, k, ${agg} FROM (${valuesSql(req, req.aggregate.func)}) GROUP BY grp, k ` +
    // The samples read, for MERIDIAN_PROMQL_MAX_SAMPLES: the rows in the window, a timestamp uploaded twice counted twice.
    `UNION ALL SELECT toUInt32(${SAMPLES_ROW}), toInt64(-1), toFloat64(count()) FROM points WHERE ${windowConditions(req)} FORMAT TabSeparated`
  );
}

/**
 * A reduced range function's values computed by ClickHouse (valueSql, the formulas of
 * functions.ts), one row per series: its name, its sample count, and the steps and values where
 * it has one as two arrays. Far smaller than the reduction's sixteen columns per step.
 */
export type ValuesRequest = WindowStatsRequest & { readonly func: WindowStatsFunction };

export function windowValuesSql(req: ValuesRequest): string {
  return `SELECT ${NAMES}[sid], any(len), groupArray(k), groupArray(value) FROM (${valuesSql(req, req.func)}) GROUP BY sid FORMAT TabSeparated`;
}

/** Each series' values (to onSeries: its name, steps and values), and the samples read, or 'too_many' past maxSamples. */
export async function readWindowValues(
  conn: ConnOptions,
  req: ValuesRequest,
  onSeries: (name: string, ks: readonly number[], values: readonly number[]) => void,
): Promise<number | 'too_many'> {
  if (req.names.length === 0 || req.toMs < req.fromMs) return 0;
  const rows = await namesQueryRows(conn, req, windowValuesSql(req), { structure: 'name String', rows: req.names.map((n) => [n]) }, 4);
  let samples = 0;
  for (const f of rows) {
    samples += Number(f[1]);
    const ks = arrayOf(f[2]!, Number);
    const values = arrayOf(f[3]!, float);
    if (ks.length !== values.length) throw new Error('ClickHouse answered arrays of different lengths');
    onSeries(unescape(f[0]!), ks, values);
  }
  return samples > req.maxSamples ? 'too_many' : samples;
}

/** Each group's value per step (to onRow), and the samples read, or 'too_many' past maxSamples. */
export async function readAggregated(
  conn: ConnOptions,
  req: AggregatedRequest,
  onRow: (group: number, k: number, value: number) => void,
): Promise<number | 'too_many'> {
  if (req.names.length === 0 || req.toMs < req.fromMs) return 0;
  const rows = await namesQueryRows(
    conn,
    req,
    aggregatedSql(req),
    { structure: 'name String, grp UInt32', rows: req.names.map((n, i) => [n, String(req.aggregate.groupOf[i]!)]) },
    3,
  );
  let samples = 0;
  for (const f of rows) {
    const group = Number(f[0]);
    if (group === SAMPLES_ROW) samples = Number(f[2]);
    else onRow(group, Number(f[1]), float(f[2]!));
  }
  return samples > req.maxSamples ? 'too_many' : samples;
}
