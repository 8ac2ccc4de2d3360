import { float, unescape } from '../series.ts';
import { int } from '../download/filter-sql.ts';
import { queryText, type ConnOptions } from '../download/http.ts';

/**
 * The samples of a PromQL selector: the points of some series between two times, one per
 * (series, timestamp): where a timestamp was uploaded more than once, the newest row, as a
 * download with latest_only keeps it. The names travel as the external table `names`, never
 * in the SQL; the numbers are checked safe integers. ClickHouse does the selection, the time
 * window (with the sparse steps of a range query) and the deduplication, and hands back one
 * row per series with its timestamps and values as arrays.
 */
export type SamplesRequest = {
  readonly names: readonly string[];
  readonly fromMs: number;
  readonly toMs: number;
  /** Keep a sample only when it is within widthMs before one of the steps firstRefMs + k·stepMs. */
  readonly sparse: { readonly firstRefMs: number; readonly stepMs: number; readonly widthMs: number } | null;
  /** Most samples read; one more makes the answer 'too_many'. */
  readonly maxSamples: number;
  readonly queryId?: string;
  readonly signal?: AbortSignal;
};

export type SeriesSamples = { readonly name: string; readonly ts: number[]; readonly vs: number[] };

export function samplesSql(req: Pick<SamplesRequest, 'fromMs' | 'toMs' | 'sparse' | 'maxSamples'>): string {
  return `SELECT metric_name, groupArray(ts), groupArray(value) FROM (${sampleRowsSql(req)}) GROUP BY metric_name FORMAT TabSeparated`;
}

/** The samples as rows (metric_name, ts, value), one per (series, timestamp), at most maxSamples + 1. */
export function sampleRowsSql(req: Pick<SamplesRequest, 'fromMs' | 'toMs' | 'sparse' | 'maxSamples'>): string {
  const conditions = ['metric_name IN (SELECT name FROM names)', `ts >= ${int(req.fromMs)}`, `ts <= ${int(req.toMs)}`];
  if (req.sparse) {
    const { firstRefMs, stepMs, widthMs } = req.sparse;
    // How far the sample is before the first step at or after it: % keeps the dividend's sign, so it is shifted up by one step.
    conditions.push(`((${int(firstRefMs)} - ts) % ${int(stepMs)} + ${int(stepMs)}) % ${int(stepMs)} <= ${int(widthMs)}`);
  }
  return (
    `SELECT metric_name, ts, value FROM points WHERE ${conditions.join(' AND ')} ` +
    'ORDER BY metric_name, ts, updated_at DESC, kafka_partition DESC, kafka_offset DESC, row_in_batch DESC ' +
    `LIMIT 1 BY metric_name, ts LIMIT ${int(req.maxSamples + 1)}`
  );
}

function parseArray(text: string, read: (item: string) => number): number[] {
  if (text.length < 2 || text[0] !== '[' || text[text.length - 1] !== ']') throw new Error('ClickHouse answered a malformed array');
  const body = text.slice(1, -1);
  return body === '' ? [] : body.split(',').map(read);
}

/** The rows, each series' samples in time order (groupArray keeps no order of its own). */
export function parseSamples(text: string): SeriesSamples[] {
  const out: SeriesSamples[] = [];
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    const fields = line.split('\t');
    if (fields.length !== 3) throw new Error(`ClickHouse answered a row of ${fields.length} fields`);
    let ts = parseArray(fields[1]!, Number);
    let vs = parseArray(fields[2]!, float);
    if (ts.length !== vs.length) throw new Error('ClickHouse answered arrays of different lengths');
    if (ts.some((t, i) => i > 0 && t < ts[i - 1]!)) {
      const order = ts.map((_, i) => i).sort((a, b) => ts[a]! - ts[b]!);
      ts = order.map((i) => ts[i]!);
      vs = order.map((i) => vs[i]!);
    }
    out.push({ name: unescape(fields[0]!), ts, vs });
  }
  return out;
}

/** The samples, or 'too_many' when there are more than maxSamples. */
export async function readSamples(conn: ConnOptions, req: SamplesRequest): Promise<SeriesSamples[] | 'too_many'> {
  if (req.names.length === 0 || req.toMs < req.fromMs) return [];
  const text = await queryText(conn, {
    sql: samplesSql(req),
    tables: [{ name: 'names', structure: 'name String', rows: req.names.map((n) => [n]) }],
    ...(req.queryId ? { queryId: req.queryId } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
  });
  const series = parseSamples(text);
  const total = series.reduce((n, s) => n + s.ts.length, 0);
  return total > req.maxSamples ? 'too_many' : series;
}
