import { queryText, type ConnOptions } from '../download/http.ts';
import { float, unescape } from '../series.ts';
import { afterTable, bucketRange, bucketsTable, dedupedBucketsSql, namesTable, rollupPageSql, type Resolution, type RollupCursor } from './sql.ts';

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

type Parsed = RollupRow & { readonly clean: boolean };

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
 * twice; the others (replaced points) are computed again from points, newest row per timestamp,
 * in a second query over those buckets only. Both answers are the aggregates of the
 * deduplicated points; sums may differ in the last bits from a sum in another order.
 */
export async function readRollupPage(conn: ConnOptions, req: RollupRequest): Promise<RollupPage> {
  if (req.metricNames.length === 0 || req.maxRows < 1) return { rows: [], next: null };
  const { first, last } = bucketRange(req.resolution, req.fromMs, req.toMs);
  const common = { ...(req.queryId ? { queryId: req.queryId } : {}), ...(req.signal ? { signal: req.signal } : {}) };
  const tables = [namesTable(req.metricNames), ...(req.after ? [afterTable(req.after)] : [])];
  const page = parseRollupRows(await queryText(conn, { sql: rollupPageSql(req.resolution, first, last, req.after, req.maxRows + 1), tables, ...common }));
  const more = page.length > req.maxRows;
  const rows = more ? page.slice(0, req.maxRows) : page;
  const dirty = rows.filter((r) => !r.clean);
  if (dirty.length > 0) {
    const buckets = dirty.map((d) => d.bucket);
    const sql = dedupedBucketsSql(req.resolution, Math.min(...buckets), Math.max(...buckets), req.source);
    const fixed = new Map(parseRollupRows(await queryText(conn, { sql, tables: [bucketsTable(dirty)], ...common })).map((r) => [key(r), r]));
    for (const [i, r] of rows.entries()) {
      if (r.clean) continue;
      // No raw point left in the bucket (retention removed them, the rollup outlives them): the
      // rollup's aggregates of every row it was given are all there is.
      rows[i] = fixed.get(key(r)) ?? r;
    }
  }
  const tail = rows[rows.length - 1];
  return { rows: rows.map(({ clean: _, ...r }) => r), next: more && tail ? { metric_name: tail.metric_name, bucket: tail.bucket } : null };
}
