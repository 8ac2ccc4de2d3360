import type { ConnOptions } from '../download/http.ts';
import { readRollupPage, type RollupRow } from './read.ts';
import { ROLLUPS, type Resolution, type RollupCursor } from './sql.ts';

export type SeriesBucketsRequest = {
  readonly resolution: Resolution;
  readonly names: readonly string[];
  /** Every bucket overlapping [fromMs, toMs] is read. */
  readonly fromMs: number;
  readonly toMs: number;
  /** Most buckets read; one more makes the answer 'too_many'. */
  readonly maxBuckets: number;
  readonly queryId?: string;
  readonly signal?: AbortSignal;
};

/** Buckets a page asks for: small enough to hold, large enough that a month of hours of 1,000 series is a few pages. */
const PAGE_ROWS = 100_000;

/** The resolution whose buckets are this wide. */
export function resolutionOf(bucketMs: number): Resolution {
  const found = (Object.keys(ROLLUPS) as Resolution[]).find((r) => ROLLUPS[r].stepMs === bucketMs);
  if (!found) throw new Error(`no rollup has buckets of ${bucketMs} ms`);
  return found;
}

/**
 * Each series' rollup buckets over a time span, in bucket order, read page after page: the
 * aggregates of its deduplicated points per bucket (readRollupPage). Stops past maxBuckets.
 */
export async function readSeriesBuckets(conn: ConnOptions, req: SeriesBucketsRequest): Promise<Map<string, RollupRow[]> | 'too_many'> {
  const out = new Map<string, RollupRow[]>();
  if (req.names.length === 0 || req.toMs < req.fromMs) return out;
  let after: RollupCursor | null = null;
  let read = 0;
  for (let page = 0; ; page++) {
    const maxRows = Math.min(PAGE_ROWS, req.maxBuckets - read + 1);
    const { rows, next } = await readRollupPage(conn, {
      resolution: req.resolution,
      metricNames: req.names,
      fromMs: req.fromMs,
      toMs: req.toMs,
      after,
      maxRows,
      ...(req.queryId ? { queryId: `${req.queryId}-rollup-${page}` } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
    });
    read += rows.length;
    if (read > req.maxBuckets) return 'too_many';
    for (const row of rows) {
      let list = out.get(row.metric_name);
      if (!list) out.set(row.metric_name, (list = []));
      list.push(row);
    }
    if (!next) return out;
    after = next;
  }
}
