import { queryText, type ConnOptions } from '../download/http.ts';
import { float, unescape } from '../series.ts';
import { checkedBucketsSql, sealedPageSql } from './sealed-sql.ts';
import { afterTable, bucketRange, bucketSpan, bucketsTable, dedupedBucketsSql, namesTable, type Resolution, type RollupCursor } from './sql.ts';

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

/** The tab-separated rows of an answer, each of exactly `width` fields. */
function tsvRows(text: string, width: number): string[][] {
  const rows: string[][] = [];
  for (const line of text.split('\n')) {
    if (line.length === 0) continue;
    const f = line.split('\t');
    if (f.length !== width) throw new Error(`ClickHouse answered a row of ${f.length} fields`);
    rows.push(f);
  }
  return rows;
}

/** A bucket's row from its name and bucket (fields 0 and 1) and its count, min, max, sum and last. */
function parsedRow(f: readonly string[], clean: boolean, [n, lo, hi, total, last]: readonly string[]): Parsed {
  const count = Number(n);
  const sum = float(total!);
  return { metric_name: unescape(f[0]!), bucket: Number(f[1]), clean, count, min: float(lo!), max: float(hi!), sum, avg: sum / count, last: float(last!) };
}

export function parseRollupRows(text: string): Parsed[] {
  return tsvRows(text, 8).map((f) => parsedRow(f, f[2] === '1', f.slice(3, 8)));
}

const key = (r: { metric_name: string; bucket: number }) => `${r.bucket}\u0000${r.metric_name}`;

type Common = { readonly queryId?: string; readonly signal?: AbortSignal };

/** The rows of sealedPageSql: a sealed bucket's row (`clean`: answered), the rollup's aggregates of every row elsewhere (not checked yet). */
export function parseSealedPage(text: string): Parsed[] {
  return tsvRows(text, 13).map((f) => {
    const sealed = f[2] === '1';
    // The sealed row's fields (8 to 12) where there is one, the rollup's (3 to 7) elsewhere.
    return parsedRow(f, sealed, sealed ? f.slice(8, 13) : f.slice(3, 8));
  });
}

/** The exactness check of some buckets: each one's aggregates of every row, its count, and whether no timestamp repeats in it. */
export async function checkBuckets(conn: ConnOptions, resolution: Resolution, buckets: readonly RollupCursor[], common: Common = {}): Promise<Parsed[]> {
  if (buckets.length === 0) return [];
  const sql = checkedBucketsSql(resolution, ...bucketSpan(buckets));
  return parseRollupRows(await queryText(conn, { sql, tables: [bucketsTable(buckets)], ...common }));
}

/**
 * Rows answered exactly: the clean ones as they are, the others computed again from `source`,
 * newest row per timestamp. A bucket with no raw point left (retention removed them, the rollup
 * outlives them) keeps the rollup's aggregates of every row it was given: all there is.
 */
async function exactRows(conn: ConnOptions, resolution: Resolution, rows: readonly Parsed[], source: string | undefined, common: Common): Promise<Parsed[]> {
  const dirty = rows.filter((r) => !r.clean);
  if (dirty.length === 0) return [...rows];
  const sql = dedupedBucketsSql(resolution, ...bucketSpan(dirty), source);
  const fixed = new Map(parseRollupRows(await queryText(conn, { sql, tables: [bucketsTable(dirty)], ...common })).map((r) => [key(r), r]));
  return rows.map((r) => (r.clean ? r : (fixed.get(key(r)) ?? r)));
}

/**
 * A page of rollup rows: a bucket sealed at its current count (migration 011, the seal pass) is
 * answered from its sealed row; the others go through the exactness check, and those where a
 * timestamp was uploaded twice are computed again from points, newest row per timestamp, in a
 * query over those buckets only. Every answer is the aggregates of the deduplicated points; sums
 * may differ in the last bits from a sum in another order.
 */
export async function readRollupPage(conn: ConnOptions, req: RollupRequest): Promise<RollupPage> {
  if (req.metricNames.length === 0 || req.maxRows < 1) return { rows: [], next: null };
  const { first, last } = bucketRange(req.resolution, req.fromMs, req.toMs);
  const common: Common = { ...(req.queryId ? { queryId: req.queryId } : {}), ...(req.signal ? { signal: req.signal } : {}) };
  const tables = [namesTable(req.metricNames), ...(req.after ? [afterTable(req.after)] : [])];
  const page = parseSealedPage(await queryText(conn, { sql: sealedPageSql(req.resolution, first, last, req.after, req.maxRows + 1), tables, ...common }));
  const more = page.length > req.maxRows;
  const rows: Parsed[] = more ? page.slice(0, req.maxRows) : page;
  const open = rows.filter((r) => !r.clean);
  if (open.length > 0) {
    const checked = new Map(
      (await exactRows(conn, req.resolution, await checkBuckets(conn, req.resolution, open, common), req.source, common)).map((r) => [key(r), r]),
    );
    // A bucket gone between the two queries (a deletion emptied it) keeps the page's aggregates.
    for (const [i, r] of rows.entries()) if (!r.clean) rows[i] = checked.get(key(r)) ?? r;
  }
  const tail = rows[rows.length - 1];
  return { rows: rows.map(({ clean: _, ...r }) => r), next: more && tail ? { metric_name: tail.metric_name, bucket: tail.bucket } : null };
}
