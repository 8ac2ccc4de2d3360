import { queryText, type ConnOptions } from '../download/http.ts';
import { float, unescape } from '../series.ts';
import {
  afterTable,
  bucketRange,
  bucketsTable,
  dedupedBucketsSql,
  exactBucketsSql,
  namesTable,
  rollupPageSql,
  type Resolution,
  type RollupCursor,
} from './sql.ts';

/** One bucket of one metric: the aggregates of its deduplicated points (avg = sum / count). */
export type RollupRow = {
  readonly metric_name: string;
  /** The bucket's start, epoch milliseconds (a multiple of the step). */
  readonly bucket: number;
  readonly count: number;
  readonly min: number;
  readonly max: number;
  readonly sum: number;
  readonly avg: number;
  /** The value at the bucket's greatest timestamp. */
  readonly last: number;
};

export type RollupRequest = {
  readonly resolution: Resolution;
  readonly metricNames: readonly string[];
  /** Inclusive; every bucket overlapping [fromMs, toMs] is read whole. */
  readonly fromMs: number;
  readonly toMs: number;
  readonly after: RollupCursor | null;
  /** Page size in buckets. */
  readonly maxRows: number;
  readonly queryId?: string;
  readonly signal?: AbortSignal;
  /** The deduplicated points a dirty bucket is computed from (a replay generation's table; `points` by default). */
  readonly source?: string;
};

/** A page, and where the next one starts (null: this was the last). */
export type RollupPage = { readonly rows: RollupRow[]; readonly next: RollupCursor | null };

/** A row and its third column: 1 or 0 for clean (a rollup's row), the rows stored (points'). */
type Parsed = RollupRow & { readonly clean: boolean; readonly third: number };

export function parseRollupRows(text: string): Parsed[] {
  const out: Parsed[] = [];
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    const f = line.split('\t');
    if (f.length !== 8) throw new Error(`ClickHouse answered a row of ${f.length} fields`);
    const count = Number(f[3]);
    const sum = float(f[6]!);
    out.push({
      metric_name: unescape(f[0]!),
      bucket: Number(f[1]),
      clean: f[2] === '1',
      third: Number(f[2]),
      count,
      min: float(f[4]!),
      max: float(f[5]!),
      sum,
      avg: sum / count,
      last: float(f[7]!),
    });
  }
  return out;
}

const key = (r: { metric_name: string; bucket: number }) => `${r.bucket}\u0000${r.metric_name}`;

/**
 * A page of rollup rows: the rollup table answers every bucket where no timestamp was uploaded
 * twice, which the spans tell for most buckets at once. The others are computed from points,
 * newest row per timestamp, in a second query over those buckets only: exact wherever points
 * still holds every row the rollup was given (then it is the deduplicated points' answer, clean
 * or not). Where retention took some (a rollup outlives the raw points), the rollup's distinct
 * timestamps decide, for those buckets only: a clean one is answered by its rollup, a dirty one
 * by the points that remain, or by its rollup where none remain. Both answers are the aggregates
 * of the deduplicated points; sums may differ in the last bits from a sum in another order.
 */
export async function readRollupPage(conn: ConnOptions, req: RollupRequest): Promise<RollupPage> {
  if (req.metricNames.length === 0 || req.maxRows < 1) return { rows: [], next: null };
  const { first, last } = bucketRange(req.resolution, req.fromMs, req.toMs);
  const common = { ...(req.queryId ? { queryId: req.queryId } : {}), ...(req.signal ? { signal: req.signal } : {}) };
  const tables = [namesTable(req.metricNames), ...(req.after ? [afterTable(req.after)] : [])];
  const page = parseRollupRows(await queryText(conn, { sql: rollupPageSql(req.resolution, first, last, req.after, req.maxRows + 1), tables, ...common }));
  const more = page.length > req.maxRows;
  const rows = more ? page.slice(0, req.maxRows) : page;
  const ask = async (buckets: readonly Parsed[], sql: (first: number, last: number) => string) => {
    const at = buckets.map((d) => d.bucket);
    const text = await queryText(conn, { sql: sql(Math.min(...at), Math.max(...at)), tables: [bucketsTable(buckets)], ...common });
    return new Map(parseRollupRows(text).map((r) => [key(r), r]));
  };
  const unsure = rows.filter((r) => !r.clean);
  if (unsure.length > 0) {
    const fromPoints = await ask(unsure, (lo, hi) => dedupedBucketsSql(req.resolution, lo, hi, req.source));
    const whole = (r: Parsed) => fromPoints.get(key(r))?.third === r.count;
    const cut = unsure.filter((r) => !whole(r));
    const exact = cut.length > 0 ? await ask(cut, (lo, hi) => exactBucketsSql(req.resolution, lo, hi)) : new Map<string, Parsed>();
    for (const [i, r] of rows.entries()) {
      if (r.clean) continue;
      if (whole(r) || exact.get(key(r))?.clean !== true) rows[i] = fromPoints.get(key(r)) ?? r;
    }
  }
  const tail = rows[rows.length - 1];
  return { rows: rows.map(({ clean: _, third: __, ...r }) => r), next: more && tail ? { metric_name: tail.metric_name, bucket: tail.bucket } : null };
}
