import { float, unescape } from '../series.ts';
import { int } from '../download/filter-sql.ts';
import { queryText, startQuery, type ConnOptions, type QueryRequest } from '../download/http.ts';

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

export function samplesSql(req: Pick<SamplesRequest, 'fromMs' | 'toMs' | 'sparse'>): string {
  return `SELECT metric_name, t, v FROM (${seriesArraysSql(req)}) FORMAT TabSeparated`;
}

/** The conditions on a row of points for the request's window (and sparse steps), numbers only. */
export function windowConditions(req: Pick<SamplesRequest, 'fromMs' | 'toMs' | 'sparse'>): string {
  const conditions = ['metric_name IN (SELECT name FROM names)', `ts >= ${int(req.fromMs)}`, `ts <= ${int(req.toMs)}`];
  if (req.sparse) {
    const { firstRefMs, stepMs, widthMs } = req.sparse;
    // How far the sample is before the first step at or after it: % keeps the dividend's sign, so it is shifted up by one step.
    conditions.push(`((${int(firstRefMs)} - ts) % ${int(stepMs)} + ${int(stepMs)}) % ${int(stepMs)} <= ${int(widthMs)}`);
  }
  return conditions.join(' AND ');
}

/**
 * The samples as one row per series: metric_name, t (timestamps, ascending), v (the values),
 * len (their count). Where a timestamp was uploaded more than once, only the newest row is kept
 * (updated_at, then Kafka partition, offset and row in batch, as a download with latest_only).
 *
 * The deduplication is done in each series' arrays, not by sorting the rows: an ORDER BY over
 * every row compares the long metric names and took most of a query's time (19 s of 10 million
 * rows against 1.6 s for the arrays, in bench-query). The timestamps are sorted as numbers; only
 * a series with a repeated timestamp (arrayDifference finds a 0) sorts by the whole version
 * tuple and keeps each timestamp's first (newest) row; the others pass empty arrays to that
 * path (18.16's if() computes both branches).
 */
export function seriesArraysSql(req: Pick<SamplesRequest, 'fromMs' | 'toMs' | 'sparse'>): string {
  const only = (column: string, empty: string) => `if(dup, ${column}, ${empty}())`;
  const version =
    'arrayMap((a, b, c, d, e) -> (a, -b, -toInt64(c), -toInt64(d), -toInt64(e)), ' +
    `${only('at', 'emptyArrayInt64')}, ${only('groupArray(updated_at)', 'emptyArrayInt64')}, ${only('groupArray(kafka_partition)', 'emptyArrayUInt16')}, ` +
    `${only('groupArray(kafka_offset)', 'emptyArrayUInt64')}, ${only('groupArray(row_in_batch)', 'emptyArrayUInt32')})`;
  return (
    'SELECT metric_name, groupArray(ts) AS at, groupArray(value) AS av, arraySort(at) AS st, has(arrayPopFront(arrayDifference(st)), 0) AS dup, ' +
    `${version} AS vk, arraySort(vk) AS sk, arrayEnumerateUniq(arrayMap(x -> x.1, sk)) AS firsts, ` +
    'if(dup, arrayFilter((x, f) -> f = 1, arrayMap(x -> x.1, sk), firsts), st) AS t, ' +
    `if(dup, arrayFilter((x, f) -> f = 1, arraySort((x, y) -> y, ${only('av', 'emptyArrayFloat64')}, vk), firsts), arraySort((x, y) -> y, av, at)) AS v, ` +
    `length(t) AS len FROM points WHERE ${windowConditions(req)} GROUP BY metric_name`
  );
}

/** A ClickHouse array of numbers in TabSeparated ([1,2,3]). */
export function arrayOf(text: string, read: (item: string) => number): number[] {
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
    let ts = arrayOf(fields[1]!, Number);
    let vs = arrayOf(fields[2]!, float);
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

/** Most bytes one sample takes in the answer: a 13-digit timestamp, a float of at most 24 characters, two commas. */
const MAX_SAMPLE_BYTES = 48;

/**
 * A query's answer as text, or null once it passes maxBytes (the query is then stopped):
 * the samples are no longer cut by a LIMIT on rows, so their bound is kept on the answer.
 */
export async function boundedText(conn: ConnOptions, q: QueryRequest, maxBytes: number): Promise<string | null> {
  const started = startQuery(conn, q);
  const res = await started.response;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      started.abort();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The bytes an answer of at most maxSamples samples of these names can take (each name escaped, at most twice as long). */
export function answerBound(names: readonly string[], maxSamples: number, perRow: number): number {
  return names.reduce((n, name) => n + 2 * Buffer.byteLength(name) + perRow, 0) + (maxSamples + 1) * MAX_SAMPLE_BYTES;
}

/** The samples, or 'too_many' when there are more than maxSamples. */
export async function readSamples(conn: ConnOptions, req: SamplesRequest): Promise<SeriesSamples[] | 'too_many'> {
  if (req.names.length === 0 || req.toMs < req.fromMs) return [];
  const text = await boundedText(
    conn,
    {
      sql: samplesSql(req),
      tables: [{ name: 'names', structure: 'name String', rows: req.names.map((n) => [n]) }],
      ...(req.queryId ? { queryId: req.queryId } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
    },
    answerBound(req.names, req.maxSamples, 16),
  );
  if (text === null) return 'too_many';
  const series = parseSamples(text);
  const total = series.reduce((n, s) => n + s.ts.length, 0);
  return total > req.maxSamples ? 'too_many' : series;
}

/**
 * Runs a reduction with the request's names as the external table `names` (structure and rows
 * given): the answer's TabSeparated rows, each checked to hold `fields` fields.
 */
export async function namesQueryRows(
  conn: ConnOptions,
  req: Pick<SamplesRequest, 'queryId' | 'signal'>,
  sql: string,
  names: { readonly structure: string; readonly rows: readonly (readonly string[])[] },
  fields: number,
): Promise<string[][]> {
  const text = await queryText(conn, {
    sql,
    tables: [{ name: 'names', structure: names.structure, rows: names.rows }],
    ...(req.queryId ? { queryId: req.queryId } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
  });
  const rows: string[][] = [];
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    const f = line.split('\t');
    if (f.length !== fields) throw new Error(`ClickHouse answered a row of ${f.length} fields`);
    rows.push(f);
  }
  return rows;
}
