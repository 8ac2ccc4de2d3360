import { int } from '../download/filter-sql.ts';
import { startQuery, type ConnOptions } from '../download/http.ts';
import { forEachBinaryRow, ownArrays, type ArrayType, type BinaryRow } from './row-binary.ts';
import { mergeScratch, newestPerTimestamp, timeSorted } from './time-order.ts';

/**
 * The samples of a PromQL selector: the points of some series between two times, one per
 * (series, timestamp): where a timestamp was uploaded more than once, the newest row, as a
 * download with latest_only keeps it. The names travel as the external table `names`, never
 * in the SQL; the numbers are checked safe integers. ClickHouse does the selection and the time
 * window (with the sparse steps of a range query) and hands back one row per series: its place
 * in `names`, its timestamps and values as arrays, in RowBinary; the api puts them in time order
 * and hands each series over as it arrives.
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

/**
 * A series' samples as streamSamples hands them over: the first n of ts and vs, which are arrays
 * reused from series to series (row-binary.ts says why): valid until the callback returns, so a
 * caller that keeps them copies them (readSamples does).
 */
export type SeriesView = { readonly name: string; readonly ts: readonly number[]; readonly vs: readonly number[]; readonly n: number };

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

/** The request's names, in the order of the external table: a series is its 0-based place there. */
const SERIES_ID = 'toUInt32(indexOf((SELECT groupArray(name) FROM names), metric_name) - 1)';

/** The columns after the series' place: timestamps and values; with the versions of the rows when asked. */
const SAMPLE_ARRAYS: readonly ArrayType[] = ['Int64', 'Float64'];
const VERSIONED_ARRAYS: readonly ArrayType[] = [...SAMPLE_ARRAYS, 'Int64', 'UInt16', 'UInt64', 'UInt32'];

/**
 * One row per series in the window, in RowBinary. groupArray, not a sort: the rows arrive in the
 * order the parts are read, and the api merges those runs (time-order.ts). The versions of the
 * rows (updated_at, partition, offset, row in batch) are read only for the series where a
 * timestamp repeats, in a second query: every query reading them for every row cost a third
 * more of ClickHouse's time.
 */
export function samplesSql(req: Pick<SamplesRequest, 'fromMs' | 'toMs' | 'sparse'>, versions: boolean): string {
  const extra = versions ? ', groupArray(updated_at), groupArray(kafka_partition), groupArray(kafka_offset), groupArray(row_in_batch)' : '';
  return `SELECT ${SERIES_ID}, groupArray(ts), groupArray(value)${extra} FROM points WHERE ${windowConditions(req)} GROUP BY metric_name FORMAT RowBinary`;
}

/** Reads the names' rows; each to onRow with its arrays; stops at more than `budget` samples ('too_many'). */
async function readRows(
  conn: ConnOptions,
  req: SamplesRequest,
  names: readonly string[],
  versions: boolean,
  budget: number,
  onRow: (name: string, row: BinaryRow) => void,
): Promise<number | 'too_many'> {
  const started = startQuery(conn, {
    sql: samplesSql(req, versions),
    tables: [{ name: 'names', structure: 'name String', rows: names.map((n) => [n]) }],
    // A query's fixed cost: a connection set up per read was a round trip and a server thread's start before every answer.
    reuseConnection: true,
    ...(req.queryId ? { queryId: `${req.queryId}${versions ? '-versions' : ''}` } : {}),
    ...(req.signal ? { signal: req.signal } : {}),
  });
  const res = await started.response;
  let read = 0;
  let over = false;
  try {
    await forEachBinaryRow(res as AsyncIterable<Buffer>, versions ? VERSIONED_ARRAYS : SAMPLE_ARRAYS, (row) => {
      const name = names[row.id];
      if (name === undefined) throw new Error(`ClickHouse answered series ${row.id} of ${names.length}`);
      read += row.length;
      if (read > budget) {
        over = true;
        throw new Error('too many samples');
      }
      onRow(name, row);
    });
  } catch (error) {
    started.abort();
    if (over) return 'too_many';
    throw error;
  }
  return read;
}

/**
 * Each series' samples, in time order and one per timestamp, to onSeries as they arrive (a series
 * with a repeated timestamp after the others, once its versions are read); answers the samples
 * read, or 'too_many' once they pass maxSamples (the query is then stopped). What onSeries gets
 * is valid only until it returns (SeriesView).
 */
export async function streamSamples(conn: ConnOptions, req: SamplesRequest, onSeries: (s: SeriesView) => void): Promise<number | 'too_many'> {
  if (req.names.length === 0 || req.toMs < req.fromMs) return 0;
  const repeated: string[] = [];
  const spare = mergeScratch();
  const read = await readRows(conn, req, req.names, false, req.maxSamples, (name, row) => {
    const sorted = timeSorted(row.arrays[0]!, row.arrays[1]!, row.length, spare);
    if (sorted.repeats) repeated.push(name);
    else onSeries({ name, ts: sorted.ts, vs: sorted.vs, n: sorted.n });
  });
  if (read === 'too_many' || repeated.length === 0) return read;
  const again = await readRows(conn, req, repeated, true, Number.POSITIVE_INFINITY, (name, row) => {
    const [ts, vs, ...versions] = ownArrays(row);
    const newest = newestPerTimestamp(ts!, vs!, versions);
    onSeries({ name, ...newest, n: newest.ts.length });
  });
  return again === 'too_many' ? again : read;
}

/** The samples, each series' its own arrays, or 'too_many' when there are more than maxSamples. */
export async function readSamples(conn: ConnOptions, req: SamplesRequest): Promise<SeriesSamples[] | 'too_many'> {
  const out: SeriesSamples[] = [];
  const read = await streamSamples(conn, req, (s) => out.push({ name: s.name, ts: s.ts.slice(0, s.n), vs: s.vs.slice(0, s.n) }));
  return read === 'too_many' ? read : out;
}
