import type { Labels, WindowStatsFunction } from '@meridian/domain';
import { float } from '../series.ts';
import { int } from '../download/filter-sql.ts';
import { queryText, type ConnOptions } from '../download/http.ts';
import { sampleRowsSql } from './samples.ts';
import { statsSelectSql, type WindowStatsRequest } from './window-stats.ts';

/**
 * sum, avg, min, max or count by (…) of a reduced range function, done by ClickHouse: each
 * window's reduction (window-stats.ts) becomes the function's value with Prometheus' formulas
 * written in SQL (the same operations in the same order as functions.ts, so the same floats),
 * then the values are aggregated per group and step. Each name's group travels with it in the
 * external table `names` (name, grp); one row per group and step comes back.
 */
export type AggregatedRequest = WindowStatsRequest & {
  readonly aggregate: { readonly op: 'sum' | 'avg' | 'min' | 'max' | 'count'; readonly func: WindowStatsFunction; readonly groupOf: readonly number[]; readonly labels: readonly Labels[] };
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
    case 'resets': return { value: 'toFloat64(resets)', when: '1' };
    case 'changes': return { value: 'toFloat64(changes)', when: '1' };
    case 'count_over_time': return { value: 'toFloat64(n)', when: '1' };
    case 'sum_over_time': return { value: 'total', when: '1' };
    case 'avg_over_time': return { value: '(total / n)', when: '1' };
    case 'min_over_time': return { value: 'lo', when: '1' };
    case 'max_over_time': return { value: 'hi', when: '1' };
    case 'last_over_time': return { value: 'v1', when: '1' };
    default: {
      const never: never = func;
      return never;
    }
  }
}

export function aggregatedSql(req: AggregatedRequest): string {
  const { firstRefMs, stepMs, rangeMs } = req.reduce;
  const we = `(${int(firstRefMs)} + k * ${int(stepMs)})`;
  const { value, when } = valueSql(req.aggregate.func, rangeMs, we);
  const agg = { sum: 'sum(value)', avg: 'avg(value)', min: 'min(value)', max: 'max(value)', count: 'toFloat64(count())' }[req.aggregate.op];
  // The names' groups as two constant arrays, as the download ranks names (transform needs a non-empty array: '' leads).
  const names = "arrayPushFront((SELECT groupArray(name) FROM names), '')";
  const groups = `arrayPushFront((SELECT groupArray(grp) FROM names), toUInt32(${SAMPLES_ROW}))`;
  const values = `SELECT transform(metric_name, ${names}, ${groups}, toUInt32(${SAMPLES_ROW})) AS grp, k, ${value} AS value FROM (${statsSelectSql(req)}) WHERE ${when}`;
  return (
    `SELECT grp, k, ${agg} FROM (${values}) GROUP BY grp, k ` +
    `UNION ALL SELECT toUInt32(${SAMPLES_ROW}), toInt64(-1), toFloat64(count()) FROM (${sampleRowsSql(req)}) FORMAT TabSeparated`
  );
}

/** Each group's value per step (to onRow), and the samples read, or 'too_many' past maxSamples. */
export async function readAggregated(conn: ConnOptions, req: AggregatedRequest, onRow: (group: number, k: number, value: number) => void): Promise<number | 'too_many'> {
  if (req.names.length === 0 || req.toMs < req.fromMs) return 0;
  const text = await queryText(conn, {
    sql: aggregatedSql(req),
    tables: [{ name: 'names', structure: 'name String, grp UInt32', rows: req.names.map((n, i) => [n, String(req.aggregate.groupOf[i]!)]) }],
    ...(req.queryId ? { queryId: req.queryId } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
  });
  let samples = 0;
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    const f = line.split('\t');
    if (f.length !== 3) throw new Error(`ClickHouse answered a row of ${f.length} fields`);
    const group = Number(f[0]);
    if (group === SAMPLES_ROW) samples = Number(f[2]);
    else onRow(group, Number(f[1]), float(f[2]!));
  }
  return samples > req.maxSamples ? 'too_many' : samples;
}
